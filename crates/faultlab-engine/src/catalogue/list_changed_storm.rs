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

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, MAX_STORM_COUNT, Reply, WireAction, within};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use bytes::Bytes;

/// `count` `notifications/tools/list_changed` before the reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListChangedStorm {
    pub count: u32,
}

impl Fault for ListChangedStorm {
    const EXAMPLES: &[&str] = &[r#"{"type": "list_changed_storm", "count": 20}"#];
    const CATEGORY: Category = Category::Systemic;
    const EFFECT: Effect = Effect::Result;
    const SERVE_TOOL: Option<ServeTool> = Some(ServeTool::everywhere("list_changed_storm"));

    fn validate(&self) -> Result<(), String> {
        within("count", self.count, 1, MAX_STORM_COUNT)
    }
    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply, self.count))
    }
}

const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

fn apply(reply: Reply<'_>, count: u32) -> Vec<WireAction> {
    let note = Bytes::from_static(LIST_CHANGED.as_bytes());
    let mut actions: Vec<_> = (0..count).map(|_| WireAction::Send(note.clone())).collect();
    actions.push(WireAction::Send(reply.frame.bytes().clone()));
    actions
}
