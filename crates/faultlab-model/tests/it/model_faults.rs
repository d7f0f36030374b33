//! The model hop's own faults (`tool_call_cut`, `overloaded`, `token_quota`, …) in every API shape they apply to,
//! JSON and streamed, read back the way a client reads them: the calls, text and stop reason an SDK would see.

use crate::{Endpoint, GEMINI, SCRIPT, gemini_path, request, sse};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

pub const PATHS: [&str; 4] = ["/v1/chat/completions", "/v1/responses", "/v1/messages", GEMINI];

/// Where a request to `path` goes (Gemini's stream has a path of its own).
fn url_path(path: &str, stream: bool) -> &str {
    if path == GEMINI { gemini_path(stream) } else { path }
}

fn every_request(fault: &str) -> String {
    format!("rules:\n  - name: hop\n    fault: {fault}\n")
}

/// What a client makes of one answer.
#[derive(Debug, Default, PartialEq)]
pub struct Seen {
    /// (id, name, arguments as text), in order.
    pub calls: Vec<(String, String, String)>,
    pub text: String,
    pub refusal: String,
    /// `finish_reason`, `status` (with `incomplete_details.reason`), `stop_reason`.
    pub stop: String,
    /// The last event's name or data type (streams).
    pub last: String,
}

/// Reads a 200 answer of `path` as its SDK would: a JSON body, or the stream's deltas joined.
pub fn read(path: &str, stream: bool, text: &str) -> Seen {
    let mut seen = Seen::default();
    if !stream {
        let body: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
        read_whole(path, &body, &mut seen);
        return seen;
    }
    if path == GEMINI {
        for (_, data) in sse(text) {
            read_gemini(&serde_json::from_str(&data).unwrap(), &mut seen);
        }
        return seen;
    }
    let events = sse(text);
    seen.last = events.last().map(|(name, data)| name.clone().unwrap_or_else(|| data.clone())).unwrap_or_default();
    // Calls by index (Chat) or block index (Messages).
    let mut calls: BTreeMap<u64, (String, String, String)> = BTreeMap::new();
    for (name, data) in &events {
        if data == "[DONE]" {
            continue;
        }
        let event: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{path}: {e}: {data}"));
        match path {
            "/v1/chat/completions" => {
                let choice = &event["choices"][0];
                let delta = &choice["delta"];
                seen.text += delta["content"].as_str().unwrap_or("");
                seen.refusal += delta["refusal"].as_str().unwrap_or("");
                for call in delta["tool_calls"].as_array().into_iter().flatten() {
                    let entry = calls.entry(call["index"].as_u64().unwrap()).or_default();
                    if let Some(id) = call["id"].as_str() {
                        entry.0 = id.into();
                    }
                    if let Some(name) = call["function"]["name"].as_str() {
                        entry.1 = name.into();
                    }
                    entry.2 += call["function"]["arguments"].as_str().unwrap_or("");
                }
                if let Some(finish) = choice["finish_reason"].as_str() {
                    seen.stop = finish.into();
                }
            }
            "/v1/responses" => match name.as_deref() {
                Some("response.completed" | "response.incomplete") => {
                    let mut whole = Seen::default();
                    read_whole(path, &event["response"], &mut whole);
                    seen.stop = whole.stop;
                    let joined: Vec<_> = calls.values().cloned().collect();
                    assert_eq!(joined, whole.calls, "the deltas join into the final response's calls");
                }
                Some("response.output_item.added") if event["item"]["type"] == "function_call" => {
                    let item = &event["item"];
                    let at = event["output_index"].as_u64().unwrap();
                    calls.insert(
                        at,
                        (
                            item["call_id"].as_str().unwrap().into(),
                            item["name"].as_str().unwrap().into(),
                            String::new(),
                        ),
                    );
                }
                Some("response.function_call_arguments.delta") => {
                    calls.get_mut(&event["output_index"].as_u64().unwrap()).unwrap().2 +=
                        event["delta"].as_str().unwrap();
                }
                Some("response.output_text.delta") => seen.text += event["delta"].as_str().unwrap(),
                Some("response.refusal.delta") => seen.refusal += event["delta"].as_str().unwrap(),
                _ => {}
            },
            _ => match name.as_deref() {
                Some("content_block_start") if event["content_block"]["type"] == "tool_use" => {
                    let block = &event["content_block"];
                    calls.insert(
                        event["index"].as_u64().unwrap(),
                        (block["id"].as_str().unwrap().into(), block["name"].as_str().unwrap().into(), String::new()),
                    );
                }
                Some("content_block_delta") => {
                    let delta = &event["delta"];
                    match delta["type"].as_str() {
                        Some("input_json_delta") => {
                            calls.get_mut(&event["index"].as_u64().unwrap()).unwrap().2 +=
                                delta["partial_json"].as_str().unwrap();
                        }
                        _ => seen.text += delta["text"].as_str().unwrap_or(""),
                    }
                }
                Some("message_delta") => seen.stop = event["delta"]["stop_reason"].as_str().unwrap().into(),
                _ => {}
            },
        }
    }
    seen.calls = calls.into_values().collect();
    seen
}

