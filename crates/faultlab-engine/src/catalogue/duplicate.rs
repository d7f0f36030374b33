//! `duplicate`: the same reply, sent twice.
//!
//! **What it does on the wire.** Two identical frames with the same id, back to back (stdio: two lines; HTTP: a
//! JSON body becomes an SSE stream of two `message` events, an SSE event is emitted twice).
//!
//! **What a robust client should do.** Complete the request with the first reply and ignore the second (ideally
//! logging it), without failing the connection or resolving some other request with it.
//!
//! **Example.** `{"type": "duplicate"}`
//!
//! **How it is graded.** The call succeeds once; an observer sees two responses with the same id.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, Reply, WireAction};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The same reply, twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Duplicate {}

impl Fault for Duplicate {
    const EXAMPLES: &[&str] = &[r#"{"type": "duplicate"}"#];
    const CATEGORY: Category = Category::Temporal;
    const EFFECT: Effect = Effect::Result;
    const SERVE_TOOL: Option<ServeTool> = Some(ServeTool::everywhere("duplicate_response"));

    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply))
    }
}

fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    let bytes = reply.frame.bytes().clone();
    vec![WireAction::Send(bytes.clone()), WireAction::Send(bytes)]
}
