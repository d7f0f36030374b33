//! Resumable streams on the server's HTTP front: which [`Plan`] a session's POST stream follows (a stream fault
//! tool's arguments), and the `GET` that resumes a stream with `Last-Event-ID`.
//!
//! Kept apart from the routing in `mod.rs`, which only calls [`plan_for`], [`record`] and [`resume`].

use super::sessions::Session;
use axum::response::Response;
use faultlab_http::resume::{Plan, ResumeFault};
use faultlab_wire::Frame;
use http::StatusCode;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const LAST_EVENT_ID: &str = "last-event-id";

/// Longest `retry:` a stream fault tool may ask for, in milliseconds (24 h: "very large" without overflow in any
/// client's timer).
pub const MAX_RETRY_MS: u64 = 86_400_000;
/// Most progress notifications a stream fault tool sends before the cut.
pub const MAX_EVENTS_BEFORE_CUT: u64 = 16;

/// The stream tools of `faultlab serve`, by name (each is offered in 2025-11-25 HTTP sessions only).
pub const STREAM_TOOLS: &[&str] = &[
    "stream_cut",
    "stream_cut_again",
    "stream_retry",
    "empty_event_id",
    "replay_duplicate",
    "replay_foreign",
    "resume_refused",
];

/// The plan of the stream answering `frame`: a stream fault tool's, else a healthy resumable stream. Arguments
/// the tool itself rejects give a healthy stream (the tool's error goes out on it).
pub fn plan_for(frame: &Frame) -> Plan {
    let Some(value) = frame.value() else { return Plan::default() };
    if value.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Plan::default();
    }
    let params = &value["params"];
    let Some(name) = params.get("name").and_then(Value::as_str) else { return Plan::default() };
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    plan_of_tool(name, &args).unwrap_or_default()
}

/// The plan a stream tool's call asks for; `None` for another tool or arguments out of range. Every stream tool
/// takes `retryMs`, the priming event's `retry:` (default 3000; `stream_retry` also leaves it out when absent).
pub fn plan_of_tool(name: &str, args: &Value) -> Option<Plan> {
    let retry = match args.get("retryMs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().filter(|ms| *ms <= MAX_RETRY_MS)?),
    };
    let cut = |after: usize| Plan {
        cut_after: Some(after),
        retry_ms: retry.or(Some(faultlab_http::resume::RETRY_MS)),
        ..Plan::default()
    };
    let events = args.get("afterEvents").map_or(Some(0), Value::as_u64).filter(|n| *n <= MAX_EVENTS_BEFORE_CUT)?;
    Some(match name {
        "stream_cut" => {
            let ids = args.get("ids").map_or(Some(true), Value::as_bool)?;
            Plan { ids, ..cut(events as usize) }
        }
        "stream_cut_again" => Plan { on_resume: Some(ResumeFault::CutAgain), ..cut(0) },
        "stream_retry" => Plan { retry_ms: retry, ..cut(0) },
        "empty_event_id" => Plan { empty_id_before_cut: true, ..cut(1) },
        "replay_duplicate" => Plan { on_resume: Some(ResumeFault::Duplicate), ..cut(1) },
        "replay_foreign" => Plan { on_resume: Some(ResumeFault::Foreign), ..cut(0) },
        "resume_refused" => {
            let status = args.get("status").and_then(Value::as_u64).filter(|s| *s == 404 || *s == 405)?;
            Plan { on_resume: Some(ResumeFault::Status(status as u16)), ..cut(0) }
        }
        _ => return None,
    })
}

/// Makes a session's POST response resumable (SSE responses only; JSON bodies pass unchanged).
pub async fn record(session: &Arc<Session>, response: Response, plan: Plan, shutdown: &CancellationToken) -> Response {
    session.resumable.record(response, plan, shutdown).await
}

/// A `GET` resuming a stream: `None` when the request carries no `Last-Event-ID` (a standalone stream, rmcp's).
/// Two `Last-Event-ID` headers are malformed (400): which one a replay followed would be unclear.
pub fn resume(session: &Session, headers: &http::HeaderMap) -> Option<Response> {
    let mut values = headers.get_all(LAST_EVENT_ID).iter();
    let first = values.next()?;
    if values.next().is_some() {
        let message = "Bad Request: more than one Last-Event-ID header";
        return Some(faultlab_http::rpc_error(StatusCode::BAD_REQUEST, -32600, message, None));
    }
    Some(session.resumable.resume(first.as_bytes()))
}
