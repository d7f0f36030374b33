//! `disconnect`: the connection goes away instead of the reply.
//!
//! **What it does on the wire.** stdio: the server's stdout is closed and the process ends, so the client reads
//! EOF. HTTP: the response is aborted where the reply would be (the TCP connection is reset); the listener stays
//! up and other requests are unaffected. Where the response's head is out before the reply (a JSON answer, sent
//! for this as an event stream; a stream that began with a priming event, as `faultlab serve`'s sessions do),
//! the client sees `200 text/event-stream` break off mid-body; where the head waits for the reply (the HTTP
//! proxy holds an upstream event stream's head until its first JSON-RPC message), the connection closes before a
//! byte of the response. Clients take the two down different paths (a stream that ended without its reply; a
//! request that got no response at all).
//!
//! **What a robust client should do.** Report a transport failure for the pending request (never success), then
//! reconnect (stdio: start a new process; HTTP: a new request, a new session if the old one is gone).
//!
//! **Example.** `{"type": "disconnect"}`
//!
//! **How it is graded.** The call's outcome must be a transport loss; a later call on a new connection succeeds.

use super::WireAction;

fault! {
    /// Close the connection (stdio) or abort the response stream (HTTP) instead of replying.
    pub struct Disconnect {}
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::everywhere("disconnect")),
    examples: [r#"{"type": "disconnect"}"#],
    apply: |_, _, _| vec![WireAction::Close],
}
