//! The streamed answer in each API's own SSE events: Chat Completions `chat.completion.chunk` deltas ending in
//! `data: [DONE]`; Responses typed events numbered by `sequence_number`, ending in `response.completed`; Anthropic
//! `message_start`, `content_block_*`, `message_delta`, `message_stop`.

use crate::api::{
    Api, Content, Ctx, Output, blocks, finish_reason, gemini_chunk, gemini_parts, items, output_text, refusal_part,
    response_object, response_status, stop_reason,
};
use bytes::Bytes;
use serde_json::{Value, json};

/// `s` in two pieces at a character boundary, so a client must join the deltas.
fn halves(s: &str) -> [&str; 2] {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    [&s[..mid], &s[mid..]]
}

/// One SSE event: its `event:` name, if the API names events, and its JSON data.
pub struct Event {
    pub name: Option<&'static str>,
    pub data: String,
}

impl Event {
    pub fn bytes(&self) -> Bytes {
        match self.name {
            Some(name) => Bytes::from(format!("event: {name}\ndata: {}\n\n", self.data)),
            None => Bytes::from(format!("data: {}\n\n", self.data)),
        }
    }
}

/// The streamed answer, event by event, in the API's own shapes.
pub fn events(api: Api, ctx: &Ctx, out: &Output, include_usage: bool) -> Vec<Event> {
    match api {
        Api::ChatCompletions => chat_events(ctx, out, include_usage),
        Api::Responses => responses_events(ctx, out),
        Api::Messages => messages_events(ctx, out),
        Api::Gemini => gemini_events(ctx, out),
    }
}

/// Gemini's stream (`alt=sse`): unnamed `data:` events, each a `GenerateContentResponse`; text in two pieces,
/// calls whole in one (Gemini never streams a call's `args`), the last with the `finishReason` and usage.
fn gemini_events(ctx: &Ctx, out: &Output) -> Vec<Event> {
    let event = |chunk: Value| Event { name: None, data: chunk.to_string() };
    match &out.content {
        Content::Text(text) => {
            let [first, second] = halves(text);
            vec![
                event(gemini_chunk(ctx, vec![json!({"text": first})], None)),
                event(gemini_chunk(ctx, vec![json!({"text": second})], Some(out))),
            ]
        }
        _ => vec![event(gemini_chunk(ctx, gemini_parts(out), Some(out)))],
    }
}

fn chat_events(ctx: &Ctx, out: &Output, include_usage: bool) -> Vec<Event> {
    let chunk = |delta: Value, finish: Option<&str>| Event {
        name: None,
        data: json!({"id": format!("chatcmpl-fl{}", ctx.seq), "object": "chat.completion.chunk",
            "created": ctx.created, "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        .to_string(),
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    match &out.content {
        Content::Calls(calls) => {
            for (index, call) in calls.iter().enumerate() {
                events.push(chunk(
                    json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": ""}}]}),
                    None,
                ));
                for piece in halves(&call.arguments) {
                    events
                        .push(chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), None));
                }
            }
        }
        Content::Text(text) => {
            for piece in halves(text) {
                events.push(chunk(json!({"content": piece}), None));
            }
        }
        Content::Refusal(text) => {
            for piece in halves(text) {
                events.push(chunk(json!({"refusal": piece}), None));
            }
        }
    }
    events.push(chunk(json!({}), Some(finish_reason(out))));
    if include_usage {
        let data = json!({"id": format!("chatcmpl-fl{}", ctx.seq), "object": "chat.completion.chunk",
            "created": ctx.created, "model": ctx.model, "choices": [],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}});
        events.push(Event { name: None, data: data.to_string() });
    }
    events.push(Event { name: None, data: "[DONE]".into() });
    events
}

fn responses_events(ctx: &Ctx, out: &Output) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    let mut push = |name: &'static str, data: Value| {
        let mut event = typed(name, data);
        event["sequence_number"] = json!(events.len());
        events.push(Event { name: Some(name), data: event.to_string() });
    };
    push("response.created", json!({"response": response_object(ctx, "in_progress", vec![])}));
    push("response.in_progress", json!({"response": response_object(ctx, "in_progress", vec![])}));
    let done = items(ctx, out, true);
    for (index, announced) in items(ctx, out, false).into_iter().enumerate() {
        let item_id = announced["id"].clone();
        push("response.output_item.added", json!({"output_index": index, "item": announced}));
        let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
        let with = |mut v: Value, key: &str, value: Value| {
            v[key] = value;
            v
        };
        match &out.content {
            Content::Calls(calls) => {
                let arguments = &calls[index].arguments;
                for piece in halves(arguments) {
                    push(
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": index, "delta": piece}),
                    );
                }
                push(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
                );
            }
            Content::Text(text) => {
                push("response.content_part.added", with(at.clone(), "part", output_text("")));
                // `logprobs` is required by the SDKs' event types, empty when none were asked for.
                let no_logprobs = with(at.clone(), "logprobs", json!([]));
                for piece in halves(text) {
                    push("response.output_text.delta", with(no_logprobs.clone(), "delta", json!(piece)));
                }
                push("response.output_text.done", with(no_logprobs, "text", json!(text)));
                push("response.content_part.done", with(at, "part", output_text(text)));
            }
            Content::Refusal(text) => {
                push("response.content_part.added", with(at.clone(), "part", refusal_part("")));
                for piece in halves(text) {
                    push("response.refusal.delta", with(at.clone(), "delta", json!(piece)));
                }
                push("response.refusal.done", with(at.clone(), "refusal", json!(text)));
                push("response.content_part.done", with(at, "part", refusal_part(text)));
            }
        }
        push("response.output_item.done", json!({"output_index": index, "item": done[index]}));
    }
    let status = response_status(out);
    let last = if out.cut { "response.incomplete" } else { "response.completed" };
    push(last, json!({"response": response_object(ctx, status, done)}));
    events
}

fn messages_events(ctx: &Ctx, out: &Output) -> Vec<Event> {
    let event = |name: &'static str, data: Value| Event { name: Some(name), data: typed(name, data).to_string() };
    let start = json!({"id": format!("msg_fl{}", ctx.seq), "type": "message", "role": "assistant",
        "model": ctx.model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 0, "output_tokens": 0}});
    let mut events = vec![event("message_start", json!({"message": start}))];
    for (index, announced) in blocks(out, false).into_iter().enumerate() {
        events.push(event("content_block_start", json!({"index": index, "content_block": announced})));
        let (text, kind, key) = match &out.content {
            Content::Calls(calls) => (calls[index].arguments.as_str(), "input_json_delta", "partial_json"),
            Content::Text(text) => (text.as_str(), "text_delta", "text"),
            Content::Refusal(_) => continue,
        };
        for piece in halves(text) {
            events.push(event("content_block_delta", json!({"index": index, "delta": {"type": kind, key: piece}})));
        }
        events.push(event("content_block_stop", json!({"index": index})));
    }
    events.push(event(
        "message_delta",
        json!({"delta": {"stop_reason": stop_reason(out), "stop_sequence": null}, "usage": {"output_tokens": 0}}),
    ));
    events.push(event("message_stop", json!({})));
    events
}

/// An event's data with its `type` first, as the APIs write it.
fn typed(name: &str, data: Value) -> Value {
    let mut event = serde_json::Map::from_iter([("type".to_owned(), json!(name))]);
    if let Value::Object(fields) = data {
        event.extend(fields);
    }
    Value::Object(event)
}
