//! `http_status`: an HTTP error status instead of the reply.
//!
//! **What it does on the wire.** HTTP: the response has the given status (401, 403, 404, 429, 500 or 503) and a
//! JSON-RPC error body with the request's id; 401 carries `WWW-Authenticate: Bearer`, 429 and 503 carry
//! `Retry-After` when `retry_after_sec` is set. stdio has no status line, so the same JSON-RPC error is written
//! as the reply.
//!
//! **What a robust client should do.** 401: re-authenticate. 403: stop. 404 on a session: start a new session.
//! 429 / 503: back off for `Retry-After`, then retry. 500: retry a bounded number of times or fail.
//!
//! **Example.** `{"type": "http_status", "status": 429, "retry_after_sec": 2}`
//!
//! **How it is graded.** The call fails with an error naming the status; a retry honours `Retry-After`.

use super::{Category, MAX_RETRY_AFTER_SEC, Media, Reply, WireAction, within};
use crate::rules::Schedule;
use bytes::Bytes;
use serde_json::{Value, json};

fault! {
    /// An HTTP error status instead of the reply (stdio: a JSON-RPC error naming the status).
    pub struct HttpStatus {
        pub status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_after_sec: Option<u32>,
        /// Set by the schedule presets (`burst_failure`, `server_outage`, `cascading_failure`: a 503 on a schedule),
        /// never written as a parameter: the fault is then written, recorded and named on the wire (`data.fault`) as
        /// the preset, and the rule that arms it keeps firing on this schedule.
        #[serde(skip)]
        #[schemars(skip)]
        pub schedule: Option<Schedule>,
    }
    category: Transport,
    effect: Error,
    serve_tool: Some(ServeTool::http_only("http_status")),
    examples: [
        r#"{"type": "http_status", "status": 429, "retry_after_sec": 2}"#,
        r#"{"type": "http_status", "status": 500}"#,
        r#"{"type": "http_status", "status": 401}"#,
    ],
    // 401 and 403 are about who may do what; a 503 on a schedule is the service failing.
    category_of: |fault| {
        match fault.schedule {
            Some(_) => Category::Systemic,
            None => category(fault.status),
        }
    },
    validate: |fault| {
        if let Some(schedule) = &fault.schedule {
            return schedule.validate();
        }
        if !ALLOWED.contains(&fault.status) {
            return Err(format!("status must be one of {ALLOWED:?}"));
        }
        match fault.retry_after_sec {
            Some(secs) => within("retry_after_sec", secs, 0, MAX_RETRY_AFTER_SEC),
            None => Ok(()),
        }
    },
    apply: |fault, reply, _| match &fault.schedule {
        Some(schedule) => unavailable(reply, schedule.preset()),
        None => apply(reply, fault.status, fault.retry_after_sec),
    },
}

impl HttpStatus {
    /// `status`, with no `Retry-After`.
    pub const fn new(status: u16) -> Self {
        Self { status, retry_after_sec: None, schedule: None }
    }

    /// The 503 of a failing service, on `schedule`.
    pub const fn scheduled(schedule: Schedule) -> Self {
        Self { status: 503, retry_after_sec: None, schedule: Some(schedule) }
    }
}

/// 401 and 403 say who may do what; the other statuses say the service cannot answer now.
fn category(status: u16) -> Category {
    match status {
        401 | 403 => Category::Authorization,
        _ => Category::Transport,
    }
}

/// The statuses the fault can produce.
pub const ALLOWED: [u16; 6] = [401, 403, 404, 429, 500, 503];

fn apply(reply: Reply<'_>, status: u16, retry_after_sec: Option<u32>) -> Vec<WireAction> {
    let (code, text) = match status {
        401 => (-32001, "Unauthorized: authentication expired"),
        403 => (-32003, "Forbidden"),
        404 => (-32001, "Not found"),
        429 => (-32029, "Too many requests"),
        503 => (-32030, "Service unavailable"),
        _ => (-32603, "Internal server error"),
    };
    let error = json!({"code": code, "message": format!("HTTP {status}: {text}"), "data": {"httpStatus": status}});
    replace_with_status(reply, status, retry_after_sec, error)
}

/// The reply replaced by HTTP `status` whose body is a JSON-RPC error (`error`) with the request's id. The other
/// status faults (`rate_limit`, `auth_expired`, `forbidden`) answer through here too, so the HTTP front renders
/// them as real statuses and stdio writes the same error as the reply line.
pub(super) fn replace_with_status(
    reply: Reply<'_>,
    status: u16,
    retry_after_sec: Option<u32>,
    error: Value,
) -> Vec<WireAction> {
    let id = reply.frame.id().map_or(Value::Null, |id| id.to_value());
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    vec![WireAction::HttpStatus { status, retry_after_sec, body: Bytes::from(body.to_string()), media: Media::Json }]
}

/// The JSON-RPC error code for "service unavailable" (this fault's code for 503).
const UNAVAILABLE: i64 = -32030;

/// The 503 of the schedule presets (`burst_failure`, `server_outage`, `cascading_failure`); `data.fault` names the
/// preset, since the same status means a different schedule for each.
fn unavailable(reply: Reply<'_>, fault: &str) -> Vec<WireAction> {
    let error = json!({"code": UNAVAILABLE, "message": "HTTP 503: Service unavailable",
        "data": {"httpStatus": 503, "fault": fault}});
    replace_with_status(reply, 503, None, error)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn a_status_with_a_json_rpc_error_for_the_request() {
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: None }, 429, Some(2));
        let expected = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32029,"message":"HTTP 429: Too many requests","data":{"httpStatus":429}}}"#;
        assert_eq!(
            actions,
            vec![WireAction::HttpStatus {
                status: 429,
                retry_after_sec: Some(2),
                body: Bytes::from(expected),
                media: Media::Json
            }]
        );
    }

    #[test]
    fn on_a_schedule_a_503_naming_the_preset() {
        let burst = HttpStatus::scheduled(Schedule::Burst(super::super::BurstFailure { count: 2 }));
        let actions = run(burst, &frame(RESULT));
        let [WireAction::HttpStatus { status: 503, body, .. }] = &actions[..] else { panic!("{actions:?}") };
        let expected = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32030,"message":"HTTP 503: Service unavailable","data":{"httpStatus":503,"fault":"burst_failure"}}}"#;
        assert_eq!(body, expected);
    }
}
