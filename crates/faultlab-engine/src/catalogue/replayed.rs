//! `replayed`: an old reply arrives again.
//!
//! **What it does on the wire.** The reply is sent unchanged, and right after it the last earlier reply to a
//! `tools/call` of **any tool** on the same connection scope is sent again, byte for byte, with its original
//! (already answered) id (stdio: two lines; HTTP: a JSON body becomes an SSE stream of two `message` events). The
//! engine remembers the last reply no fault fired on (replies up to 1 MiB). With no earlier reply (the first call,
//! a stateless request to `faultlab serve` over HTTP, or the proxy's `instead` mode) only the reply is sent; the
//! proxy's HTTP front remembers across its requests.
//!
//! **What a robust client should do.** Complete this request with its own reply and drop the replayed one: its id
//! was answered already, so it must not resolve any other pending request nor be processed twice; keep the
//! connection.
//!
//! **Example.** `{"type": "replayed"}`
//!
//! **How it is graded.** The call succeeds once with its own result; an observer sees one response for an id that
//! was already answered (a duplicate), and no other call is resolved with it.

use super::{Reply, WireAction, unchanged};
use bytes::Bytes;

fault! {
    /// This reply, then the last earlier tool reply again, with its original id.
    pub struct Replayed {}
    category: Temporal,
    effect: Result,
    serve_tool: None,
    examples: [r#"{"type": "replayed"}"#],
    apply: |_, reply, earlier| apply(reply, earlier.any_tool.as_ref()),
}

fn apply(reply: Reply<'_>, earlier: Option<&Bytes>) -> Vec<WireAction> {
    let mut actions = unchanged(reply);
    actions.extend(earlier.cloned().map(WireAction::Send));
    actions
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_reply_then_the_old_one_with_its_own_id() {
        let old = Bytes::from_static(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#);
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: None }, Some(&old));
        assert_eq!(actions, vec![WireAction::Send(reply.bytes().clone()), WireAction::Send(old)]);
        assert_eq!(apply(Reply { frame: &reply, request: None }, None).len(), 1);
    }
}
