//! The three API shapes: what a request carries back to the model (tool results, declared tools, streaming), and
//! a turn written as each API's JSON body and error body ([`crate::stream`]: its SSE events).
//!
//! - OpenAI Chat Completions (`POST /v1/chat/completions`): tool results are `role: tool` messages; a call is a
//!   `tool_calls` entry with `finish_reason: tool_calls`; a stream is `chat.completion.chunk` deltas ending in
//!   `data: [DONE]`.
//! - OpenAI Responses (`POST /v1/responses`): tool results are `function_call_output` input items; a call is a
//!   `function_call` output item; a stream is typed events numbered by `sequence_number`, ending in
//!   `response.completed` (no `[DONE]`).
//! - Anthropic Messages (`POST /v1/messages`): tool results are `tool_result` blocks in a user message (with
//!   `is_error`); a call is a `tool_use` block with `stop_reason: tool_use`; a stream is `message_start`,
//!   `content_block_*`, `message_delta`, `message_stop`.
//! - Gemini (`POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`): tool results are
//!   `functionResponse` parts; a call is a `functionCall` part (its `args` an object) with `finishReason: STOP`; a
//!   stream is `data:` lines each holding a `GenerateContentResponse`, the last with the `finishReason`.

use crate::script::ToolResult;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    ChatCompletions,
    Responses,
    Messages,
    Gemini,
}

/// What a Gemini path names: the model and whether it asks for a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiCall {
    pub model: String,
    pub stream: bool,
}

/// `/v1beta/models/{model}:generateContent` or `:streamGenerateContent` (also under `/v1/`).
pub fn gemini_call(path: &str) -> Option<GeminiCall> {
    let rest = path.strip_prefix("/v1beta/models/").or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, method) = rest.split_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    let stream = match method {
        "generateContent" => false,
        "streamGenerateContent" => true,
        _ => return None,
    };
    Some(GeminiCall { model: model.to_owned(), stream })
}

impl Api {
    /// The API a request path names.
    pub fn from_path(path: &str) -> Option<Self> {
        match path {
            "/v1/chat/completions" => Some(Self::ChatCompletions),
            "/v1/responses" => Some(Self::Responses),
            "/v1/messages" => Some(Self::Messages),
            _ => gemini_call(path).map(|_| Self::Gemini),
        }
    }

    /// The name a rule's `match.method` and the recording use.
    pub fn name(self) -> &'static str {
        match self {
            Self::ChatCompletions => "chat.completions",
            Self::Responses => "responses",
            Self::Messages => "messages",
            Self::Gemini => "generate_content",
        }
    }
}

/// What the endpoint reads from a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub model: String,
    pub stream: bool,
    /// Chat Completions `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    /// The tool names the request declares.
    pub tools: Vec<String>,
    /// The tool results the conversation carries, oldest first.
    pub results: Vec<ToolResult>,
}

/// Reads a request body; the error names the field to fix.
pub fn parse(api: Api, body: &Value) -> Result<Request, String> {
    if !body.is_object() {
        return Err("the request body must be a JSON object".into());
    }
    let model = body.get("model").and_then(Value::as_str).unwrap_or(crate::models::DEFAULT_MODEL).to_owned();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    let tool_name = match api {
        Api::ChatCompletions => "/function/name",
        Api::Responses | Api::Messages | Api::Gemini => "/name",
    };
    // Gemini declares its tools in `functionDeclarations` lists inside `tools`.
    let declared: Vec<&Value> = match api {
        Api::Gemini => body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
            .flatten()
            .collect(),
        _ => body.get("tools").and_then(Value::as_array).into_iter().flatten().collect(),
    };
    let tools = declared.iter().filter_map(|t| t.pointer(tool_name)?.as_str().map(String::from)).collect::<Vec<_>>();
    let results = match api {
        Api::ChatCompletions => messages(body)?
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
            .map(|m| result(m, "tool_call_id", "content"))
            .collect(),
        Api::Responses => match body.get("input") {
            Some(Value::String(_)) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call_output"))
                .map(|i| result(i, "call_id", "output"))
                .collect(),
            _ => return Err("input: a string or an array of items is required".into()),
        },
        Api::Messages => messages(body)?
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|b| ToolResult {
                is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                ..result(b, "tool_use_id", "content")
            })
            .collect(),
        Api::Gemini => body
            .get("contents")
            .and_then(Value::as_array)
            .ok_or("contents: an array is required")?
            .iter()
            .filter_map(|c| c.get("parts").and_then(Value::as_array))
            .flatten()
            .filter_map(|p| p.get("functionResponse"))
            .map(gemini_result)
            .collect(),
    };
    Ok(Request { model, stream, include_usage, tools, results })
}

