//! `slow_drip`: the answer streams, but each piece takes seconds (model hop only).
//!
//! **What it does on the wire.** The status and headers go out at once; then the answer is written piece by piece
//! with `token_ms` between pieces: each SSE event of a stream (a delta carries a few tokens), or, for a JSON
//! answer, each of 8 slices of its body. The connection stays alive and every byte is the normal answer: only its
//! pace is wrong. The proxy refuses this fault.
//!
//! **What a robust client should do.** Bound the whole answer's time, not only the time between bytes (a read
//! timeout never fires here), and cancel and retry or report a stalled model.
//!
//! **Example.** `{"type": "slow_drip", "token_ms": 2000}`
//!
//! **How it is graded.** The recording shows when the framework gave up (the next request's `at_ms`), or the run
//! took the whole drip.

use super::{MAX_LATENCY_MS, within};

/// Slices a JSON answer is written in.
pub const JSON_SLICES: usize = 8;

model_fault! {
    /// Each event of a stream (each of 8 slices of a JSON body) `token_ms` after the one before.
    pub struct SlowDrip {
        pub token_ms: u64,
    }
    category: Temporal,
    effect: Result,
    examples: [r#"{"type": "slow_drip", "token_ms": 2000}"#],
    validate: |fault| within("token_ms", fault.token_ms, 1, MAX_LATENCY_MS),
}
