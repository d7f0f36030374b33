//! `stream_lost`: the response stream breaks before the reply, with nothing to resume (2026-07-28).
//!
//! **What it does on the wire.** HTTP: the messages before the reply (progress) go out, then the response stream is
//! aborted where the reply would be (the connection is reset, not ended cleanly). In the stateless 2026-07-28 era
//! there is no session to resume in, so the request is lost. stdio: the connection closes instead of the reply, as
//! `disconnect`.
//!
//! **What a robust client should do.** Report the request as lost, and re-issue it (with a new id) only if it is
//! safe to: a non-idempotent call re-issued blindly shows twice in the server's ledger.
//!
//! **Example.** `{"type": "stream_lost"}`
//!
//! **How it is graded.** The call's outcome is a transport loss; a re-issued call shows as a second call.

use super::WireAction;

fault! {
    /// Break the response stream where the reply would be; the request is lost.
    pub struct StreamLost {}
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::http_only("stream_lost")),
    examples: [r#"{"type": "stream_lost"}"#],
    apply: |_, _, _| vec![WireAction::Close],
}