/// One `GenerateContentResponse`, added to what was seen before it.
fn read_gemini(chunk: &Value, seen: &mut Seen) {
    if let Some(error) = chunk.get("error") {
        seen.last = error["status"].as_str().unwrap_or_default().into();
        return;
    }
    let candidate = &chunk["candidates"][0];
    for part in candidate["content"]["parts"].as_array().into_iter().flatten() {
        if let Some(call) = part.get("functionCall") {
            seen.calls.push((String::new(), str(&call["name"]), call["args"].to_string()));
        }
        seen.text += part["text"].as_str().unwrap_or("");
    }
    if let Some(finish) = candidate["finishReason"].as_str() {
        seen.stop = finish.into();
    }
}

fn read_whole(path: &str, body: &Value, seen: &mut Seen) {
    match path {
        GEMINI => read_gemini(body, seen),
        "/v1/chat/completions" => {
            let choice = &body["choices"][0];
            let message = &choice["message"];
            seen.text = message["content"].as_str().unwrap_or("").into();
            seen.refusal = message["refusal"].as_str().unwrap_or("").into();
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let f = &call["function"];
                seen.calls.push((str(&call["id"]), str(&f["name"]), str(&f["arguments"])));
            }
            seen.stop = str(&choice["finish_reason"]);
        }
        "/v1/responses" => {
            for item in body["output"].as_array().into_iter().flatten() {
                match item["type"].as_str() {
                    Some("function_call") => {
                        seen.calls.push((str(&item["call_id"]), str(&item["name"]), str(&item["arguments"])))
                    }
                    _ => {
                        for part in item["content"].as_array().into_iter().flatten() {
                            seen.text += part["text"].as_str().unwrap_or("");
                            seen.refusal += part["refusal"].as_str().unwrap_or("");
                        }
                    }
                }
            }
            seen.stop = match body["incomplete_details"]["reason"].as_str() {
                Some(reason) => format!("{} {reason}", str(&body["status"])),
                None => str(&body["status"]),
            };
        }
        _ => {
            for block in body["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("tool_use") => {
                        seen.calls.push((str(&block["id"]), str(&block["name"]), block["input"].to_string()))
                    }
                    _ => seen.text += block["text"].as_str().unwrap_or(""),
                }
            }
            seen.stop = str(&body["stop_reason"]);
        }
    }
}

