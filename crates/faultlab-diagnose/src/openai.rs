//! OpenAI-message traces: a JSON array of chat messages (or an object holding it under `messages`), as written by
//! `faultlab run`, `faultlab demo` and agent frameworks.
//!
//! Strict where the shape carries meaning: every message is an object with a known `role`; a tool call has an
//! `id`, a `function.name` and `function.arguments`; a `tool` message answers a call made earlier, once. Errors
//! name the message index (from 0). Unknown extra fields are ignored, except these optional ones:
//! - `ts_ms` (or `tsMs`): milliseconds, any epoch; `timestamp`: an RFC 3339 string. Either gives the message a time.
//! - `is_error` (or `isError`) on a `tool` message: overrides reading the outcome from the text.

use crate::error::ParseError;
use crate::language;
use crate::model::{Call, CallResult, Recorded, Role, TimelineEntry, Trace, TraceFormat, Unit};
use crate::timestamp;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Parses the text of an OpenAI-message trace.
pub fn parse(text: &str) -> Result<Trace, ParseError> {
    let document: Value = serde_json::from_str(text).map_err(|e| ParseError::syntax(text, &e))?;
    let messages = match &document {
        Value::Array(messages) => messages,
        Value::Object(object) => match object.get("messages") {
            Some(Value::Array(messages)) => messages,
            Some(other) => return Err(ParseError::document(format!("`messages` is {}, not an array", kind(other)))),
            None => return Err(ParseError::document("an object without `messages`: expected an array of messages")),
        },
        other => return Err(ParseError::document(format!("expected an array of messages, found {}", kind(other)))),
    };
    let mut builder = Builder::default();
    for (index, message) in messages.iter().enumerate() {
        builder.message(index, message).map_err(|reason| ParseError::message(index, reason))?;
    }
    let timing = builder.entries.iter().any(|e| e.ts_ms.is_some());
    Ok(Trace {
        format: TraceFormat::OpenaiMessages,
        unit: Unit::Message,
        entries: builder.entries,
        calls: builder.calls,
        recorded: Recorded { arguments: true, result_text: true, agent_text: true, timing },
        lab: None,
    })
}

#[derive(Default)]
struct Builder {
    entries: Vec<TimelineEntry>,
    calls: Vec<Call>,
    /// Call id → index into `calls`.
    by_id: HashMap<String, usize>,
}

impl Builder {
    fn message(&mut self, index: usize, message: &Value) -> Result<(), String> {
        let Value::Object(message) = message else {
            return Err(format!("expected a message object, found {}", kind(message)));
        };
        let role = match message.get("role") {
            Some(Value::String(role)) => role.as_str(),
            Some(other) => return Err(format!("`role` is {}, not a string", kind(other))),
            None => return Err("no `role`".into()),
        };
        let ts_ms = time(message)?;
        let text = content(message.get("content"))?;
        let role = match role {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => {
                self.tool_calls(index, message, ts_ms)?;
                Role::Assistant
            }
            "tool" => {
                self.tool_result(index, message, ts_ms, text.clone().unwrap_or_default())?;
                Role::Tool
            }
            other => {
                return Err(format!("unknown role `{other}` (expected system, developer, user, assistant or tool)"));
            }
        };
        self.entries.push(TimelineEntry { pos: index, role, text, ts_ms });
        Ok(())
    }

