//! `burst_failure`, `server_outage` and `cascading_failure`: the systemic faults. Each reply they fire on becomes "service
//! unavailable"; how many replies that is belongs to the rule layer, which keeps firing them.
//!
//! **What it does on the wire.** The reply is replaced: HTTP 503 with a JSON-RPC error body; stdio the same error
//! as the reply line (`code -32030`, `data.httpStatus: 503`, `data.fault` naming the fault). `burst_failure
//! {count}`: the request that triggers it and the next `count - 1` requests matching the same rule fail in a row.
//! `server_outage {duration_ms}`: from the triggering request on, *every* request, whatever its tool, fails for
//! `duration_ms` (none reaches the upstream), then service resumes. `cascading_failure {spread}`: the triggering
//! request fails, and the failure spreads to the next `spread` requests whatever their tool (a dependency that
//! fails takes its callers down with it).
//!
//! `server_outage {duration_ms, restart: true}` (default `false`) really crashes the upstream, on the stdio proxy
//! with a child upstream only (any other front refuses the rule when it loads, naming it). When the window starts
//! the child is killed at once (SIGKILL, like a crash; not the orderly close-stdin/SIGTERM of a normal exit), its
//! replies already written still pass, and every request still waiting for one is answered with the 503 (the
//! triggering request never reaches the upstream, whatever the rule's `mode`). When the window ends a fresh child
//! is started with the same command and re-initialised for the client: the client's original `initialize` and
//! `notifications/initialized` are replayed to it and its `initialize` reply is swallowed, so the client keeps its
//! session and sends nothing new. State the old process held in memory is gone, as after a real restart. The
//! trajectory records the stop and the restart as `transport` events naming the rule.
//!
//! **What a robust client should do.** Back off instead of hammering (a burst ends; retries in a tight loop only
//! prolong an outage), keep a bound on attempts, and report the outage rather than claiming success. After a
//! restart, do not assume the server remembers anything from before it (subscriptions, resources it created in
//! memory), and treat calls that failed while in flight as possibly executed.
//!
//! **Example.** `{"type": "burst_failure", "count": 3}`, `{"type": "server_outage", "duration_ms": 2000}`,
//! `{"type": "server_outage", "duration_ms": 2000, "restart": true}`, `{"type": "cascading_failure", "spread": 4}`
//!
//! **How it is graded.** The calls inside the burst or window fail with 503; the client's retries are bounded and
//! spaced; a call after the window succeeds (after a restart: on the fresh upstream, without the client
//! initialising again).

use super::{Reply, WireAction, http_status};
use serde_json::json;

/// The JSON-RPC error code for "service unavailable" (the `http_status` fault's code for 503).
const CODE: i64 = -32030;

pub(super) fn apply(reply: Reply<'_>, fault: &str) -> Vec<WireAction> {
    let error = json!({"code": CODE, "message": "HTTP 503: Service unavailable",
        "data": {"httpStatus": 503, "fault": fault}});
    http_status::replace_with_status(reply, 503, None, error)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn a_503_error_with_the_request_id_naming_the_fault() {
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: None }, "server_outage");
        let WireAction::HttpStatus { status, body, .. } = &actions[0] else { panic!("{actions:?}") };
        assert_eq!(*status, 503);
        let body: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!((body["id"].clone(), body["error"]["data"]["fault"].clone()), (json!(7), json!("server_outage")));
    }
}
