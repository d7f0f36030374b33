//! `resume_refused`: the stream is cut, and every `GET` resuming it is answered 404 or 405.
//!
//! **What it does on the wire.** HTTP: a primed stream cut after its priming event, before the reply. A `GET` with
//! its `Last-Event-ID` is answered `status`: 404 with a JSON-RPC error (-32001), or 405 `Method not allowed` with
//! `Allow: POST, DELETE` (a server that offers no GET stream), every time. The reply is never delivered. stdio: the
//! reply passes unchanged (skipped: no response stream).
//!
//! **What a robust client should do.** Stop resuming after the refusal, fail the request with a clear error (or
//! re-issue it if safe), and keep the session: a refused resume is not a lost session.
//!
//! **Example.** `{"type": "resume_refused", "status": 405}`
//!
//! **How it is graded.** The faulted response ends without the reply; the client's next call in the session must
//! succeed.

use super::stream_cut::{check_retry, on_stream_only};

fault! {
    /// Cut the stream after its priming event; answer every resume with `status` (404 or 405).
    pub struct ResumeRefused {
        pub status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_ms: Option<u64>,
    }
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::sessions("resume_refused")),
    examples: [
        r#"{"type": "resume_refused", "status": 405}"#,
        r#"{"type": "resume_refused", "status": 404}"#,
    ],
    validate: |fault| {
        if fault.status != 404 && fault.status != 405 {
            return Err("status must be 404 or 405".into());
        }
        check_retry(fault.retry_ms)
    },
    apply: |_, reply, _| on_stream_only(reply),
}
