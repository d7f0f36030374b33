//! Proxy trajectories (`faultlab proxy --record FILE`): one JSON object per line, as
//! `faultlab_engine::recorder::Record` writes them. Errors name the line (from 1); blank lines are skipped.
//!
//! A `tools/call` frame from client to server is a call; the server-to-client frame with the same id (in the same
//! scope) is its result. What the client got decides the status: a reply a fault acted on has the fault's effect
//! (recorded on the frame as `effect`; for trajectories older than that field, the catalogue's effect for the
//! fault's name): a timeout or a lost connection as such, an error or an invalid reply as an error, and a result,
//! the semantic faults' plausible-but-wrong content included, as a success. A reply consumed without a fault is a
//! timeout. A fault this version does not know, on a line without `effect`, is an error naming the line.
//! A trajectory records each call's arguments (proxies since they gained the field; older trajectories have none),
//! but no payloads and no agent messages: detectors that need what a trajectory lacks do not run.

use crate::error::{ParseError, strip_position};
use crate::model::{Call, CallResult, Entry, Recorded, Role, Status, Trace, TraceFormat, Unit};
use crate::openai::kind;
use faultlab_engine::catalogue::{Effect, FaultKind};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Parses the text of a trajectory.
pub fn parse(text: &str) -> Result<Trace, ParseError> {
    let mut entries = Vec::new();
    let mut calls: Vec<Call> = Vec::new();
    // (scope, id) → index into `calls` of a call still waiting for its reply.
    let mut open: HashMap<(String, String), usize> = HashMap::new();
    // What the fault that consumed a call on its way in (`instead` or `before` mode) left the client with, by
    // call index.
    let mut consumed: HashMap<usize, Option<Status>> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| ParseError {
            location: crate::error::Location::Line { line: number, column: Some(e.column()) },
            reason: format!("invalid JSON: {}", strip_position(&e)),
        })?;
        let Value::Object(record) = value else {
            return Err(ParseError::line(number, format!("expected an event object, found {}", kind(&value))));
        };
        let fail = |reason: String| ParseError::line(number, reason);
        let event = match record.get("event") {
            Some(Value::String(event)) => event.as_str(),
            Some(other) => return Err(fail(format!("`event` is {}, not a string", kind(other)))),
            None => return Err(fail("no `event`".into())),
        };
        let ts_ms = match record.get("tsMs").map(Value::as_f64) {
            Some(Some(ms)) => ms,
            Some(None) => return Err(fail("`tsMs` is not a number of milliseconds".into())),
            None => return Err(fail("no `tsMs`".into())),
        };
        let scope = optional_string(&record, "scope").map_err(&fail)?.unwrap_or_default();
        let text = if event == "frame" {
            let frame = Frame::read(&record).map_err(&fail)?;
            let key = (scope.clone(), frame.id.clone().unwrap_or_default());
            if frame.to_server && frame.method.as_deref() == Some("tools/call") && frame.id.is_some() {
                let index = calls.len();
                if frame.action == "consumed" {
                    let fault = match &frame.fault {
                        Some(fault) => Some(fault_status(fault, frame.effect).map_err(&fail)?),
                        None => None,
                    };
                    consumed.insert(index, fault);
                }
                calls.push(Call {
                    id: key.1.clone(),
                    tool: frame.tool.clone().unwrap_or_else(|| "(unnamed)".into()),
                    arguments: record.get("arguments").cloned(),
                    at: number,
                    ts_ms: Some(ts_ms),
                    result: None,
                });
                open.insert(key, index);
            } else if !frame.to_server
                && frame.id.is_some()
                && let Some(index) = open.remove(&key)
            {
                let status = match (&frame.fault, frame.action.as_str()) {
                    (Some(fault), _) => fault_status(fault, frame.effect).map_err(&fail)?,
                    (None, "consumed") => Status::Timeout,
                    (None, _) => Status::Success,
                };
                calls[index].result =
                    Some(CallResult { at: number, ts_ms: Some(ts_ms), status, text: None, executed: frame.executed });
            }
            frame.describe()
        } else {
            describe(event, &record)
        };
        entries.push(Entry { pos: number, role: Role::Event, text: Some(text), ts_ms: Some(ts_ms) });
    }
    // A call consumed on its way in with no reply injected: the fault that consumed it is what the client got.
    for (index, status) in consumed {
        if calls[index].result.is_none()
            && let Some(status) = status
        {
            let (at, ts_ms) = (calls[index].at, calls[index].ts_ms);
            calls[index].result = Some(CallResult { at, ts_ms, status, text: None, executed: Some(false) });
        }
    }
    let arguments = calls.iter().any(|c| c.arguments.is_some());
    Ok(Trace {
        format: TraceFormat::ProxyTrajectory,
        unit: Unit::Line,
        entries,
        calls,
        recorded: Recorded { arguments, result_text: false, agent_text: false, timing: true },
    })
}

/// What the client got when `fault` (a catalogue fault name) acted on a reply: its recorded `effect`, else the
/// catalogue's effect for that name.
fn fault_status(fault: &str, effect: Option<Effect>) -> Result<Status, String> {
    let effect = effect.or_else(|| FaultKind::effect_of(fault)).ok_or_else(|| {
        format!("fault {fault:?} is not in this version's catalogue and the line records no `effect`")
    })?;
    Ok(match effect {
        Effect::Timeout => Status::Timeout,
        Effect::TransportLoss => Status::Lost,
        Effect::Error | Effect::Invalid => Status::Error,
        // The reply still arrives and reads as a success (the semantic faults' wrong content included: the client
        // cannot tell it from a good answer).
        Effect::Result | Effect::WrongData => Status::Success,
    })
}