fn messages(body: &Value) -> Result<&Vec<Value>, String> {
    body.get("messages").and_then(Value::as_array).ok_or_else(|| "messages: an array is required".into())
}

fn result(item: &Value, id: &str, content: &str) -> ToolResult {
    let call_id = item.get(id).and_then(Value::as_str).map(String::from);
    ToolResult { call_id, text: text_of(item.get(content).unwrap_or(&Value::Null)), is_error: false }
}

/// A Gemini `functionResponse`: its `response` object's `error` makes it a failure; its text is the `result`,
/// `output` or `content` string there, else the whole object as JSON. Its call is named by `id`, else by `name`.
fn gemini_result(response: &Value) -> ToolResult {
    let call_id = ["id", "name"].iter().find_map(|k| response.get(*k).and_then(Value::as_str)).map(String::from);
    let inner = response.get("response").unwrap_or(&Value::Null);
    let is_error = inner.get("error").is_some_and(|e| !e.is_null());
    let text = ["result", "output", "content", "error"]
        .iter()
        .find_map(|k| inner.get(*k))
        .map_or_else(|| text_of(inner), text_of);
    ToolResult { call_id, text, is_error }
}

/// A result's text: a string as is, the `text` of each part of an array joined by newlines, nothing for null.
fn text_of(content: &Value) -> String {
    match content {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str)))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// One tool call as the model asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: String,
    pub name: String,
    /// The arguments as the API carries them: JSON text (which a fault may leave unfinished or invalid).
    pub arguments: String,
}

/// What one answer says.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// One or more tool calls (two with one id under `duplicate_call_id`).
    Calls(Vec<Call>),
    Text(String),
    /// The model refuses (`refusal`): the API's refusal shape.
    Refusal(String),
}

/// A turn as it goes on the wire: what it says and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub content: Content,
    /// It stopped at the token limit (`tool_call_cut`): `length`, `max_tokens`, `incomplete`, `MAX_TOKENS`.
    pub cut: bool,
}

impl Output {
    pub fn call(id: String, name: String, arguments: String) -> Self {
        Self { content: Content::Calls(vec![Call { id, name, arguments }]), cut: false }
    }

    pub fn text(text: String) -> Self {
        Self { content: Content::Text(text), cut: false }
    }
}

/// The ids and names one answer carries.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// This request's number (ids are made from it, so they are unique for the endpoint's life).
    pub seq: u64,
    pub model: String,
    /// Seconds since the epoch.
    pub created: u64,
}

impl Ctx {
    pub fn call_id(&self, api: Api) -> String {
        match api {
            Api::Messages => format!("toolu_fl{}", self.seq),
            _ => format!("call_fl{}", self.seq),
        }
    }

    /// The id of an answer's `i`th output item (Responses) or message.
    pub(crate) fn item_id(&self, prefix: &str, i: usize) -> String {
        if i == 0 { format!("{prefix}_fl{}", self.seq) } else { format!("{prefix}_fl{}_{i}", self.seq) }
    }
}

