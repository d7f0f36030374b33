//! `burst_failure`: the service fails several times in a row, then recovers.
//!
//! **What it does on the wire.** A preset: `http_status` 503 on the rule schedule `{type: burst, count: N}`, written
//! and recorded as `burst_failure`. The reply is replaced by "service unavailable": HTTP 503 with a JSON-RPC error
//! body; stdio the same error as the reply line (`code -32030`, `data.httpStatus: 503`, `data.fault: "burst_failure"`).
//! The request that triggers it and the next `count - 1` requests matching the same rule fail in a row (the rules keep
//! firing it; the fault itself only answers one reply).
//!
//! **What a robust client should do.** Back off instead of hammering (a burst ends), keep a bound on attempts,
//! and report the failure rather than claiming success.
//!
//! **Example.** `{"type": "burst_failure", "count": 3}`
//!
//! **How it is graded.** The calls inside the burst fail with 503; the client's retries are bounded and spaced;
//! a call after the burst succeeds.

use super::{FaultKind, HttpStatus};
use crate::rules::Schedule;

preset! {
    /// 503 for this and the next `count - 1` requests matching the same rule.
    pub struct BurstFailure {
        pub count: u32,
    }
    examples: [r#"{"type": "burst_failure", "count": 3}"#],
    read_as: |preset| FaultKind::HttpStatus(HttpStatus::scheduled(Schedule::Burst(preset))),
}
