//! The control agents' side of the model hop (a task's `model`, reached at `FAULTLAB_MODEL_URL`): before each plan
//! step they ask the model (OpenAI Chat Completions, JSON, not streamed, the plan's tools declared) and take the
//! step's call from the model's tool call. What a reply comes to ([`read_reply`]) is a pure function of its
//! status, its `Retry-After` and its body; what each agent does with it is the plan semantics of `agent.rs`.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

/// The longest `Retry-After` the careful agents wait for (2 s): a built-in task's whole deadline is a few
/// seconds, so a longer wait is reported as a failure naming it rather than waited out and killed.
pub const RETRY_AFTER_LIMIT: Duration = Duration::from_secs(2);

/// The largest model answer read (1 MiB): the scripted model's answers are a few hundred bytes.
const ANSWER_LIMIT: usize = 1024 * 1024;

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCall {
    /// The call's id, as the model gave it (the tool result carries it back).
    pub id: String,
    pub tool: String,
    pub arguments: Value,
}

/// What one model request came to, as the agents see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// One whole tool call of a declared tool, with an id not used before.
    Call(ModelCall),
    /// A text answer (no tool call).
    Answer(String),
    /// A tool call that did not finish: the answer stopped at the token limit (`finish_reason: "length"`) or its
    /// arguments are not a JSON object. `call` holds its id and tool, its arguments `{}`.
    Cut { call: ModelCall, why: String },
    /// Worth asking again: an error status that says so (408, 409, 429, 5xx), an answer that could not be read, a
    /// tool the request did not declare, a call id given twice, no answer within the deadline, a lost connection.
    Transient { why: String, retry_after: Option<Duration> },
    /// Asking the same again cannot help: a refusal, a conversation too long for the model, another 4xx.
    Final(String),
}

/// One conversation with the model: the goal, then each step's call and its result.
pub struct Chat {
    client: reqwest::Client,
    url: String,
    tools: Vec<String>,
    messages: Vec<Value>,
    /// Every call id the model gave in this conversation: one given again is a duplicate.
    ids: BTreeSet<String>,
}

impl Chat {
    /// A conversation with the model at `base` (`FAULTLAB_MODEL_URL`, ending in `/v1`) about `goal`, declaring
    /// `tools`.
    pub fn new(base: &str, goal: &str, tools: Vec<String>) -> Result<Self, String> {
        let client = faultlab_client::tls::client_builder()
            .build()
            .map_err(|e| format!("cannot make the model's HTTP client: {e}"))?;
        let url = format!("{}/chat/completions", base.trim_end_matches('/'));
        Ok(Self { client, url, tools, messages: vec![json!({"role": "user", "content": goal})], ids: BTreeSet::new() })
    }

    /// Asks the model for its next turn; `deadline` bounds the whole answer (`None`: wait as long as it takes).
    pub async fn ask(&mut self, deadline: Option<Duration>) -> Reply {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|name| json!({"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}))
            .collect();
        let body = json!({"model": "faultlab-control", "messages": self.messages, "tools": tools, "stream": false});
        let mut request = self.client.post(&self.url).header("content-type", "application/json").body(body.to_string());
        if let Some(deadline) = deadline {
            request = request.timeout(deadline);
        }
        let transient = |why: String| Reply::Transient { why, retry_after: None };
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_timeout() => return transient(format!("no answer from the model within {deadline:?}")),
            Err(e) => return transient(format!("the model request failed: {e}")),
        };
        let status = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let bytes = match response.bytes().await {
            Ok(bytes) if bytes.len() > ANSWER_LIMIT => {
                return transient(format!("the model's answer is over {ANSWER_LIMIT} bytes"));
            }
            Ok(bytes) => bytes,
            Err(e) if e.is_timeout() => {
                return transient(format!("the model's answer did not end within {deadline:?}"));
            }
            Err(e) => return transient(format!("the model's answer was cut: {e}")),
        };
        let reply = read_reply(status, retry_after.as_deref(), &bytes, &self.tools, &self.ids);
        if let Reply::Call(call) | Reply::Cut { call, .. } = &reply {
            self.ids.insert(call.id.clone());
        }
        reply
    }

    /// Tells the model what its call came to: the call, then its result's text, in the conversation.
    pub fn answered(&mut self, call: &ModelCall, result: &str) {
        let function = json!({"name": call.tool, "arguments": call.arguments.to_string()});
        self.messages.push(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": call.id, "type": "function", "function": function}],
        }));
        self.messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": result}));
    }
}

