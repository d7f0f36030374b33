//! `missing_id`: the reply carries no id.
//!
//! **What it does on the wire.** The `id` member is removed from the reply; everything else is kept. A result
//! without an id is invalid JSON-RPC; an error without an id is what a peer sends when it could not read the id.
//!
//! **What a robust client should do.** Not match it to any request; the request times out at the client's
//! deadline. An id-less *error* may be surfaced as a connection-level problem.
//!
//! **Example.** `{"type": "missing_id"}`
//!
//! **How it is graded.** The call times out or errors, never succeeds; the connection stays usable.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, Reply, WireAction, rewrite};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The reply carries no id at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MissingId {}

impl Fault for MissingId {
    const EXAMPLES: &[&str] = &[r#"{"type": "missing_id"}"#];
    const CATEGORY: Category = Category::Protocol;
    const EFFECT: Effect = Effect::Timeout;
    const SERVE_TOOL: Option<ServeTool> = Some(ServeTool::everywhere("missing_id"));

    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply))
    }
}

fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    rewrite(reply, |message| message.as_object_mut().is_some_and(|obj| obj.shift_remove("id").is_some()))
}
