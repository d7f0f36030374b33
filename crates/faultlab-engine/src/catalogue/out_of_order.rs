//! `out_of_order`: a reply overtaken by a later one.
//!
//! **What it does on the wire.** The reply is held back until the next reply on the connection has been written,
//! then written itself, so two concurrent requests are answered in the reverse of the order the server answered
//! them. If no other reply comes within `max_hold_ms` (default 1000 ms), it is written then. Over HTTP each reply
//! keeps its own response stream; the held one is released when another request's reply has been written.
//!
//! **What a robust client should do.** Match replies by id, never by arrival order, and complete both requests
//! correctly.
//!
//! **Example.** `{"type": "out_of_order"}`, `{"type": "out_of_order", "max_hold_ms": 200}`
//!
//! **How it is graded.** Both calls succeed with their own results; an observer counts one out-of-order reply.

use super::{MAX_LATENCY_MS, Reply, WireAction, within};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

fault! {
    /// The reply is held until the next reply on the connection has been written (at most `max_hold_ms`).
    pub struct OutOfOrder {
        #[serde(default = "default_max_hold_ms")]
        pub max_hold_ms: u64,
    }
    // The example holds 50 ms, not the default 1 s: that would be most of the examples test's time.
    category: Temporal,
    effect: Result,
    serve_tool: None,
    examples: [r#"{"type": "out_of_order", "max_hold_ms": 50}"#],
    validate: |fault| within("max_hold_ms", fault.max_hold_ms, 1, MAX_LATENCY_MS),
    apply: |fault, reply, _| {
        // Alone (no engine to release it early) the reply is simply held for its longest time.
        hold(reply, fault.max_hold_ms, &Release::default())
    },
}

/// The held reply's release signal: the writer of the overtaking reply fires it.
#[derive(Debug, Clone, Default)]
pub struct Release(Arc<Notify>);

impl Release {
    /// Lets the held reply go (if it is not waiting yet, it will not wait when it starts).
    pub fn fire(&self) {
        self.0.notify_one();
    }

    /// Waits for the release, at most `max`.
    pub async fn wait(&self, max: Duration) {
        let _ = tokio::time::timeout(max, self.0.notified()).await;
    }
}

impl PartialEq for Release {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Release {}

fn default_max_hold_ms() -> u64 {
    1000
}

/// The held reply: waits for `release` (at most `max_hold_ms`), then goes out unchanged.
pub fn hold(reply: Reply<'_>, max_hold_ms: u64, release: &Release) -> Vec<WireAction> {
    vec![
        WireAction::AwaitRelease { release: release.clone(), max: Duration::from_millis(max_hold_ms) },
        WireAction::Send(reply.frame.bytes().clone()),
    ]
}
