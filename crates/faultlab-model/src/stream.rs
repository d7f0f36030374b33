//! The streamed answer in each API's own SSE events: Chat Completions `chat.completion.chunk` deltas ending in
//! `data: [DONE]`; Responses typed events numbered by `sequence_number`, ending in `response.completed`; Anthropic
//! `message_start`, `content_block_*`, `message_delta`, `message_stop`.

use crate::api::{Api, Ctx, Output, block, item, output_text, response_object, stop_reason};
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
    let finish = match out {
        Output::Call { name, arguments } => {
            let call_id = ctx.call_id(Api::ChatCompletions);
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
            for piece in halves(arguments) {
                events.push(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}), None));
            }
            "tool_calls"
        }
        Output::Text(text) => {
            for piece in halves(text) {
                events.push(chunk(json!({"content": piece}), None));
            }
            "stop"
        }
    };
    events.push(chunk(json!({}), Some(finish)));
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
    push("response.output_item.added", json!({"output_index": 0, "item": item(ctx, out, false)}));
    let item_id = item(ctx, out, false)["id"].clone();
    match out {
        Output::Call { arguments, .. } => {
            for piece in halves(arguments) {
                push(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": 0, "delta": piece}),
                );
            }
            push(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": 0, "arguments": arguments}),
            );
        }
        Output::Text(text) => {
            let at = json!({"item_id": item_id, "output_index": 0, "content_index": 0});
            let with = |mut v: Value, key: &str, value: Value| {
                v[key] = value;
                v
            };
            push("response.content_part.added", with(at.clone(), "part", output_text("")));
            // `logprobs` is required by the SDKs' event types, empty when none were asked for.
            let no_logprobs = with(at.clone(), "logprobs", json!([]));
            for piece in halves(text) {
                push("response.output_text.delta", with(no_logprobs.clone(), "delta", json!(piece)));
            }
            push("response.output_text.done", with(no_logprobs, "text", json!(text)));
            push("response.content_part.done", with(at, "part", output_text(text)));
        }
    }
    push("response.output_item.done", json!({"output_index": 0, "item": item(ctx, out, true)}));
    push("response.completed", json!({"response": response_object(ctx, "completed", vec![item(ctx, out, true)])}));
    events
}

fn messages_events(ctx: &Ctx, out: &Output) -> Vec<Event> {
    let event = |name: &'static str, data: Value| Event { name: Some(name), data: typed(name, data).to_string() };
    let start = json!({"id": format!("msg_fl{}", ctx.seq), "type": "message", "role": "assistant",
        "model": ctx.model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 0, "output_tokens": 0}});
    let mut events = vec![
        event("message_start", json!({"message": start})),
        event("content_block_start", json!({"index": 0, "content_block": block(ctx, out, false)})),
    ];
    let (text, kind, key) = match out {
        Output::Call { arguments, .. } => (arguments, "input_json_delta", "partial_json"),
        Output::Text(text) => (text, "text_delta", "text"),
    };
    for piece in halves(text) {
        events.push(event("content_block_delta", json!({"index": 0, "delta": {"type": kind, key: piece}})));
    }
    events.push(event("content_block_stop", json!({"index": 0})));
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
