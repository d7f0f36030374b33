//! `missing_id`: the reply carries no id.
//!
//! **What it does on the wire.** The `id` member is removed from the reply; everything else is kept. A result
//! without an id is invalid JSON-RPC; an error without an id is what a peer sends when it could not read the id.
//!
//! **What a robust client should do.** Not match it to any request; the request times out at the client's
//! deadline. An id-less *error* may be surfaced as a connection-level problem.
//!
//! **Example.** `{"type": "missing_id"}`
//!
//! **How it is graded.** The call times out or errors, never succeeds; the connection stays usable.

use super::rewrite;

fault! {
    /// The reply carries no id at all.
    pub struct MissingId {}
    category: Protocol,
    effect: Timeout,
    serve_tool: Some(ServeTool::everywhere("missing_id")),
    examples: [r#"{"type": "missing_id"}"#],
    apply: |_, reply, _| rewrite(reply, |message| {
        message.as_object_mut().is_some_and(|obj| obj.shift_remove("id").is_some())
    }),
}