/// The non-streaming body.
pub fn body(api: Api, ctx: &Ctx, out: &Output) -> Value {
    match api {
        Api::ChatCompletions => {
            let message = match &out.content {
                Content::Calls(calls) => {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}})
                        })
                        .collect();
                    json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": calls})
                }
                Content::Text(text) => json!({"role": "assistant", "content": text, "refusal": null}),
                Content::Refusal(text) => json!({"role": "assistant", "content": null, "refusal": text}),
            };
            json!({"id": format!("chatcmpl-fl{}", ctx.seq), "object": "chat.completion", "created": ctx.created,
                "model": ctx.model, "choices": [{"index": 0, "message": message, "logprobs": null,
                "finish_reason": finish_reason(out)}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})
        }
        Api::Responses => response_object(ctx, response_status(out), items(ctx, out, true)),
        Api::Messages => {
            json!({"id": format!("msg_fl{}", ctx.seq), "type": "message", "role": "assistant", "model": ctx.model,
                "content": blocks(out, true), "stop_reason": stop_reason(out), "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0}})
        }
        Api::Gemini => gemini_chunk(ctx, gemini_parts(out), Some(out)),
    }
}

/// Gemini's parts: `functionCall`s (`args` the arguments parsed, `{}` when they do not parse), or the text.
pub(crate) fn gemini_parts(out: &Output) -> Vec<Value> {
    match &out.content {
        Content::Calls(calls) => calls
            .iter()
            .map(|c| {
                let args = serde_json::from_str::<Value>(&c.arguments).ok().filter(Value::is_object);
                json!({"functionCall": {"name": c.name, "args": args.unwrap_or_else(|| json!({}))}})
            })
            .collect(),
        Content::Text(text) => vec![json!({"text": text})],
        Content::Refusal(_) => Vec::new(),
    }
}

/// One `GenerateContentResponse`: these parts, and the `finishReason` and usage when `last` is the whole answer.
/// A refusal's candidate has no content.
pub(crate) fn gemini_chunk(ctx: &Ctx, parts: Vec<Value>, last: Option<&Output>) -> Value {
    let mut candidate = json!({"index": 0});
    if !parts.is_empty() {
        candidate["content"] = json!({"role": "model", "parts": parts});
    }
    if let Some(out) = last {
        candidate["finishReason"] = json!(match (&out.content, out.cut) {
            (Content::Refusal(_), _) => "SAFETY",
            (_, true) => "MAX_TOKENS",
            _ => "STOP",
        });
    }
    let mut chunk = json!({"candidates": [candidate], "modelVersion": ctx.model,
        "responseId": format!("fl{}", ctx.seq)});
    if last.is_some() {
        chunk["usageMetadata"] = json!({"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0});
    }
    chunk
}

/// Chat Completions' `finish_reason`.
pub(crate) fn finish_reason(out: &Output) -> &'static str {
    match (&out.content, out.cut) {
        (Content::Refusal(_), _) => "content_filter",
        (_, true) => "length",
        (Content::Calls(_), false) => "tool_calls",
        (Content::Text(_), false) => "stop",
    }
}

/// A Responses object's `status`.
pub(crate) fn response_status(out: &Output) -> &'static str {
    if out.cut { "incomplete" } else { "completed" }
}