/// What a Chat Completions answer comes to: `status`, its `Retry-After` (seconds), its body; `tools` the tools the
/// request declared, `ids` the call ids the conversation already holds.
pub fn read_reply(
    status: u16,
    retry_after: Option<&str>,
    body: &[u8],
    tools: &[String],
    ids: &BTreeSet<String>,
) -> Reply {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let message_of = |v: &Option<Value>| {
        v.as_ref()
            .and_then(|v| v.pointer("/error/message"))
            .and_then(Value::as_str)
            .map_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(), str::to_owned)
    };
    if status != 200 {
        let message = message_of(&parsed);
        let code = parsed.as_ref().and_then(|v| v.pointer("/error/code")).and_then(Value::as_str);
        return match status {
            408 | 409 | 429 | 500..=599 => Reply::Transient {
                why: format!("the model endpoint answered {status}: {message}"),
                retry_after: retry_after
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .and_then(|s| (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(86_400.0)))),
            },
            400 if code == Some("context_length_exceeded") => {
                Reply::Final(format!("the conversation is too long for the model: {message}"))
            }
            _ => Reply::Final(format!("the model endpoint answered {status}: {message}")),
        };
    }
    let transient = |why: String| Reply::Transient { why, retry_after: None };
    let Some(choice) = parsed.as_ref().and_then(|v| v.pointer("/choices/0")) else {
        return transient("the model's answer is not a Chat Completions answer with a choice".into());
    };
    let finish = choice.get("finish_reason").and_then(Value::as_str).unwrap_or_default();
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
        return Reply::Final(format!("the model refused: {refusal}"));
    }
    if finish == "content_filter" {
        return Reply::Final("the model's answer was stopped by its content filter".into());
    }
    let calls = message.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
    let Some(first) = calls.first() else {
        let text = message.get("content").and_then(Value::as_str).unwrap_or_default().to_owned();
        return match finish {
            "length" => transient("the model's answer stopped at its token limit".into()),
            _ => Reply::Answer(text),
        };
    };
    let id = first.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let tool = first.pointer("/function/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let given: Vec<&str> = calls.iter().filter_map(|c| c.get("id").and_then(Value::as_str)).collect();
    if id.is_empty() || ids.contains(&id) || given.iter().filter(|g| **g == id).count() > 1 {
        return transient(format!("the model gave the call id {id:?} twice"));
    }
    if !tools.contains(&tool) {
        return transient(format!("the model asked for {tool:?}, a tool the request did not declare"));
    }
    let call = ModelCall { id, tool, arguments: json!({}) };
    if finish == "length" {
        return Reply::Cut { call, why: "the answer stopped at the model's token limit inside the call".into() };
    }
    let text = first.pointer("/function/arguments").and_then(Value::as_str).unwrap_or_default();
    match serde_json::from_str::<Value>(text) {
        Ok(arguments @ Value::Object(_)) => Reply::Call(ModelCall { arguments, ..call }),
        _ => Reply::Cut { call, why: format!("the call's arguments are not a JSON object: {text:?}") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<String> {
        vec!["read_file".into(), "write_file".into()]
    }

    fn answer(finish: &str, calls: Value) -> Vec<u8> {
        json!({"choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": null, "tool_calls": calls}}]})
            .to_string()
            .into_bytes()
    }

    fn call(id: &str, name: &str, arguments: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
    }

    fn read(status: u16, retry_after: Option<&str>, body: &[u8]) -> Reply {
        read_reply(status, retry_after, body, &tools(), &BTreeSet::from(["call_0".to_owned()]))
    }

    #[test]
    fn a_whole_call_of_a_declared_tool_is_taken() {
        let body = answer("tool_calls", json!([call("call_1", "read_file", r#"{"path":"input.txt"}"#)]));
        let expected =
            ModelCall { id: "call_1".into(), tool: "read_file".into(), arguments: json!({"path": "input.txt"}) };
        assert_eq!(read(200, None, &body), Reply::Call(expected));
    }

    #[test]
    fn a_cut_call_is_cut_by_its_finish_reason_or_its_arguments() {
        let cut = answer("length", json!([call("call_1", "read_file", r#"{"path":"inp"#)]));
        assert!(
            matches!(read(200, None, &cut), Reply::Cut { call, .. } if call.tool == "read_file" && call.arguments == json!({}))
        );
        let invalid = answer("tool_calls", json!([call("call_1", "read_file", "{'path': 'input.txt',}")]));
        assert!(matches!(read(200, None, &invalid), Reply::Cut { why, .. } if why.contains("not a JSON object")));
    }

    #[test]
    fn an_unknown_tool_a_duplicate_id_and_an_unreadable_answer_are_asked_again() {
        let unknown = answer("tool_calls", json!([call("call_1", "faultlab_no_such_tool", "{}")]));
        let twice = answer("tool_calls", json!([call("call_1", "read_file", "{}"), call("call_1", "read_file", "{}")]));
        let again = answer("tool_calls", json!([call("call_0", "read_file", "{}")]));
        for body in [unknown, twice, again, b"{\"choices\": [".to_vec()] {
            assert!(matches!(read(200, None, &body), Reply::Transient { retry_after: None, .. }), "{body:?}");
        }
    }

    #[test]
    fn an_error_status_is_transient_with_its_retry_after_or_final() {
        let busy = br#"{"error": {"message": "Overloaded", "type": "server_error"}}"#;
        assert_eq!(
            read(503, None, busy),
            Reply::Transient { why: "the model endpoint answered 503: Overloaded".into(), retry_after: None }
        );
        let quota = br#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#;
        assert!(
            matches!(read(429, Some("1"), quota), Reply::Transient { retry_after: Some(d), .. } if d == Duration::from_secs(1))
        );
        let long = br#"{"error": {"message": "maximum context length", "code": "context_length_exceeded"}}"#;
        assert!(matches!(read(400, None, long), Reply::Final(why) if why.contains("too long")));
        assert!(matches!(read(401, None, b"no"), Reply::Final(why) if why.contains("401")));
    }

    #[test]
    fn a_refusal_is_final_and_a_text_answer_is_an_answer() {
        let refused = json!({"choices": [{"finish_reason": "content_filter", "message": {"content": null, "refusal": "I can't help with that."}}]});
        assert!(
            matches!(read(200, None, refused.to_string().as_bytes()), Reply::Final(why) if why.contains("refused"))
        );
        let text = json!({"choices": [{"finish_reason": "stop", "message": {"content": "0123456789abcdef"}}]});
        assert_eq!(read(200, None, text.to_string().as_bytes()), Reply::Answer("0123456789abcdef".into()));
    }
}
