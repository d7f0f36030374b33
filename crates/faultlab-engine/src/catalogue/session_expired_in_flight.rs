//! `session_expired_in_flight`: the session expires while the request is in flight; its reply becomes a 404.
//!
//! **What it does on the wire.** HTTP, in a session: the session is forgotten as the request arrives; the front
//! holds the request 200 ms (`faultlab serve`'s handler, the proxy before it passes the upstream's answer on), and
//! the reply is replaced by `404` with a JSON-RPC error (-32001 "Not found") for the request's id; later requests
//! with the session's id get 404 too. stdio has no session: the same JSON-RPC error is written as the reply.
//!
//! **What a robust client should do.** Fail this call with a clear error (it may have run: do not re-issue a
//! non-idempotent call blindly), start a new session, and carry on.
//!
//! **Example.** `{"type": "session_expired_in_flight"}`
//!
//! **How it is graded.** The call fails with a 404; the next call succeeds on a new session.

use super::HttpStatus;

/// How long the front holds the request after its session expired (ms).
pub const IN_FLIGHT_MS: u64 = 200;

fault! {
    /// Forget the session as the request arrives; its reply, 200 ms later, becomes a 404.
    pub struct SessionExpiredInFlight {}
    category: Transport,
    effect: Error,
    serve_tool: Some(ServeTool::sessions("session_lifecycle")),
    examples: [
        r#"{"type": "session_expired_in_flight"}"#,
    ],
    apply: |_, reply, earlier| crate::catalogue::Fault::apply(&HttpStatus::new(404), reply, earlier),
}
