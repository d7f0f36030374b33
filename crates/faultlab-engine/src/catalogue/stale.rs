//! `stale`: an old answer presented as the new one.
//!
//! **What it does on the wire.** The reply is replaced by the last earlier reply to a call of the **same tool**
//! on the same connection scope (stdio connection, HTTP session), with its `id` set to this request's id; every
//! other byte of the old reply is kept (re-serialised compactly, so key order is unchanged). The engine remembers,
//! per tool, the last reply that no fault fired on (at most 32 tools, replies up to 1 MiB); the upstream's real
//! reply to this request is not shown to the client and not remembered, so repeated `stale` faults keep serving
//! the same old answer, like a stuck cache. With no earlier reply to that tool (the first call, a stateless
//! request to `faultlab serve` over HTTP, each its own scope, or the proxy's `instead` mode where no upstream reply
//! exists) the reply is sent unchanged. The proxy's HTTP front remembers across its requests.
//!
//! **What a robust client should do.** It cannot tell from the shape. A careful agent does not trust a result that
//! should have changed (after a write, a read returning the pre-write content), checks freshness markers
//! (timestamps, versions) when the task depends on them, and re-reads.
//!
//! **Example.** `{"type": "stale"}`
//!
//! **How it is graded.** By the task's state and witness checks: acting on the old data shows in the end state or
//! fails the witness; noticing and re-reading passes.

use super::{Reply, WireAction, unchanged};
use bytes::Bytes;
use faultlab_wire::Frame;

fault! {
    /// The last earlier reply of the same tool, with this request's id, instead of this reply.
    pub struct Stale {}
    category: Data,
    effect: WrongData,
    serve_tool: None,
    examples: [r#"{"type": "stale"}"#],
    apply: |_, reply, earlier| apply(reply, earlier.same_tool.as_ref()),
}

fn apply(reply: Reply<'_>, earlier: Option<&Bytes>) -> Vec<WireAction> {
    let (Some(earlier), Some(id)) = (earlier, reply.frame.id()) else {
        return unchanged(reply);
    };
    let mut old = match Frame::parse(earlier.clone()).value() {
        Some(value @ serde_json::Value::Object(_)) => value.clone(),
        _ => return unchanged(reply),
    };
    // Overwriting the existing `id` member keeps its place in the message.
    old["id"] = id.to_value();
    match serde_json::to_vec(&old) {
        Ok(bytes) => vec![WireAction::Send(Bytes::from(bytes))],
        Err(_) => unchanged(reply),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_earlier_reply_with_this_id() {
        let old =
            Bytes::from_static(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"old"}]}}"#);
        let reply = frame(RESULT);
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"old"}]}}"#;
        assert_eq!(apply(Reply { frame: &reply, request: None }, Some(&old)), vec![WireAction::Send(expected.into())]);
    }

    #[test]
    fn without_an_earlier_reply_the_reply_is_unchanged() {
        let reply = frame(RESULT);
        assert_eq!(
            apply(Reply { frame: &reply, request: None }, None),
            unchanged(Reply { frame: &reply, request: None })
        );
    }
}
