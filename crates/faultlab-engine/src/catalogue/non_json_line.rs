//! `non_json_line`: a frame that is not JSON arrives before the reply.
//!
//! **What it does on the wire.** First a frame with the text `faultlab: this line is not JSON-RPC` (stdio: a
//! line on stdout, like a stray `print`; HTTP: an SSE `message` event with that data), then the reply unchanged.
//!
//! **What a robust client should do.** Skip the bad frame (logging it) and still complete the request with the
//! reply that follows.
//!
//! **Example.** `{"type": "non_json_line"}`
//!
//! **How it is graded.** The call succeeds; an observer counts one unparsable frame.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, Reply, WireAction};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use bytes::Bytes;

/// A line that is not JSON, then the reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NonJsonLine {}

impl Fault for NonJsonLine {
    const EXAMPLES: &[&str] = &[r#"{"type": "non_json_line"}"#];
    const CATEGORY: Category = Category::Protocol;
    const EFFECT: Effect = Effect::Result;
    const SERVE_TOOL: Option<ServeTool> = Some(ServeTool::everywhere("non_json_line"));

    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply))
    }
}

/// The stray text, chosen to look like a log line a careless server might print to stdout.
pub const NON_JSON_TEXT: &str = "faultlab: this line is not JSON-RPC";

fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    vec![WireAction::Send(Bytes::from_static(NON_JSON_TEXT.as_bytes())), WireAction::Send(reply.frame.bytes().clone())]
}
