//! `split_write`: one reply arrives in several pieces.
//!
//! **What it does on the wire.** The framed reply is written in `parts` separate writes of about equal size, each
//! flushed, with a 5 ms pause between them so that they reach the client as separate reads (stdio: pieces of one
//! line; HTTP: separate body chunks of one SSE event or JSON body).
//!
//! **What a robust client should do.** Reassemble: buffer until the frame is complete, then parse it.
//!
//! **Example.** `{"type": "split_write", "parts": 4}`
//!
//! **How it is graded.** The call succeeds with the complete result.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, MAX_SPLIT_PARTS, Reply, WireAction, WireFraming, within};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The reply written in `parts` separate writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitWrite {
    pub parts: u8,
}

impl Fault for SplitWrite {
    const EXAMPLES: &[&str] = &[r#"{"type": "split_write", "parts": 4}"#];
    const CATEGORY: Category = Category::Protocol;
    const EFFECT: Effect = Effect::Result;
    const SERVE_TOOL: Option<ServeTool> = Some(ServeTool::everywhere("split_response"));

    fn validate(&self) -> Result<(), String> {
        within("parts", self.parts, 2, MAX_SPLIT_PARTS)
    }
    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply, self.parts))
    }
}

fn apply(reply: Reply<'_>, parts: u8) -> Vec<WireAction> {
    vec![WireAction::SendFramed { bytes: reply.frame.bytes().clone(), framing: WireFraming::Split { parts } }]
}