fn str(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// The scripted first turn's call arguments (`echo`, `{text: hello}`).
const ARGUMENTS: &str = r#"{"text":"hello"}"#;

/// Each API, JSON and streamed: the first turn's answer under `fault`, as the client reads it.
async fn each_shape(fault: &str) -> (Endpoint, Vec<(&'static str, bool, u16, String)>) {
    let endpoint = Endpoint::start(SCRIPT, &every_request(fault)).await;
    let mut answers = Vec::new();
    for path in PATHS {
        for stream in [false, true] {
            let response = endpoint.post(url_path(path, stream), &request(path, stream, &[])).await;
            let status = response.status().as_u16();
            answers.push((path, stream, status, response.text().await.unwrap()));
        }
    }
    (endpoint, answers)
}

/// [`each_shape`] for a fault that answers 200 in every shape: each answer as the client reads it, with where it
/// came from (`PATH stream=BOOL`, for messages).
async fn each_shape_read(fault: &str) -> (Endpoint, Vec<(&'static str, bool, Seen, String)>) {
    let (endpoint, answers) = each_shape(fault).await;
    let read = answers.into_iter().map(|(path, stream, status, text)| {
        let at = format!("{path} stream={stream}");
        assert_eq!(status, 200, "{at}");
        (path, stream, read(path, stream, &text), at)
    });
    let read = read.collect();
    (endpoint, read)
}

#[tokio::test]
async fn tool_call_cut_ends_inside_the_arguments_at_the_token_limit_in_every_shape() {
    let (_endpoint, answers) = each_shape_read("{type: tool_call_cut}").await;
    for (path, stream, seen, at) in answers {
        assert_eq!(seen.calls.len(), 1, "{at}: {seen:?}");
        let (_, name, arguments) = &seen.calls[0];
        assert_eq!(name, "echo", "{at}");
        let stop = match path {
            "/v1/chat/completions" => "length",
            "/v1/responses" => "incomplete max_output_tokens",
            GEMINI => "MAX_TOKENS",
            _ => "max_tokens",
        };
        assert_eq!(seen.stop, stop, "{at}");
        if path == GEMINI || (path == "/v1/messages" && !stream) {
            assert_eq!(arguments, "{}", "{at}: a JSON tool_use's input is what parses");
        } else {
            assert!(
                ARGUMENTS.starts_with(arguments.as_str()) && arguments.len() < ARGUMENTS.len(),
                "{at}: {arguments}"
            );
            assert!(serde_json::from_str::<Value>(arguments).is_err(), "{at}: {arguments}");
        }
        if path == "/v1/responses" && stream {
            assert_eq!(seen.last, "response.incomplete", "{at}");
        }
    }
}

#[tokio::test]
async fn tool_arguments_invalid_breaks_the_arguments_where_the_shape_carries_text() {
    let (endpoint, answers) = each_shape_read("{type: tool_arguments_invalid}").await;
    for (path, stream, seen, at) in answers {
        let stop = match path {
            "/v1/chat/completions" => "tool_calls",
            "/v1/responses" => "completed",
            GEMINI => "STOP",
            _ => "tool_use",
        };
        assert_eq!(seen.stop, stop, "{at}: complete by every other sign");
        let arguments = &seen.calls[0].2;
        if path == GEMINI || (path == "/v1/messages" && !stream) {
            assert_eq!(arguments, ARGUMENTS, "{at}: an Anthropic JSON input is an object: unchanged");
        } else {
            assert_eq!(arguments, "{'text':'hello',}", "{at}");
        }
    }
    let recording = endpoint.recording();
    let skipped: Vec<bool> = recording.iter().map(|r| r.get("skipped").is_some()).collect();
    assert_eq!(skipped, [false, false, false, false, true, false, true, true], "Anthropic JSON and Gemini are skipped");
    assert!(recording[4]["skipped"].as_str().unwrap().contains("Anthropic"));

    // A text answer has no call to break: unchanged, and recorded so.
    let endpoint = Endpoint::start("answer: done\n", &every_request("{type: tool_arguments_invalid}")).await;
    let path = "/v1/chat/completions";
    let seen = read(path, false, &endpoint.post(path, &request(path, false, &[])).await.text().await.unwrap());
    assert_eq!((seen.text.as_str(), seen.stop.as_str()), ("done", "stop"));
    assert!(endpoint.recording()[0]["skipped"].as_str().unwrap().contains("text answer"));
}

#[tokio::test]
async fn unknown_tool_call_names_a_tool_the_request_did_not_declare_in_every_shape() {
    let (_endpoint, answers) = each_shape_read("{type: unknown_tool_call, name: delete_everything}").await;
    for (_, _, seen, at) in answers {
        assert_eq!(seen.calls.len(), 1, "{at}");
        let (_, name, arguments) = &seen.calls[0];
        assert_eq!((name.as_str(), arguments.as_str()), ("delete_everything", ARGUMENTS), "{at}");
    }
    // A text turn becomes a call of the unknown tool, with `{}`.
    let endpoint = Endpoint::start("answer: done\n", &every_request("{type: unknown_tool_call}")).await;
    let path = "/v1/messages";
    let seen = read(path, true, &endpoint.post(path, &request(path, true, &[])).await.text().await.unwrap());
    assert_eq!(seen.calls[0].1, "faultlab_no_such_tool");
    assert_eq!((seen.calls[0].2.as_str(), seen.stop.as_str()), ("{}", "tool_use"));
}

#[tokio::test]
async fn duplicate_call_id_asks_for_two_calls_with_one_id_in_every_shape() {
    let (_endpoint, answers) = each_shape_read("{type: duplicate_call_id}").await;
    for (_, _, seen, at) in answers {
        assert_eq!(seen.calls.len(), 2, "{at}: {seen:?}");
        assert_eq!(seen.calls[0], seen.calls[1], "{at}: same id, name and arguments");
        assert_eq!(seen.calls[0].2, ARGUMENTS);
    }
}

#[tokio::test]
async fn refusal_answers_in_each_apis_refusal_shape() {
    let (_endpoint, answers) = each_shape_read("{type: refusal}").await;
    for (path, _, seen, at) in answers {
        assert!(seen.calls.is_empty() && seen.text.is_empty(), "{at}: {seen:?}");
        match path {
            "/v1/chat/completions" => assert_eq!(seen.stop, "content_filter", "{at}"),
            "/v1/responses" => assert_eq!(seen.stop, "completed", "{at}"),
            GEMINI => assert_eq!(seen.stop, "SAFETY", "{at}"),
            _ => assert_eq!(seen.stop, "refusal", "{at}"),
        }
        if path != "/v1/messages" && path != GEMINI {
            assert!(seen.refusal.starts_with("I'm sorry"), "{at}: {seen:?}");
        }
    }
}

#[tokio::test]
async fn overloaded_breaks_a_started_stream_with_the_providers_error_event_and_refuses_json() {
    let (endpoint, answers) = each_shape("{type: overloaded}").await;
    for (path, stream, status, text) in answers {
        let at = format!("{path} stream={stream}");
        if !stream {
            let body: Value = serde_json::from_str(&text).unwrap();
            if path == "/v1/messages" {
                assert_eq!(status, 529, "{at}");
                assert_eq!(
                    body,
                    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                );
            } else if path == GEMINI {
                assert_eq!((status, body["error"]["status"].as_str()), (503, Some("UNAVAILABLE")), "{at}");
            } else {
                assert_eq!((status, body["error"]["type"].as_str()), (503, Some("server_error")), "{at}");
            }
            continue;
        }
        assert_eq!(status, 200, "{at}: the stream starts");
        let events = sse(&text);
        let (name, data) = events.last().unwrap();
        let data: Value = serde_json::from_str(data).unwrap();
        match path {
            "/v1/messages" => {
                assert_eq!(name.as_deref(), Some("error"), "{at}");
                assert_eq!(data["error"]["type"], "overloaded_error", "{at}");
                assert_eq!(events[0].0.as_deref(), Some("message_start"));
                assert!(!text.contains("message_stop"), "{at}");
            }
            "/v1/responses" => {
                assert_eq!((name.as_deref(), data["code"].as_str()), (Some("error"), Some("server_is_overloaded")));
                assert_eq!(data["sequence_number"], events.len() - 1, "{at}: numbered after the events before it");
                assert!(!text.contains("response.completed"), "{at}");
            }
            GEMINI => {
                assert_eq!(
                    (name.as_deref(), data["error"]["status"].as_str()),
                    (None, Some("UNAVAILABLE")),
                    "{at}: {text}"
                );
            }
            _ => {
                assert_eq!((name.as_deref(), data["error"]["type"].as_str()), (None, Some("server_error")), "{at}");
                assert!(!text.contains("[DONE]"), "{at}");
            }
        }
    }
    drop(endpoint);
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: overloaded, before_stream: true}")).await;
    let path = "/v1/messages";
    let response = endpoint.post(path, &request(path, true, &[])).await;
    assert_eq!(response.status(), 529, "before any event");
}

#[tokio::test]
async fn context_length_exceeded_is_a_400_in_the_providers_body() {
    let (_endpoint, answers) = each_shape("{type: context_length_exceeded}").await;
    for (path, stream, status, text) in answers {
        assert_eq!(status, 400, "{path} stream={stream}");
        let body: Value = serde_json::from_str(&text).unwrap();
        match path {
            "/v1/messages" => {
                assert_eq!(body["error"]["type"], "invalid_request_error");
                assert!(body["error"]["message"].as_str().unwrap().starts_with("prompt is too long: 128001 tokens"));
            }
            GEMINI => {
                assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
                assert!(body["error"]["message"].as_str().unwrap().contains("(128001)"));
            }
            _ => {
                assert_eq!(body["error"]["code"], "context_length_exceeded");
                let param = if path == "/v1/responses" { "input" } else { "messages" };
                assert_eq!(body["error"]["param"], param);
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn token_quota_counts_a_minute_window_with_the_providers_headers() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: token_quota, requests_per_minute: 2}")).await;
    // A connection per request: the paused clock's jumps outlast the endpoint's idle timeout for kept connections.
    let client = faultlab_client::tls::client_builder().pool_max_idle_per_host(0).build().unwrap();
    let post = |path: &str, body: Value| client.post(format!("{}{path}", endpoint.base)).json(&body).send();
    let path = "/v1/chat/completions";
    let first = post(path, request(path, false, &[])).await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-ratelimit-limit-requests"], "2");
    assert_eq!(first.headers()["x-ratelimit-remaining-requests"], "1");
    assert_eq!(first.headers()["x-ratelimit-reset-requests"], "60s");
    tokio::time::advance(Duration::from_secs(20)).await;
    let path = "/v1/messages";
    let second = post(path, request(path, false, &[])).await.unwrap();
    assert_eq!(second.status(), 200);
    assert_eq!(second.headers()["anthropic-ratelimit-requests-remaining"], "0");
    let reset = second.headers()["anthropic-ratelimit-requests-reset"].to_str().unwrap().to_owned();
    assert!(reset.ends_with('Z') && reset.contains('T'), "RFC 3339: {reset}");
    let refused = post(path, request(path, true, &[])).await.unwrap();
    assert_eq!(refused.status(), 429, "a stream is refused before any event");
    assert_eq!(refused.headers()["retry-after"], "40");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
    let path = "/v1/responses";
    let refused = post(path, request(path, false, &[])).await.unwrap();
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        (body["error"]["type"].as_str(), body["error"]["code"].as_str()),
        (Some("requests"), Some("rate_limit_exceeded"))
    );
    tokio::time::advance(Duration::from_secs(40)).await;
    assert_eq!(post(path, request(path, false, &[])).await.unwrap().status(), 200, "a new window");
    let over: Vec<Value> =
        endpoint.recording().iter().map(|r| r.get("over_quota").cloned().unwrap_or(Value::Null)).collect();
    assert_eq!(over, [Value::Null, Value::Null, json!("requests"), json!("requests"), Value::Null]);

    // Tokens: the body's bytes / 4.
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: token_quota, tokens_per_minute: 200}")).await;
    let small = request(path, false, &[]);
    let first = endpoint.post(path, &small).await;
    let left: u64 = first.headers()["x-ratelimit-remaining-tokens"].to_str().unwrap().parse().unwrap();
    assert_eq!(left, 200 - small.to_string().len().div_ceil(4) as u64);
    let big = request(path, false, &[("c1", &"x".repeat(800))]);
    let refused = endpoint.post(path, &big).await;
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "tokens");
}

#[tokio::test(start_paused = true)]
async fn slow_drip_keeps_the_stream_alive_but_spaces_every_event() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: slow_drip, token_ms: 2000}")).await;
    for path in PATHS {
        for stream in [true, false] {
            let started = tokio::time::Instant::now();
            let response = endpoint.post(url_path(path, stream), &request(path, stream, &[])).await;
            assert_eq!(response.status(), 200);
            assert!(started.elapsed() < Duration::from_secs(2), "the headers and first piece go out at once");
            let text = response.text().await.unwrap();
            let pieces = if stream { sse(&text).len() } else { 8 };
            let took = started.elapsed();
            assert!(took >= Duration::from_secs(2 * (pieces as u64 - 1)), "{path} stream={stream}: {took:?}");
            let seen = read(path, stream, &text);
            assert_eq!(seen.calls[0].2, ARGUMENTS, "{path} stream={stream}: the answer itself is whole");
        }
    }
}

#[test]
fn the_proxy_refuses_a_model_hop_fault_naming_the_rule() {
    let file: faultlab_proxy::rules::RulesFile = yaml_serde::from_str(&every_request("{type: refusal}")).unwrap();
    let error = faultlab_proxy::rules::RuleSet::for_front(file, false).err().unwrap().to_string();
    assert!(error.contains("rule \"hop\"") && error.contains("faultlab model"), "{error}");
}
