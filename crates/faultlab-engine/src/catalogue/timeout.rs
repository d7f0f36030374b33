//! `timeout`: the reply never comes.
//!
//! **What it does on the wire.** The reply is held forever: nothing is written for the request, and the
//! connection stays open, so the client waits until its own deadline. (In the proxy with `mode: after` the server
//! has executed the request; only the answer is lost.)
//!
//! **What a robust client should do.** Give up at its deadline, cancel the request, and not retry a
//! non-idempotent call blindly: it may have executed.
//!
//! **Example.** `{"type": "timeout"}`
//!
//! **How it is graded.** The call's outcome is a timeout; side effects of a retry are checked (at most once).

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, Reply, WireAction};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The reply is never sent: the request stays open until the client gives up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeout {}

impl Fault for Timeout {
    const EXAMPLES: &[&str] = &[r#"{"type": "timeout"}"#];
    const CATEGORY: Category = Category::Transport;
    const EFFECT: Effect = Effect::Timeout;
    const SERVE_TOOL: Option<ServeTool> = None;

    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply))
    }
}

fn apply(_reply: Reply<'_>) -> Vec<WireAction> {
    Vec::new()
}
