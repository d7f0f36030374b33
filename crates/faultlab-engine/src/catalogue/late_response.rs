//! `late_response`: a result that arrives after the client cancelled the request.
//!
//! **What it does on the wire.** The framework's own reply for the request is swallowed. When the client's
//! `notifications/cancelled` for that request id arrives (stdio, or a legacy HTTP session's POST), exactly one
//! result with the cancelled request's id is written: text `response sent after cancellation`. The server arms
//! it from `response_after_cancellation`, which also sends one progress notification first if the request asked
//! for progress (clients are told to cancel when they see it).
//!
//! **What a robust client should do.** Ignore a response for a request it cancelled; not resolve any other
//! request with it; keep the connection.
//!
//! **Example.** `{"type": "late_response"}`
//!
//! **How it is graded.** The call's outcome is `cancelled`; an observer sees exactly one late response with the
//! cancelled id; a follow-up call succeeds.

use super::WireAction;
use bytes::Bytes;
use faultlab_wire::MessageId;
use serde_json::json;

fault! {
    /// Swallow the framework's reply; when the client cancels, answer anyway, late.
    pub struct LateResponse {}
    category: Temporal,
    effect: Timeout,
    serve_tool: Some(ServeTool::stdio_and_sessions("response_after_cancellation")),
    examples: [
        r#"{"type": "late_response"}"#,
    ],
    // The framework's reply is consumed: nothing is written for it.
    apply: |_, _, _| Vec::<WireAction>::new(),
}

/// The text of the late result.
pub const LATE_TEXT: &str = "response sent after cancellation";

/// The late result for a cancelled request.
pub fn late_result(id: &MessageId) -> Vec<WireAction> {
    let result = json!({
        "jsonrpc": "2.0",
        "id": id.to_value(),
        "result": {"content": [{"type": "text", "text": LATE_TEXT}], "isError": false}
    });
    vec![WireAction::Send(Bytes::from(result.to_string()))]
}
