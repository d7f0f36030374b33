//! Every OpenAI body and event carries the fields the pinned `openai` Python package's types require (openai
//! 3.57.0, interop/frameworks/constraints.txt): a field those types declare without a default must be present, or
//! a client that validates the body (pydantic) refuses it.

use crate::{Endpoint, SCRIPT, request, sse};
use serde_json::Value;

/// The required fields of `openai.types.responses.Response` and of what it holds, as JSON pointers.
const RESPONSE: &[&str] =
    &["/id", "/created_at", "/model", "/object", "/output", "/parallel_tool_calls", "/tool_choice", "/tools"];
/// `ResponseUsage` with its `InputTokensDetails` and `OutputTokensDetails` (on a completed response).
const USAGE: &[&str] = &[
    "/usage/input_tokens",
    "/usage/input_tokens_details/cache_write_tokens",
    "/usage/input_tokens_details/cached_tokens",
    "/usage/output_tokens",
    "/usage/output_tokens_details/reasoning_tokens",
    "/usage/total_tokens",
];
/// `ResponseFunctionToolCall` and `ResponseOutputMessage` (with `ResponseOutputText`).
const CALL_ITEM: &[&str] = &["/arguments", "/call_id", "/name", "/type"];
const MESSAGE_ITEM: &[&str] = &["/id", "/content", "/role", "/status", "/type"];
const OUTPUT_TEXT: &[&str] = &["/annotations", "/text", "/type"];

/// The required fields of each streamed Responses event, beyond `type` and `sequence_number`.
fn event_fields(name: &str) -> &'static [&'static str] {
    match name {
        "response.created" | "response.in_progress" | "response.completed" => &["/response"],
        "response.output_item.added" | "response.output_item.done" => &["/item", "/output_index"],
        "response.function_call_arguments.delta" => &["/delta", "/item_id", "/output_index"],
        "response.function_call_arguments.done" => &["/arguments", "/item_id", "/output_index"],
        "response.content_part.added" | "response.content_part.done" => {
            &["/content_index", "/item_id", "/output_index", "/part"]
        }
        "response.output_text.delta" => &["/content_index", "/delta", "/item_id", "/logprobs", "/output_index"],
        "response.output_text.done" => &["/content_index", "/item_id", "/logprobs", "/output_index", "/text"],
        other => panic!("an event the types do not know: {other}"),
    }
}

fn missing(value: &Value, fields: &[&str], at: &str) -> Vec<String> {
    fields.iter().filter(|f| value.pointer(f).is_none()).map(|f| format!("{at}{f}")).collect()
}

fn item_missing(item: &Value, at: &str) -> Vec<String> {
    match item["type"].as_str() {
        Some("function_call") => missing(item, CALL_ITEM, at),
        Some("message") => {
            let mut gaps = missing(item, MESSAGE_ITEM, at);
            for (i, part) in item["content"].as_array().into_iter().flatten().enumerate() {
                gaps.extend(missing(part, OUTPUT_TEXT, &format!("{at}/content/{i}")));
            }
            gaps
        }
        other => vec![format!("{at}/type: {other:?}")],
    }
}

fn response_missing(response: &Value, at: &str) -> Vec<String> {
    let mut gaps = missing(response, RESPONSE, at);
    if response["status"] == "completed" {
        gaps.extend(missing(response, USAGE, at));
    }
    for (i, item) in response["output"].as_array().into_iter().flatten().enumerate() {
        gaps.extend(item_missing(item, &format!("{at}/output/{i}")));
    }
    gaps
}

#[tokio::test]
async fn every_responses_body_and_event_carries_the_fields_the_pinned_openai_types_require() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    let path = "/v1/responses";
    let mut gaps = Vec::new();
    // A call (the first turn) and a text answer (after both results).
    for results in [&[][..], &[("c1", "hello"), ("c2", "3")][..]] {
        let body: Value = endpoint.post(path, &request(path, false, results)).await.json().await.unwrap();
        gaps.extend(response_missing(&body, &format!("body after {} results", results.len())));
        let text = endpoint.post(path, &request(path, true, results)).await.text().await.unwrap();
        for (name, data) in sse(&text) {
            let name = name.expect("every Responses event is named");
            let event: Value = serde_json::from_str(&data).unwrap();
            let at = format!("{name} after {} results", results.len());
            gaps.extend(missing(&event, &["/type", "/sequence_number"], &at));
            gaps.extend(missing(&event, event_fields(&name), &at));
            if let Some(response) = event.get("response") {
                gaps.extend(response_missing(response, &format!("{at}: response")));
            }
            if let Some(item) = event.get("item") {
                gaps.extend(item_missing(item, &format!("{at}: item")));
            }
        }
    }
    assert!(gaps.is_empty(), "required by the pinned openai types, missing: {gaps:#?}");
}

#[tokio::test]
async fn chat_completions_bodies_and_chunks_carry_the_fields_the_pinned_openai_types_require() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    let path = "/v1/chat/completions";
    let mut gaps = Vec::new();
    for results in [&[][..], &[("c1", "hello"), ("c2", "3")][..]] {
        let body: Value = endpoint.post(path, &request(path, false, results)).await.json().await.unwrap();
        gaps.extend(missing(&body, &["/id", "/choices", "/created", "/model", "/object"], "chat.completion"));
        let choice = &body["choices"][0];
        gaps.extend(missing(choice, &["/finish_reason", "/index", "/message/role"], "chat.completion choice"));
        let mut with_usage = request(path, true, results);
        with_usage["stream_options"] = serde_json::json!({"include_usage": true});
        let text = endpoint.post(path, &with_usage).await.text().await.unwrap();
        for (_, data) in sse(&text).iter().filter(|(_, data)| data != "[DONE]") {
            let chunk: Value = serde_json::from_str(data).unwrap();
            gaps.extend(missing(&chunk, &["/id", "/choices", "/created", "/model", "/object"], "chunk"));
            for choice in chunk["choices"].as_array().unwrap() {
                gaps.extend(missing(choice, &["/delta", "/index"], "chunk choice"));
            }
        }
    }
    assert!(gaps.is_empty(), "required by the pinned openai types, missing: {gaps:#?}");
}
