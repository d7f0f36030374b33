//! `list_changed_storm`: a flood of `notifications/tools/list_changed` before the reply.
//!
//! **What it does on the wire.** `count` identical `notifications/tools/list_changed` frames, then the reply.
//!
//! **What a robust client should do.** Coalesce them (re-list tools at most once or a few times, not `count`
//! times) and still complete the request.
//!
//! **Example.** `{"type": "list_changed_storm", "count": 500}`
//!
//! **How it is graded.** The call succeeds; the number of `tools/list` requests the client sends in response stays
//! small.

use super::{Reply, WireAction};
use bytes::Bytes;

const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

pub(super) fn apply(reply: Reply<'_>, count: u32) -> Vec<WireAction> {
    let note = Bytes::from_static(LIST_CHANGED.as_bytes());
    let mut actions: Vec<_> = (0..count).map(|_| WireAction::Send(note.clone())).collect();
    actions.push(WireAction::Send(reply.frame.bytes().clone()));
    actions
}
