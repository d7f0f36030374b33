//! `stream_cut_again`: the stream is cut, and the resumed stream is cut again before any event with an id.
//!
//! **What it does on the wire.** HTTP: as `stream_cut` with no message before the cut (priming event, then the
//! body ends). The first `GET` resuming it is answered `200 text/event-stream` with an empty body: it closes before
//! any id-bearing event. The next resume (with the same `Last-Event-ID`) replays the reply. stdio: the reply passes
//! unchanged (skipped: no response stream).
//!
//! **What a robust client should do.** Keep the last event id it had: reconnect again with the same
//! `Last-Event-ID` (typescript-sdk #2499 reconnects without it, and the request hangs).
//!
//! **Example.** `{"type": "stream_cut_again"}`
//!
//! **How it is graded.** The faulted response ends without the reply; a client that resumes twice with the same
//! id gets it.

use super::stream_cut::{check_retry, on_stream_only};

fault! {
    /// Cut the stream after its priming event; cut its first resume again before any event with an id.
    pub struct StreamCutAgain {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_ms: Option<u64>,
    }
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::sessions("stream_cut_again")),
    examples: [
        r#"{"type": "stream_cut_again"}"#,
    ],
    validate: |fault| check_retry(fault.retry_ms),
    apply: |_, reply, _| on_stream_only(reply),
}
