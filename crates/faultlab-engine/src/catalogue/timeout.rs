//! `timeout`: the reply never comes.
//!
//! **What it does on the wire.** The reply is held forever: nothing is written for the request, and the
//! connection stays open, so the client waits until its own deadline. (In the proxy with `mode: after` the server
//! has executed the request; only the answer is lost.)
//!
//! **What a robust client should do.** Give up at its deadline, cancel the request, and not retry a
//! non-idempotent call blindly: it may have executed.
//!
//! **Example.** `{"type": "timeout"}`
//!
//! **How it is graded.** The call's outcome is a timeout; side effects of a retry are checked (at most once).

use super::WireAction;

fault! {
    /// The reply is never sent: the request stays open until the client gives up.
    pub struct Timeout {}
    category: Transport,
    effect: Timeout,
    serve_tool: None,
    examples: [r#"{"type": "timeout"}"#],
    apply: |_, _, _| Vec::<WireAction>::new(),
}