/// The fields of a `frame` event.
struct Frame {
    to_server: bool,
    action: String,
    id: Option<String>,
    method: Option<String>,
    tool: Option<String>,
    rule: Option<String>,
    fault: Option<String>,
    effect: Option<Effect>,
    executed: Option<bool>,
}

impl Frame {
    fn read(record: &Map<String, Value>) -> Result<Self, String> {
        let to_server = match optional_string(record, "direction")?.as_deref() {
            Some("client_to_server") => true,
            Some("server_to_client") => false,
            Some(other) => return Err(format!("`direction` {other:?} is not client_to_server or server_to_client")),
            None => return Err("a frame without `direction`".into()),
        };
        let action = match optional_string(record, "action")? {
            Some(action) if ["forwarded", "faulted", "consumed", "injected"].contains(&action.as_str()) => action,
            Some(other) => return Err(format!("`action` {other:?} is not forwarded, faulted, consumed or injected")),
            None => return Err("a frame without `action`".into()),
        };
        let id = match record.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(format!("{id:?}")),
            Some(Value::Number(id)) => Some(id.to_string()),
            Some(other) => return Err(format!("`id` is {}, not a string or a number", kind(other))),
        };
        let executed = match record.get("executed") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => return Err(format!("`executed` is {}, not a boolean", kind(other))),
        };
        let effect = match record.get("effect") {
            None | Some(Value::Null) => None,
            Some(effect) => Some(
                serde_json::from_value(effect.clone())
                    .map_err(|e| format!("`effect` {effect} is not an effect: {e}"))?,
            ),
        };
        Ok(Self {
            effect,
            to_server,
            action,
            id,
            method: optional_string(record, "method")?,
            tool: optional_string(record, "tool")?,
            rule: optional_string(record, "rule")?,
            fault: optional_string(record, "fault")?,
            executed,
        })
    }

    /// `client → server  tools/call lab_probe  id 1  consumed · rule r · fault http_status`
    fn describe(&self) -> String {
        let arrow = if self.to_server { "client → server" } else { "server → client" };
        let mut text = arrow.to_owned();
        for part in [&self.method, &self.tool].into_iter().flatten() {
            text.push(' ');
            text.push_str(part);
        }
        if let Some(id) = &self.id {
            text.push_str(&format!(" · id {id}"));
        }
        text.push_str(&format!(" · {}", self.action));
        if let Some(rule) = &self.rule {
            text.push_str(&format!(" · rule {rule}"));
        }
        if let Some(fault) = &self.fault {
            text.push_str(&format!(" · fault {fault}"));
        }
        match self.executed {
            Some(true) => text.push_str(" · executed upstream"),
            Some(false) => text.push_str(" · not executed upstream"),
            None => {}
        }
        text
    }
}

/// A line for events other than frames: the event's name and its fields.
fn describe(event: &str, record: &Map<String, Value>) -> String {
    let fields: Vec<String> = record
        .iter()
        .filter(|(k, v)| !["event", "tsMs", "scope"].contains(&k.as_str()) && !v.is_null())
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k} {s}"),
            other => format!("{k} {other}"),
        })
        .collect();
    if fields.is_empty() {
        event.replace('_', " ")
    } else {
        format!("{} · {}", event.replace('_', " "), fields.join(" · "))
    }
}

fn optional_string(record: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match record.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` is {}, not a string", kind(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call to `tool` with id 1 and the reply a fault acted on (`reply` holds the reply's extra fields).
    fn faulted(reply: &str) -> String {
        let call = r#"{"tsMs":1.0,"scope":"stdio","event":"frame","direction":"client_to_server","action":"forwarded","id":1,"method":"tools/call","tool":"write_file","rule":null,"fault":null,"executed":null,"bytes":80}"#;
        let head = r#"{"tsMs":2.0,"scope":"stdio","event":"frame","direction":"server_to_client","action":"faulted","id":1,"method":null,"tool":null,"rule":"r","executed":true,"bytes":60"#;
        format!("{call}\n{head},{reply}}}\n")
    }

    fn status(reply: &str) -> Result<Status, ParseError> {
        let trace = parse(&faulted(reply))?;
        Ok(trace.calls[0].result.as_ref().unwrap().status)
    }

    #[test]
    fn a_recorded_effect_decides_what_the_client_got() {
        assert_eq!(status(r#""fault":"duplicate","effect":"result""#).unwrap(), Status::Success);
        assert_eq!(status(r#""fault":"some_later_fault","effect":"timeout""#).unwrap(), Status::Timeout);
        assert_eq!(status(r#""fault":"some_later_fault","effect":"transport_loss""#).unwrap(), Status::Lost);
    }

    #[test]
    fn without_an_effect_the_catalogue_says_and_an_unknown_fault_is_an_error_not_a_guess() {
        assert_eq!(status(r#""fault":"wrong_id""#).unwrap(), Status::Timeout);
        assert_eq!(status(r#""fault":"disconnect""#).unwrap(), Status::Lost);
        assert_eq!(status(r#""fault":"stale""#).unwrap(), Status::Success);
        assert_eq!(status(r#""fault":"auth_expired""#).unwrap(), Status::Error);
        let err = status(r#""fault":"some_later_fault""#).unwrap_err().to_string();
        assert!(err.contains("some_later_fault") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn every_catalogue_fault_has_a_status_by_its_name() {
        for (name, _) in FaultKind::examples() {
            assert!(status(&format!(r#""fault":"{name}""#)).is_ok(), "{name}");
        }
    }
}
