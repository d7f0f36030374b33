//! `truncated`: the frame stops halfway.
//!
//! **What it does on the wire.** Only the first half of the reply's bytes are written, followed by the normal
//! frame end (a newline on stdio, the end of the SSE event or JSON body on HTTP). The result is not JSON.
//!
//! **What a robust client should do.** Discard the unparsable frame (logging it), keep the connection, and let
//! the request reach its deadline.
//!
//! **Example.** `{"type": "truncated"}`
//!
//! **How it is graded.** The call times out or errors; the next call on the same connection succeeds.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, Reply, WireAction};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Only the first half of the reply's bytes, then the frame ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Truncated {}

impl Fault for Truncated {
    const EXAMPLES: &[&str] = &[r#"{"type": "truncated"}"#];
    const CATEGORY: Category = Category::Protocol;
    const EFFECT: Effect = Effect::Invalid;
    const SERVE_TOOL: Option<ServeTool> = Some(ServeTool::everywhere("truncated_response"));

    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply))
    }
}

fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    let bytes = reply.frame.bytes();
    vec![WireAction::Send(bytes.slice(..bytes.len() / 2))]
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use faultlab_wire::Kind;

    #[test]
    fn half_the_bytes_and_not_json() {
        let reply = frame(RESULT);
        let out = sent(&apply(Reply { frame: &reply, request: None }));
        assert_eq!(out[0].bytes().len(), RESULT.len() / 2);
        assert_eq!(out[0].kind(), &Kind::Unparsable);
    }
}