pub(crate) fn response_object(ctx: &Ctx, status: &str, output: Vec<Value>) -> Value {
    let usage = (status != "in_progress").then(|| {
        json!({"input_tokens": 0, "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0}, "output_tokens": 0,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0})
    });
    let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
    json!({"id": format!("resp_fl{}", ctx.seq), "object": "response", "created_at": ctx.created, "status": status,
        "model": ctx.model, "output": output, "error": null, "incomplete_details": incomplete, "instructions": null,
        "metadata": {}, "parallel_tool_calls": true, "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto",
        "tools": [], "text": {"format": {"type": "text"}}, "usage": usage})
}

/// The Responses output items, finished (`done`) or as announced before their content streams.
pub fn items(ctx: &Ctx, out: &Output, done: bool) -> Vec<Value> {
    let status = match (done, out.cut) {
        (false, _) => "in_progress",
        (true, true) => "incomplete",
        (true, false) => "completed",
    };
    let message = |content: Vec<Value>| {
        json!({"type": "message", "id": ctx.item_id("msg", 0), "status": status, "role": "assistant",
            "content": if done { content } else { Vec::new() }})
    };
    match &out.content {
        Content::Calls(calls) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({"type": "function_call", "id": ctx.item_id("fc", i), "call_id": c.id, "name": c.name,
                    "arguments": if done { c.arguments.as_str() } else { "" }, "status": status})
            })
            .collect(),
        Content::Text(text) => vec![message(vec![output_text(text)])],
        Content::Refusal(text) => vec![message(vec![refusal_part(text)])],
    }
}

pub(crate) fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": []})
}

pub(crate) fn refusal_part(text: &str) -> Value {
    json!({"type": "refusal", "refusal": text})
}

/// The Anthropic content blocks, whole or as `content_block_start` announces them. A `tool_use` block's `input`
/// is the arguments parsed, or `{}` when they do not parse (cut at the token limit).
pub(crate) fn blocks(out: &Output, done: bool) -> Vec<Value> {
    match &out.content {
        Content::Calls(calls) => calls
            .iter()
            .map(|c| {
                let parsed = serde_json::from_str(&c.arguments).ok().filter(|_| done);
                json!({"type": "tool_use", "id": c.id, "name": c.name, "input": parsed.unwrap_or_else(|| json!({}))})
            })
            .collect(),
        Content::Text(text) => vec![json!({"type": "text", "text": if done { text.as_str() } else { "" }})],
        Content::Refusal(_) => Vec::new(),
    }
}

pub(crate) fn stop_reason(out: &Output) -> &'static str {
    match (&out.content, out.cut) {
        (Content::Refusal(_), _) => "refusal",
        (_, true) => "max_tokens",
        (Content::Calls(_), false) => "tool_use",
        (Content::Text(_), false) => "end_turn",
    }
}

/// An error body in the API's own shape.
pub fn error_body(api: Api, status: u16, message: &str) -> Value {
    let kind = match status {
        400 | 413 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        503 => "overloaded_error",
        _ => "api_error",
    };
    match api {
        Api::Messages => json!({"type": "error", "error": {"type": kind, "message": message}}),
        Api::Gemini => gemini_error(status, message),
        _ => json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
    }
}

/// Gemini's error body: the HTTP code, the message and the gRPC status name.
pub fn gemini_error(status: u16, message: &str) -> Value {
    let name = match status {
        400 | 413 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        405 => "UNIMPLEMENTED",
        408 | 504 => "DEADLINE_EXCEEDED",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_are_read_from_each_api_shape() {
        let chat = json!({"model": "m", "stream": true, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
        ], "tools": [{"type": "function", "function": {"name": "echo"}}]});
        let read = parse(Api::ChatCompletions, &chat).unwrap();
        assert!(read.stream);
        assert_eq!(read.tools, ["echo"]);
        assert_eq!(read.results, [ToolResult { call_id: Some("c1".into()), text: "a\nb".into(), is_error: false }]);

        let responses = json!({"input": [{"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c1", "name": "echo", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "done"}],
            "tools": [{"type": "function", "name": "echo"}]});
        let read = parse(Api::Responses, &responses).unwrap();
        assert_eq!((read.tools.as_slice(), read.results[0].text.as_str()), (&["echo".to_owned()][..], "done"));

        let messages = json!({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": true}]}],
            "tools": [{"name": "echo", "input_schema": {}}]});
        let read = parse(Api::Messages, &messages).unwrap();
        assert_eq!(read.results, [ToolResult { call_id: Some("t1".into()), text: "boom".into(), is_error: true }]);
        assert_eq!(parse(Api::Messages, &json!({})).unwrap_err(), "messages: an array is required");
    }
}
