//! `framing`: the reply is intact but framed unusually.
//!
//! **What it does on the wire.** `crlf`: the line ends in `\r\n` (stdio) or the SSE event's lines end in `\r\n`
//! (HTTP). `bom`: a UTF-8 byte-order mark (`EF BB BF`) precedes the message.
//!
//! **What a robust client should do.** CRLF: accept it (JSON allows the trailing whitespace; SSE allows CRLF).
//! BOM: tolerate or reject the frame, but never hang or crash; the request still completes or fails cleanly.
//!
//! **Example.** `{"type": "framing", "style": "crlf"}`
//!
//! **How it is graded.** CRLF: the call succeeds. BOM: success or a clean error, and the connection stays usable.

use super::{Framing, FramingStyle, Reply, WireAction};

pub(super) fn apply(reply: Reply<'_>, style: FramingStyle) -> Vec<WireAction> {
    let framing = match style {
        FramingStyle::Crlf => Framing::Crlf,
        FramingStyle::Bom => Framing::Bom,
    };
    vec![WireAction::SendFramed { bytes: reply.frame.bytes().clone(), framing }]
}
