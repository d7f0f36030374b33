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

use super::{Framing, Reply, WireAction};

pub(super) fn apply(reply: Reply<'_>, parts: u8) -> Vec<WireAction> {
    vec![WireAction::SendFramed { bytes: reply.frame.bytes().clone(), framing: Framing::Split { parts } }]
}
