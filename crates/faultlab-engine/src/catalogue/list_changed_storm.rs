//! `list_changed_storm`: a flood of `notifications/tools/list_changed` before the reply.
//!
//! **What it does on the wire.** `count` identical `notifications/tools/list_changed` frames, then the reply; with
//! `list: resources` or `list: prompts`, `notifications/resources/list_changed` or
//! `notifications/prompts/list_changed` instead (`count: 1` announces a `list_drift` of that list).
//!
//! **What a robust client should do.** Coalesce them (re-list at most once or a few times, not `count` times) and
//! still complete the request.
//!
//! **Example.** `{"type": "list_changed_storm", "count": 500}`
//!
//! **How it is graded.** The call succeeds; the number of `tools/list` requests the client sends in response stays
//! small.

use super::list_drift::{ListName, list_schema};
use super::{MAX_STORM_COUNT, WireAction, within};
use bytes::Bytes;

fault! {
    /// `count` `notifications/tools/list_changed` (or the resources or prompts one) before the reply.
    pub struct ListChangedStorm {
        pub count: u32,
        /// The list announced: `tools` (default), `resources` or `prompts`.
        #[serde(default, skip_serializing_if = "ListName::is_tools")]
        #[schemars(schema_with = "list_schema")]
        pub list: ListName,
    }
    category: Systemic,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("list_changed_storm")),
    examples: [
        r#"{"type": "list_changed_storm", "count": 20}"#,
        r#"{"type": "list_changed_storm", "count": 1, "list": "prompts"}"#,
    ],
    validate: |fault| within("count", fault.count, 1, MAX_STORM_COUNT),
    apply: |fault, reply, _| {
        let note = serde_json::json!({"jsonrpc": "2.0", "method": fault.list.notification()});
        let note = WireAction::Send(Bytes::from(note.to_string()));
        let mut actions = vec![note; fault.count as usize];
        actions.push(WireAction::Send(reply.frame.bytes().clone()));
        actions
    },
}

