//! `latency`: the reply is held back, then written unchanged.
//!
//! **What it does on the wire.** Nothing is written for `delay_ms`; then the reply goes out byte for byte. Only
//! this reply waits: replies to other requests keep flowing meanwhile (no head-of-line blocking).
//!
//! **What a robust client should do.** Keep waiting up to its own deadline; if the deadline passes, cancel the
//! request and ignore the reply if it still arrives.
//!
//! **Example.** `{"type": "latency", "delay_ms": 200}`
//!
//! **How it is graded.** Success if the reply is used within the client's deadline; a timeout is correct when the
//! delay exceeds the deadline, and the late reply must not be mistaken for another request's.
//!
//! **`delayed`.** MCP-Faultline lists `delayed` (temporal) beside `latency` (transport); both hold a reply back by
//! `delay_ms`, so here they are one fault: `{"type": "delayed", "delay_ms": 200}` is read as this `latency` and
//! recorded under that name. One entry keeps one behaviour (including `mode: before` in the proxy) instead of two
//! copies that could drift apart.

use super::{MAX_LATENCY_MS, Reply, WireAction, within};
use std::time::Duration;

fault! {
    /// Hold the reply for `delay_ms` before writing it. Also accepted as `delayed` (MCP-Faultline's name).
    pub struct Latency {
        pub delay_ms: u64,
    }
    category: Transport,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("delay")),
    examples: [
        r#"{"type": "latency", "delay_ms": 50}"#,
        r#"{"type": "delayed", "delay_ms": 20}"#,
    ],
    validate: |fault| within("delay_ms", fault.delay_ms, 0, MAX_LATENCY_MS),
    apply: |fault, reply, _| apply(reply, fault.delay_ms),
}

/// Lets the JSON Schema accept `delayed` as well, as serde does (schemars ignores serde aliases).
pub(super) fn accept_delayed_alias(schema: &mut schemars::Schema) {
    if let Some(tag) = schema.get_mut("properties").and_then(|p| p.get_mut("type")).and_then(|t| t.as_object_mut()) {
        tag.remove("const");
        tag.insert("enum".into(), serde_json::json!(["latency", "delayed"]));
    }
}

fn apply(reply: Reply<'_>, delay_ms: u64) -> Vec<WireAction> {
    vec![WireAction::Pause(Duration::from_millis(delay_ms)), WireAction::Send(reply.frame.bytes().clone())]
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn pauses_then_sends_the_same_bytes() {
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: None }, 250);
        assert_eq!(actions[0], WireAction::Pause(Duration::from_millis(250)));
        assert_eq!(actions[1], WireAction::Send(reply.bytes().clone()));
    }
}
