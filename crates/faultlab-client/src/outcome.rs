//! What one call came to, after checking the reply is valid JSON-RPC and a valid MCP result.

use crate::recovery::Recovery;
use faultlab_wire::Frame;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Exactly one of these ends every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Error,
    Timeout,
    Cancelled,
    TransportLoss,
}

/// Why a call ended in [`Outcome::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A valid result with `isError: true`: the tool ran and failed (the only kind worth retrying).
    ToolError,
    /// A JSON-RPC error response.
    ProtocolError,
    /// A reply that breaks JSON-RPC or the MCP result schema.
    InvalidResponse,
    /// HTTP answered with an error status instead of a message.
    HttpStatus,
}

/// One call as the client saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// Milliseconds from sending the request to its outcome (tokio clock).
    pub duration_ms: f64,
    /// When the request was sent: wall-clock milliseconds since the Unix epoch (traces stamp their messages
    /// with it, so a reader can tell an immediate retry from one after a backoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<f64>,
    /// The request id used on the wire.
    pub request_id: Value,
    /// The `result` of the reply, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC `error` of the reply, or a description of what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// HTTP status when the call was answered with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// What the client did to recover the call (resumed streams, a new session, a protocol retry).
    #[serde(default, skip_serializing_if = "Recovery::is_empty")]
    pub recovery: Recovery,
    /// What the client saw of the task, when the call was answered with a task handle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<crate::tasks::TaskRecord>,
    /// How many times the client retried the call with `inputResponses` and `requestState`, when the server
    /// answered `resultType: "input_required"` (2026-07-28 multi-round-trip requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_rounds: Option<u32>,
    /// What the tool's `tools/list` entry said of tasks, and whether the client therefore made the call
    /// task-augmented; present when the client supports tasks (it declared the extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<crate::tasks::TaskSupportRecord>,
}

impl Observation {
    pub(crate) fn new(outcome: Outcome, request_id: Value, duration_ms: f64) -> Self {
        Self {
            outcome,
            error_kind: None,
            duration_ms,
            started_ms: None,
            request_id,
            result: None,
            error: None,
            http_status: None,
            recovery: Recovery::default(),
            task: None,
            input_rounds: None,
            task_support: None,
        }
    }

    /// The text of the result's text content blocks, joined with newlines.
    pub fn text(&self) -> String {
        let blocks = self.result.as_ref().and_then(|r| r.get("content")).and_then(Value::as_array);
        blocks
            .into_iter()
            .flatten()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What went wrong, in one line (empty for a success).
    pub fn message(&self) -> String {
        match (&self.error, self.outcome) {
            (Some(Value::String(s)), _) => s.clone(),
            (Some(e), _) => e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_owned),
            (None, Outcome::Error) => self.text(),
            _ => String::new(),
        }
    }
}

/// Classifies the reply to a `tools/call`: success, a tool error, a protocol error, or an invalid reply.
pub(crate) fn classify_tool_reply(frame: &Frame, mut obs: Observation) -> Observation {
    let Some(value) = frame.value() else {
        return invalid(obs, "the reply is not JSON");
    };
    if value.get("jsonrpc") != Some(&Value::from("2.0")) {
        return invalid(obs, "the reply's jsonrpc member is not \"2.0\"");
    }
    match (value.get("result"), value.get("error")) {
        (Some(_), Some(_)) => invalid(obs, "the reply has both a result and an error"),
        (None, Some(error)) => {
            obs.outcome = Outcome::Error;
            obs.error_kind = Some(ErrorKind::ProtocolError);
            obs.error = Some(error.clone());
            obs
        }
        (Some(result), None) => {
            if let Err(why) = check_call_result(result) {
                obs.result = Some(result.clone());
                return invalid(obs, &why);
            }
            obs.result = Some(result.clone());
            if result.get("isError") == Some(&Value::Bool(true)) {
                obs.outcome = Outcome::Error;
                obs.error_kind = Some(ErrorKind::ToolError);
            } else {
                obs.outcome = Outcome::Success;
            }
            obs
        }
        (None, None) => invalid(obs, "the reply has neither a result nor an error"),
    }
}

fn invalid(mut obs: Observation, why: &str) -> Observation {
    obs.outcome = Outcome::Error;
    obs.error_kind = Some(ErrorKind::InvalidResponse);
    obs.error = Some(Value::from(why));
    obs
}

/// The parts of the `CallToolResult` schema a client relies on.
fn check_call_result(result: &Value) -> Result<(), String> {
    // 2026-07-28 defines these; any other value is not a result the client can read (never taken as complete).
    match result.get("resultType") {
        None => {}
        Some(Value::String(known)) if ["complete", "input_required", "task"].contains(&known.as_str()) => {}
        Some(other) => return Err(format!("the result's resultType {other} is not one MCP defines")),
    }
    let content = result.get("content").and_then(Value::as_array).ok_or("the result has no content array")?;
    for (i, block) in content.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).ok_or(format!("content[{i}] has no type"))?;
        if kind == "text" && !block.get("text").is_some_and(Value::is_string) {
            return Err(format!("content[{i}].text is not a string"));
        }
    }
    match result.get("isError") {
        None | Some(Value::Bool(_)) => Ok(()),
        Some(_) => Err("isError is not a boolean".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(json: &str) -> Observation {
        classify_tool_reply(&Frame::parse(json.as_bytes().to_vec()), Observation::new(Outcome::Success, 1.into(), 0.0))
    }

    #[test]
    fn classifies_replies() {
        let ok = classify(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#);
        assert_eq!((ok.outcome, ok.text()), (Outcome::Success, "hi".into()));
        let tool = classify(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#);
        assert_eq!(tool.error_kind, Some(ErrorKind::ToolError));
        let proto = classify(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"nope"}}"#);
        assert_eq!((proto.error_kind, proto.message()), (Some(ErrorKind::ProtocolError), "nope".into()));
        for bad in [
            r#"{"id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":42}]}}"#,
        ] {
            assert_eq!(classify(bad).error_kind, Some(ErrorKind::InvalidResponse), "{bad}");
        }
    }
}
