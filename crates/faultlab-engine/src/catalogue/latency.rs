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

use super::{Reply, WireAction};
use std::time::Duration;

pub(super) fn apply(reply: Reply<'_>, delay_ms: u64) -> Vec<WireAction> {
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
