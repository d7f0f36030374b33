//! `server_outage`: the whole service is down for a while.
//!
//! **What it does on the wire.** A preset: `http_status` 503 on the rule schedule `{type: outage, duration_ms: N}`,
//! written and recorded as `server_outage`. The reply is replaced by "service unavailable": HTTP 503 with a JSON-RPC
//! error body; stdio the same error as the reply line (`code -32030`, `data.httpStatus: 503`, `data.fault:
//! "server_outage"`). From the triggering request on, *every* request, whatever its tool, fails for `duration_ms` (none
//! reaches the upstream), then service resumes.
//!
//! With `restart: true` (default `false`) the upstream really crashes, on the stdio proxy with a child upstream
//! only (any other front refuses the rule when it loads, naming it). When the window starts the child is killed
//! at once (SIGKILL, like a crash; not the orderly close-stdin/SIGTERM of a normal exit), its replies already
//! written still pass, and every request still waiting for one is answered with the 503 (the triggering request
//! never reaches the upstream, whatever the rule's `mode`). When the window ends a fresh child is started with the
//! same command and re-initialised for the client: the client's original `initialize` and
//! `notifications/initialized` are replayed to it and its `initialize` reply is swallowed, so the client keeps
//! its session and sends nothing new. State the old process held in memory is gone, as after a real restart. The
//! trajectory records the stop and the restart as `transport` events naming the rule.
//!
//! **What a robust client should do.** Back off instead of hammering (retries in a tight loop only prolong an
//! outage), keep a bound on attempts, and report the outage rather than claiming success. After a restart, do
//! not assume the server remembers anything from before it (subscriptions, resources it created in memory), and
//! treat calls that failed while in flight as possibly executed.
//!
//! **Example.** `{"type": "server_outage", "duration_ms": 2000}`,
//! `{"type": "server_outage", "duration_ms": 2000, "restart": true}`
//!
//! **How it is graded.** The calls inside the window fail with 503; the client's retries are bounded and spaced;
//! a call after the window succeeds (after a restart: on the fresh upstream, without the client initialising
//! again).

use super::{FaultKind, HttpStatus};
use crate::rules::Schedule;

preset! {
    /// 503 for every request, whatever its tool, for `duration_ms` from this one on. With `restart` (default
    /// false; only the stdio proxy with a child upstream can), the upstream is killed when the window starts and a
    /// fresh one is started and re-initialised when it ends.
    pub struct ServerOutage {
        pub duration_ms: u64,
        // Skipped when false, so a fault written before the field existed serialises as it did.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub restart: bool,
    }
    examples: [r#"{"type": "server_outage", "duration_ms": 2000}"#],
    // The restarting form needs a child upstream; the proxy's own tests (outage, restart) cover it.
    read_as: |preset| FaultKind::HttpStatus(HttpStatus::scheduled(Schedule::Outage(preset))),
}
