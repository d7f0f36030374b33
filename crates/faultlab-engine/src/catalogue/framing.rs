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

use super::{Reply, WireAction, WireFraming};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FramingStyle {
    /// The line (stdio) or the SSE event lines (HTTP) end in `\r\n`.
    Crlf,
    /// A UTF-8 byte-order mark before the message.
    Bom,
}

fault! {
    /// The reply with unusual framing: CRLF line endings or a byte-order mark.
    pub struct Framing {
        pub style: FramingStyle,
    }
    category: Protocol,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("framing")),
    examples: [
        r#"{"type": "framing", "style": "crlf"}"#,
        r#"{"type": "framing", "style": "bom"}"#,
    ],
    apply: |fault, reply, _| apply(reply, fault.style),
}

fn apply(reply: Reply<'_>, style: FramingStyle) -> Vec<WireAction> {
    let framing = match style {
        FramingStyle::Crlf => WireFraming::Crlf,
        FramingStyle::Bom => WireFraming::Bom,
    };
    vec![WireAction::SendFramed { bytes: reply.frame.bytes().clone(), framing }]
}
