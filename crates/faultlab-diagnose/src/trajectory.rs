//! Proxy trajectories (`faultlab proxy --record FILE`), read through `faultlab_engine::trajectory`: the same reader,
//! pairing of calls with replies and definition of a failed call as eval's grader and replay. Errors name the
//! line (from 1); blank lines are skipped; a last line cut short is an error here (a trace to diagnose should be
//! whole).
//!
//! A `tools/call` request is a call; its result's status is what the client got
//! (`faultlab_engine::trajectory::Outcome`), from the effect of the fault that acted on it (recorded on the frame
//! as `effect`; for trajectories older than that field, the catalogue's effect for the fault's name; a fault
//! neither names is an error naming the line): no matchable reply is a timeout, a lost connection is lost, an
//! error or an invalid reply is an error, and a reply the fault changed but delivered (late, repeated, reframed,
//! wrong content) is `faulted`, a failure the agent met. A reply consumed without a fault is a timeout. A call the
//! authorization in front of the proxy refused (`--auth`: a `refused` frame, never answered) is `refused`. A
//! trajectory records each call's arguments (proxies since they gained the field; older trajectories have none),
//! but no payloads and no agent messages: detectors that need what a trajectory lacks do not run.

use crate::error::{Location, ParseError};
use crate::model::{Call, CallResult, Recorded, Role, TimelineEntry, Trace, TraceFormat, Unit};
use faultlab_engine::recorder::{Direction, Event, FrameAction, FrameEvent};
use faultlab_engine::trajectory::{ReadError, Trajectory};
use serde_json::Value;

/// Parses the text of a trajectory.
pub fn parse(text: &str) -> Result<Trace, ParseError> {
    let error =
        |e: ReadError| ParseError { location: Location::Line { line: e.line, column: e.column }, reason: e.message };
    let trajectory = Trajectory::parse(text).map_err(error)?;
    if let Some(cut) = trajectory.cut_short {
        return Err(error(cut));
    }
    let entries = trajectory
        .lines
        .iter()
        .map(|line| TimelineEntry {
            pos: line.number,
            role: Role::Event,
            text: Some(match &line.record.event {
                Event::Frame(frame) => describe_frame(frame),
                other => describe(other),
            }),
            ts_ms: Some(line.record.ts_ms),
        })
        .collect();
    let calls: Vec<Call> = trajectory
        .tool_calls()
        .iter()
        .map(|exchange| {
            let request = exchange.request;
            // A call consumed on its way in with no reply injected: the fault that consumed it is what the client
            // got, at the request's line.
            let answer = exchange.reply.unwrap_or(request);
            Call {
                id: id_text(exchange.id()),
                tool: exchange.tool().unwrap_or("(unnamed)").to_owned(),
                arguments: exchange.arguments().cloned(),
                at: request.line,
                ts_ms: Some(request.ts_ms),
                result: exchange.outcome().map(|outcome| CallResult {
                    at: answer.line,
                    ts_ms: Some(answer.ts_ms),
                    status: outcome,
                    text: None,
                    executed: exchange.executed(),
                    fault: exchange.fault().map(|(_, fault)| fault.to_owned()),
                }),
            }
        })
        .collect();
    let arguments = calls.iter().any(|c| c.arguments.is_some());
    Ok(Trace {
        format: TraceFormat::ProxyTrajectory,
        unit: Unit::Line,
        entries,
        calls,
        recorded: Recorded { arguments, result_text: false, agent_text: false, timing: true },
        lab: None,
    })
}

/// An id as the timeline shows it: a string quoted, a number as is.
fn id_text(id: &Value) -> String {
    match id {
        Value::String(id) => format!("{id:?}"),
        other => other.to_string(),
    }
}

/// `client → server tools/call lab_probe · id 1 · consumed · rule r · fault http_status`
fn describe_frame(frame: &FrameEvent) -> String {
    let arrow = match frame.direction {
        Direction::ClientToServer => "client → server",
        Direction::ServerToClient => "server → client",
    };
    let mut text = arrow.to_owned();
    for part in [&frame.method, &frame.tool].into_iter().flatten() {
        text.push(' ');
        text.push_str(part);
    }
    if let Some(id) = frame.id.as_ref().filter(|id| !id.is_null()) {
        text.push_str(&format!(" · id {}", id_text(id)));
    }
    let action = match frame.action {
        FrameAction::Forwarded => "forwarded",
        FrameAction::Faulted => "faulted",
        FrameAction::Consumed => "consumed",
        FrameAction::Injected => "injected",
        FrameAction::Refused => "refused by the authorization",
    };
    text.push_str(&format!(" · {action}"));
    if let Some(refused) = &frame.refused {
        text.push_str(&format!(" · {}", refused.status));
        if let Some(error) = &refused.error {
            text.push_str(&format!(" {error}"));
        }
        if let Some(unread) = &refused.unread {
            text.push_str(&format!(" · body not read: {unread}"));
        }
    }
    if let Some(rule) = &frame.rule {
        text.push_str(&format!(" · rule {rule}"));
    }
    if let Some(fault) = &frame.fault {
        text.push_str(&format!(" · fault {fault}"));
    }
    match frame.executed {
        Some(true) => text.push_str(" · executed upstream"),
        Some(false) => text.push_str(" · not executed upstream"),
        None => {}
    }
    text
}

/// A line for events other than frames: the event's name and its fields.
fn describe(event: &Event) -> String {
    let Ok(Value::Object(record)) = serde_json::to_value(event) else { return String::new() };
    let name = record.get("event").and_then(Value::as_str).unwrap_or_default().replace('_', " ");
    let fields: Vec<String> = record
        .iter()
        .filter(|(k, v)| k.as_str() != "event" && !v.is_null())
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k} {s}"),
            other => format!("{k} {other}"),
        })
        .collect();
    if fields.is_empty() { name } else { format!("{name} · {}", fields.join(" · ")) }
}
