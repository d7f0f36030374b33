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

use super::WireAction;
use bytes::Bytes;

fault! {
    /// A line that is not JSON, then the reply.
    pub struct NonJsonLine {}
    category: Protocol,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("non_json_line")),
    examples: [r#"{"type": "non_json_line"}"#],
    apply: |_, reply, _| {
        let stray = WireAction::Send(Bytes::from_static(NON_JSON_TEXT.as_bytes()));
        vec![stray, WireAction::Send(reply.frame.bytes().clone())]
    },
}

/// The stray text, chosen to look like a log line a careless server might print to stdout.
pub const NON_JSON_TEXT: &str = "faultlab: this line is not JSON-RPC";
