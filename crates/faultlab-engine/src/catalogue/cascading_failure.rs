//! `cascading_failure`: one failure takes the next requests down with it.
//!
//! **What it does on the wire.** A preset: `http_status` 503 on the rule schedule `{type: cascade, spread: N}`, written
//! and recorded as `cascading_failure`. The reply is replaced by "service unavailable": HTTP 503 with a JSON-RPC error
//! body; stdio the same error as the reply line (`code -32030`, `data.httpStatus: 503`, `data.fault:
//! "cascading_failure"`). The triggering request fails, and the failure spreads to the next `spread` requests whatever
//! their tool (a dependency that fails takes its callers down with it).
//!
//! **What a robust client should do.** Back off, keep a bound on attempts across tools (not per tool), and report
//! the failure rather than claiming success.
//!
//! **Example.** `{"type": "cascading_failure", "spread": 4}`
//!
//! **How it is graded.** The calls inside the cascade fail with 503; the client's retries are bounded and spaced;
//! a call after it succeeds.

use super::{FaultKind, HttpStatus};
use crate::rules::Schedule;

preset! {
    /// 503 for this request, and the failure spreads: the next `spread` requests fail too, whatever their tool.
    pub struct CascadingFailure {
        pub spread: u32,
    }
    examples: [r#"{"type": "cascading_failure", "spread": 4}"#],
    read_as: |preset| FaultKind::HttpStatus(HttpStatus::scheduled(Schedule::Cascade(preset))),
}
