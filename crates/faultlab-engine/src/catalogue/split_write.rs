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

use super::{MAX_SPLIT_PARTS, WireAction, WireFraming, within};

fault! {
    /// The reply written in `parts` separate writes.
    pub struct SplitWrite { pub parts: u8 }
    category: Protocol,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("split_response")),
    examples: [
        r#"{"type": "split_write", "parts": 4}"#,
    ],
    validate: |fault| within("parts", fault.parts, 2, MAX_SPLIT_PARTS),
    apply: |fault, reply, _| vec![WireAction::SendFramed {
        bytes: reply.frame.bytes().clone(),
        framing: WireFraming::Split { parts: fault.parts },
    }],
}
