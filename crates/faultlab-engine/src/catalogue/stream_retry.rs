//! `stream_retry`: the stream is cut after a priming event whose `retry:` is absent, 0 or very large.
//!
//! **What it does on the wire.** HTTP: the priming event carries `retry: <retry_ms>` (0 to 86400000 ms), or no
//! `retry:` line when `retry_ms` is absent; then the body ends before any message. The reply waits in the log for a
//! `GET` with `Last-Event-ID`. stdio: the reply passes unchanged (skipped: no response stream).
//!
//! **What a robust client should do.** Honour the server's `retry:` (its own default when there is none), bound a
//! very large one by its own deadline rather than sleep a day, and not spin on `retry: 0`.
//!
//! **Example.** `{"type": "stream_retry", "retry_ms": 0}`
//!
//! **How it is graded.** The faulted response ends without the reply; the delay before the client's resume shows
//! whether it honoured `retry:`.

use super::stream_cut::{check_retry, on_stream_only};

fault! {
    /// Cut the stream after its priming event, whose `retry:` is `retry_ms` or absent.
    pub struct StreamRetry {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_ms: Option<u64>,
    }
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::sessions("stream_retry")),
    examples: [
        r#"{"type": "stream_retry", "retry_ms": 0}"#,
        r#"{"type": "stream_retry"}"#,
        r#"{"type": "stream_retry", "retry_ms": 86400000}"#,
    ],
    validate: |fault| check_retry(fault.retry_ms),
    apply: |_, reply, _| on_stream_only(reply),
}
