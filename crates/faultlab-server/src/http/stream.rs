//! Resumable streams on the server's HTTP front: which [`Plan`] a session's POST stream follows (a stream fault
//! tool's arguments), and the `GET` that resumes a stream with `Last-Event-ID`.
//!
//! Kept apart from the routing in `mod.rs`, which only calls [`plan_for`], [`record`] and [`resume`].

use super::sessions::Session;
use axum::response::Response;
use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::{
    EmptyEventId, ReplayVariant, ResumeRefused, StreamCut, StreamCutAgain, StreamReplay, StreamRetry,
};
use faultlab_http::resume::Plan;
use faultlab_wire::Frame;
use http::StatusCode;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const LAST_EVENT_ID: &str = "last-event-id";

/// The limits of the stream faults' parameters, the catalogue's (`stream_cut`).
pub use faultlab_engine::catalogue::stream_cut::{MAX_EVENTS_BEFORE_CUT, MAX_RETRY_MS};
pub use faultlab_engine::catalogue::stream_cut_again::MAX_EMPTY_RESUMES;

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

/// The plan a stream tool's call asks for: the catalogue fault the tool arms ([`fault_of_tool`]), read by
/// [`Plan::of`] as a proxy rule's is; `None` for another tool or arguments out of range.
pub fn plan_of_tool(name: &str, args: &Value) -> Option<Plan> {
    Plan::of(&fault_of_tool(name, args)?)
}

/// The catalogue stream fault a stream tool's call arms (its camelCase arguments read as the fault's parameters),
/// validated; `None` for another tool or arguments the fault does not allow. Every stream tool takes `retryMs`,
/// the priming event's `retry:` (default 3000; `stream_retry` leaves the line out when it is absent).
pub fn fault_of_tool(name: &str, args: &Value) -> Option<FaultKind> {
    let retry_ms = match args.get("retryMs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64()?),
    };
    let fault: FaultKind = match name {
        "stream_cut" => StreamCut {
            after_events: args.get("afterEvents").map_or(Some(0), Value::as_u64)?,
            ids: args.get("ids").map_or(Some(true), Value::as_bool)?,
            retry_ms,
        }
        .into(),
        "stream_cut_again" => {
            let resumes = match args.get("resumes") {
                None | Some(Value::Null) => None,
                Some(v) => Some(u32::try_from(v.as_u64()?).ok()?),
            };
            StreamCutAgain { retry_ms, resumes }.into()
        }
        "stream_retry" => StreamRetry { retry_ms }.into(),
        "empty_event_id" => EmptyEventId { retry_ms }.into(),
        "replay_duplicate" => StreamReplay { variant: ReplayVariant::Duplicate, retry_ms }.into(),
        "replay_foreign" => StreamReplay { variant: ReplayVariant::Foreign, retry_ms }.into(),
        "resume_refused" => {
            let status = u16::try_from(args.get("status")?.as_u64()?).ok()?;
            ResumeRefused { status, retry_ms }.into()
        }
        _ => return None,
    };
    fault.validate().ok().map(|()| fault)
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
