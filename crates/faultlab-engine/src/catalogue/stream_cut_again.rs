//! `stream_cut_again`: the stream is cut, and the resumed stream is cut again before any event with an id.
//!
//! **What it does on the wire.** HTTP: as `stream_cut` with no message before the cut (priming event, then the
//! body ends). The first `resumes` `GET`s resuming it (1 to 1000, default 1) are each answered
//! `200 text/event-stream` with an empty body: each closes before any id-bearing event, as a server whose replay
//! failed answers (rust-sdk #958). The next resume (with the same `Last-Event-ID`) replays the reply. stdio: the
//! reply passes unchanged (skipped: no response stream).
//!
//! **What a robust client should do.** Keep the last event id it had: reconnect again with the same
//! `Last-Event-ID` (typescript-sdk #2499 reconnects without it, and the request hangs). Count a resume that brought
//! nothing as a failed attempt, so that a server that keeps answering empty streams ends in a bounded number of
//! `GET`s and a failed request, not a reconnect loop (python-sdk #2393).
//!
//! **Example.** `{"type": "stream_cut_again"}`
//!
//! **How it is graded.** The faulted response ends without the reply; a client that resumes `resumes + 1` times
//! with the same id gets it.

use super::stream_cut::{check_retry, on_stream_only};
use super::within;

/// Most resumes `stream_cut_again` closes empty before one replays: enough to tell a bounded client from a
/// reconnect loop at any `retry:`, few enough that the log it keeps meanwhile stays the stream's own.
pub const MAX_EMPTY_RESUMES: u32 = 1000;

fault! {
    /// Cut the stream after its priming event; cut its first `resumes` resumes again before any event with an id.
    pub struct StreamCutAgain {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_ms: Option<u64>,
        /// How many resumes in a row are closed empty before one replays (1 to 1000; absent: 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub resumes: Option<u32>,
    }
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::sessions("stream_cut_again")),
    examples: [
        r#"{"type": "stream_cut_again"}"#,
        r#"{"type": "stream_cut_again", "resumes": 2}"#,
    ],
    validate: |fault| {
        if let Some(resumes) = fault.resumes {
            within("resumes", u64::from(resumes), 1, u64::from(MAX_EMPTY_RESUMES))?;
        }
        check_retry(fault.retry_ms)
    },
    apply: |_, reply, _| on_stream_only(reply),
}
