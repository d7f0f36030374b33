//! `duplicate`: the same reply, sent twice.
//!
//! **What it does on the wire.** Two identical frames with the same id, back to back (stdio: two lines; HTTP: a
//! JSON body becomes an SSE stream of two `message` events, an SSE event is emitted twice).
//!
//! **What a robust client should do.** Complete the request with the first reply and ignore the second (ideally
//! logging it), without failing the connection or resolving some other request with it.
//!
//! **Example.** `{"type": "duplicate"}`
//!
//! **How it is graded.** The call succeeds once; an observer sees two responses with the same id.

use super::WireAction;

fault! {
    /// The same reply, twice.
    pub struct Duplicate {}
    category: Temporal,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("duplicate_response")),
    examples: [r#"{"type": "duplicate"}"#],
    apply: |_, reply, _| vec![WireAction::Send(reply.frame.bytes().clone()); 2],
}
