//! `list_changed_storm`: a flood of `notifications/tools/list_changed` before the reply.
//!
//! **What it does on the wire.** `count` identical `notifications/tools/list_changed` frames, then the reply.
//!
//! **What a robust client should do.** Coalesce them (re-list tools at most once or a few times, not `count`
//! times) and still complete the request.
//!
//! **Example.** `{"type": "list_changed_storm", "count": 500}`
//!
//! **How it is graded.** The call succeeds; the number of `tools/list` requests the client sends in response stays
//! small.

use super::{MAX_STORM_COUNT, WireAction, within};
use bytes::Bytes;

fault! {
    /// `count` `notifications/tools/list_changed` before the reply.
    pub struct ListChangedStorm { pub count: u32 }
    facts: Systemic, Result, Some(ServeTool::everywhere("list_changed_storm")), [
        r#"{"type": "list_changed_storm", "count": 20}"#,
    ];
    validate: |fault| within("count", fault.count, 1, MAX_STORM_COUNT);
    apply: |fault, reply, _| {
        let note = WireAction::Send(Bytes::from_static(LIST_CHANGED.as_bytes()));
        let mut actions = vec![note; fault.count as usize];
        actions.push(WireAction::Send(reply.frame.bytes().clone()));
        actions
    };
}

const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