    fn tool_calls(&mut self, index: usize, message: &Map<String, Value>, ts_ms: Option<f64>) -> Result<(), String> {
        let calls = match message.get("tool_calls") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(calls)) => calls,
            Some(other) => return Err(format!("`tool_calls` is {}, not an array", kind(other))),
        };
        for (j, call) in calls.iter().enumerate() {
            let at = |what: &str| format!("tool_calls[{j}]{what}");
            let Value::Object(call) = call else { return Err(format!("{} is {}, not an object", at(""), kind(call))) };
            let id = match call.get("id") {
                Some(Value::String(id)) if !id.is_empty() => id.clone(),
                Some(other) => return Err(format!("{} is {}, not a non-empty string", at(".id"), kind(other))),
                None => return Err(format!("{} has no `id`", at(""))),
            };
            if let Some(kind_of) = call.get("type")
                && kind_of != "function"
            {
                return Err(format!("{} is {kind_of}; only \"function\" calls are understood", at(".type")));
            }
            let Some(Value::Object(function)) = call.get("function") else {
                return Err(format!("{} has no `function` object", at("")));
            };
            let name = match function.get("name") {
                Some(Value::String(name)) if !name.is_empty() => name.clone(),
                _ => return Err(format!("{} is missing or not a non-empty string", at(".function.name"))),
            };
            let arguments = match function.get("arguments") {
                // Arguments the model wrote as invalid JSON are kept as their text: that is evidence, not a bad trace.
                Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())),
                Some(object @ Value::Object(_)) => object.clone(),
                Some(other) => {
                    return Err(format!("{} is {}, not a JSON string", at(".function.arguments"), kind(other)));
                }
                None => return Err(format!("{} is missing", at(".function.arguments"))),
            };
            if let Some(&earlier) = self.by_id.get(&id) {
                return Err(format!("{} `{id}` was used already, at message {}", at(".id"), self.calls[earlier].at));
            }
            self.by_id.insert(id.clone(), self.calls.len());
            self.calls.push(Call { id, tool: name, arguments: Some(arguments), at: index, ts_ms, result: None });
        }
        Ok(())
    }

    fn tool_result(
        &mut self,
        index: usize,
        message: &Map<String, Value>,
        ts_ms: Option<f64>,
        text: String,
    ) -> Result<(), String> {
        let id = match message.get("tool_call_id") {
            Some(Value::String(id)) => id,
            Some(other) => return Err(format!("`tool_call_id` is {}, not a string", kind(other))),
            None => return Err("a tool message without `tool_call_id`".into()),
        };
        let Some(&call) = self.by_id.get(id) else {
            return Err(format!("`tool_call_id` `{id}` answers no tool call made by an earlier assistant message"));
        };
        if let Some(earlier) = &self.calls[call].result {
            return Err(format!("`tool_call_id` `{id}` was answered already, at message {}", earlier.at));
        }
        let status = match message.get("is_error").or_else(|| message.get("isError")) {
            None | Some(Value::Null) => language::tool_status(&text),
            Some(Value::Bool(true)) => language::failure_kind(&text),
            Some(Value::Bool(false)) => crate::model::Outcome::Ok,
            Some(other) => return Err(format!("`is_error` is {}, not a boolean", kind(other))),
        };
        self.calls[call].result =
            Some(CallResult { at: index, ts_ms, status, text: Some(text), executed: None, fault: None });
        Ok(())
    }
}

/// A message's time in ms, from `ts_ms`/`tsMs` (a number) or `timestamp` (RFC 3339).
fn time(message: &Map<String, Value>) -> Result<Option<f64>, String> {
    if let Some((name, value)) = ["ts_ms", "tsMs"].iter().find_map(|k| message.get(*k).map(|v| (*k, v))) {
        return match value.as_f64() {
            Some(ms) if ms.is_finite() => Ok(Some(ms)),
            _ => Err(format!("`{name}` is {}, not a number of milliseconds", kind(value))),
        };
    }
    match message.get("timestamp") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => timestamp::parse_rfc3339(text)
            .map(Some)
            .ok_or_else(|| format!("`timestamp` {text:?} is not RFC 3339 (like 2026-01-02T03:04:05.250Z)")),
        Some(other) => {
            Err(format!("`timestamp` is {}, not an RFC 3339 string (for milliseconds use `ts_ms`)", kind(other)))
        }
    }
}

/// The text of `content`: a string, null, or an array of parts whose `text` parts are joined.
fn content(content: Option<&Value>) -> Result<Option<String>, String> {
    match content {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                let Value::Object(part) = part else {
                    return Err(format!("content[{i}] is {}, not a content part object", kind(part)));
                };
                // Text parts carry `text`; a refusal carries `refusal`; images and audio carry no text.
                if let Some(text) = part.get("text").or_else(|| part.get("refusal")) {
                    let Value::String(text) = text else {
                        return Err(format!("content[{i}].text is {}, not a string", kind(text)));
                    };
                    texts.push(text.as_str());
                }
            }
            Ok((!texts.is_empty()).then(|| texts.join("\n")))
        }
        Some(other) => Err(format!("`content` is {}, not a string, null or an array of parts", kind(other))),
    }
}

/// "a number", "an object", … for messages about the wrong type.
pub(crate) use faultlab_wire::json_kind as kind;
