//! `empty_event_id`: the last event before a cut carries an explicit empty `id:` line.
//!
//! **What it does on the wire.** HTTP: a primed, resumable stream; its first message is sent with `id:` and
//! nothing after it, which resets the client's last event id (WHATWG SSE), then the body ends before the reply.
//! When the server sends no message before its reply, the stream is cut after its priming event. stdio: the reply
//! passes unchanged (skipped: no response stream).
//!
//! **What a robust client should do.** Clear its resumption token on an empty `id:` (typescript-sdk #2769 keeps
//! the old one) and treat the request as lost rather than resume from an id the server withdrew.
//!
//! **Example.** `{"type": "empty_event_id"}`
//!
//! **How it is graded.** The faulted response ends without the reply; the `Last-Event-ID` a client then sends (none
//! is right) is on the wire.

use super::stream_cut::{check_retry, on_stream_only};

fault! {
    /// One message with an explicit empty `id:` line, then the stream is cut before the reply.
    pub struct EmptyEventId {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_ms: Option<u64>,
    }
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::sessions("empty_event_id")),
    examples: [r#"{"type": "empty_event_id"}"#],
    validate: |fault| check_retry(fault.retry_ms),
    apply: |_, reply, _| on_stream_only(reply),
}
