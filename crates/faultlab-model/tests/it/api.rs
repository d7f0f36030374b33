//! Each API shape, streaming and not, as a client reads it; a scripted conversation and its recording.

use crate::{Endpoint, SCRIPT, request, sse};
use serde_json::{Value, json};

const PATHS: [&str; 3] = ["/v1/chat/completions", "/v1/responses", "/v1/messages"];

/// What a client reads from an answer: the tool call asked for (name, arguments) or the text, and the API's
/// reason for stopping.
#[derive(Debug, PartialEq)]
enum Seen {
    Call(String, Value, String),
    Text(String, String),
}

fn read_json(path: &str, body: &Value) -> Seen {
    match path {
        "/v1/chat/completions" => {
            let choice = &body["choices"][0];
            let finish = choice["finish_reason"].as_str().unwrap().to_owned();
            match choice["message"]["tool_calls"].get(0) {
                Some(call) => {
                    assert!(call["id"].as_str().unwrap().starts_with("call_"));
                    let args = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
                    Seen::Call(call["function"]["name"].as_str().unwrap().into(), args, finish)
                }
                None => Seen::Text(choice["message"]["content"].as_str().unwrap().into(), finish),
            }
        }
        "/v1/responses" => {
            let item = &body["output"][0];
            let status = body["status"].as_str().unwrap().to_owned();
            match item["type"].as_str().unwrap() {
                "function_call" => {
                    let args = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
                    Seen::Call(item["name"].as_str().unwrap().into(), args, status)
                }
                _ => Seen::Text(item["content"][0]["text"].as_str().unwrap().into(), status),
            }
        }
        _ => {
            let block = &body["content"][0];
            let stop = body["stop_reason"].as_str().unwrap().to_owned();
            match block["type"].as_str().unwrap() {
                "tool_use" => Seen::Call(block["name"].as_str().unwrap().into(), block["input"].clone(), stop),
                _ => Seen::Text(block["text"].as_str().unwrap().into(), stop),
            }
        }
    }
}

/// Reads a stream the way each SDK assembles it from deltas, checking the API's framing on the way.
fn read_stream(path: &str, text: &str) -> Seen {
    let events = sse(text);
    match path {
        "/v1/chat/completions" => {
            assert_eq!(events.last().unwrap().1, "[DONE]", "a chat stream ends with [DONE]");
            let (mut name, mut args, mut content, mut finish) = (None, String::new(), String::new(), None);
            for (event, data) in &events[..events.len() - 1] {
                assert!(event.is_none());
                let chunk: Value = serde_json::from_str(data).unwrap();
                assert_eq!(chunk["object"], "chat.completion.chunk");
                let choice = &chunk["choices"][0];
                if let Some(call) = choice["delta"]["tool_calls"].get(0) {
                    name = name.or(call["function"]["name"].as_str().map(String::from));
                    args.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
                }
                content.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
                finish = finish.or(choice["finish_reason"].as_str().map(String::from));
            }
            match name {
                Some(name) => Seen::Call(name, serde_json::from_str(&args).unwrap(), finish.unwrap()),
                None => Seen::Text(content, finish.unwrap()),
            }
        }
        "/v1/responses" => {
            let (mut args, mut content, mut completed) = (String::new(), String::new(), None);
            for (i, (event, data)) in events.iter().enumerate() {
                let value: Value = serde_json::from_str(data).unwrap();
                assert_eq!(Some(value["type"].as_str().unwrap()), event.as_deref(), "the event line names the type");
                assert_eq!(value["sequence_number"], json!(i));
                match event.as_deref().unwrap() {
                    "response.function_call_arguments.delta" => args.push_str(value["delta"].as_str().unwrap()),
                    "response.output_text.delta" => content.push_str(value["delta"].as_str().unwrap()),
                    "response.completed" => completed = Some(value["response"].clone()),
                    _ => {}
                }
            }
            assert_eq!(events[0].0.as_deref(), Some("response.created"));
            let completed = completed.expect("the stream ends with response.completed");
            let whole = read_json(path, &completed);
            match &whole {
                Seen::Call(_, whole_args, _) => assert_eq!(&serde_json::from_str::<Value>(&args).unwrap(), whole_args),
                Seen::Text(text, _) => assert_eq!(text, &content),
            }
            whole
        }
        _ => {
            let names: Vec<&str> = events.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
            assert_eq!(names[..2], ["message_start", "content_block_start"]);
            assert_eq!(names[names.len() - 3..], ["content_block_stop", "message_delta", "message_stop"]);
            let (mut block, mut partial, mut stop) = (Value::Null, String::new(), None);
            for (event, data) in &events {
                let value: Value = serde_json::from_str(data).unwrap();
                assert_eq!(Some(value["type"].as_str().unwrap()), event.as_deref());
                match event.as_deref().unwrap() {
                    "content_block_start" => block = value["content_block"].clone(),
                    "content_block_delta" => {
                        let delta = &value["delta"];
                        partial.push_str(delta["partial_json"].as_str().or(delta["text"].as_str()).unwrap());
                    }
                    "message_delta" => stop = value["delta"]["stop_reason"].as_str().map(String::from),
                    _ => {}
                }
            }
            match block["type"].as_str().unwrap() {
                "tool_use" => Seen::Call(
                    block["name"].as_str().unwrap().into(),
                    serde_json::from_str(&partial).unwrap(),
                    stop.unwrap(),
                ),
                _ => Seen::Text(partial, stop.unwrap()),
            }
        }
    }
}

async fn ask(endpoint: &Endpoint, path: &str, stream: bool, results: &[(&str, &str)]) -> Seen {
    let response = endpoint.post(path, &request(path, stream, results)).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    if stream {
        assert_eq!(content_type, "text/event-stream");
        read_stream(path, &response.text().await.unwrap())
    } else {
        assert_eq!(content_type, "application/json");
        read_json(path, &response.json().await.unwrap())
    }
}

#[tokio::test]
async fn every_api_shape_streaming_and_not_carries_the_scripted_calls_and_answer() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    for path in PATHS {
        for stream in [false, true] {
            let (call, done) = match path {
                "/v1/chat/completions" => ("tool_calls", "stop"),
                "/v1/responses" => ("completed", "completed"),
                _ => ("tool_use", "end_turn"),
            };
            let at = format!("{path} stream={stream}");
            let first = ask(&endpoint, path, stream, &[]).await;
            assert_eq!(first, Seen::Call("echo".into(), json!({"text": "hello"}), call.into()), "{at}");
            let second = ask(&endpoint, path, stream, &[("c1", "hello")]).await;
            assert_eq!(second, Seen::Call("add".into(), json!({"a": 1, "b": 2}), call.into()), "{at}");
            let last = ask(&endpoint, path, stream, &[("c1", "hello"), ("c2", "3")]).await;
            assert_eq!(last, Seen::Text("the sum is 3".into(), done.into()), "{at}");
        }
    }
}

#[tokio::test]
async fn a_two_call_conversation_retries_a_failed_call_once_and_the_recording_shows_what_came_back() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    let path = "/v1/chat/completions";
    let mut results: Vec<(&str, &str)> = Vec::new();
    let mut seen = Vec::new();
    // The framework's side of the conversation: the first echo fails, the retry and the add succeed.
    for answer in ["Error: the server went away", "hello", "3"] {
        seen.push(ask(&endpoint, path, false, &results).await);
        results.push(("c", answer));
    }
    seen.push(ask(&endpoint, path, false, &results).await);
    let names: Vec<&str> = seen
        .iter()
        .map(|s| match s {
            Seen::Call(name, ..) => name.as_str(),
            Seen::Text(..) => "answer",
        })
        .collect();
    assert_eq!(names, ["echo", "echo", "add", "answer"], "the failed echo is asked for once more");

    let recording = endpoint.recording();
    assert_eq!(recording.len(), 4, "one line per request");
    let second = &recording[1];
    assert_eq!(second["api"], "chat.completions");
    assert_eq!(
        second["tool_results"],
        json!([{"call_id": "c", "text": "Error: the server went away", "failed": true}])
    );
    assert_eq!(second["turn"]["call"]["attempt"], 1);
    assert_eq!(second["request"]["messages"][2]["content"], "Error: the server went away", "the body as sent");
    assert_eq!(recording[3]["turn"], json!({"answer": {"text": "the sum is 3", "because": "done"}}));
}

#[tokio::test]
async fn bad_requests_are_refused_in_the_apis_error_shape_and_recorded() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    let url = format!("{}/v1/messages", endpoint.base);
    let response = endpoint.client.post(&url).body("{not json").send().await.unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert!(body["error"]["message"].as_str().unwrap().contains("not JSON"), "{body}");
    let response = endpoint.post("/v1/chat/completions", &json!({"model": "m"})).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "messages: an array is required");
    let recording = endpoint.recording();
    assert_eq!(recording[0]["request"], "{not json", "what was sent, as text");
    assert_eq!(recording[1]["error"], "messages: an array is required");

    let response = endpoint.post("/v1/embeddings", &json!({})).await;
    assert_eq!(response.status(), 404);
    let rebound = endpoint.client.post(&url).header("host", "evil.example").json(&json!({})).send().await.unwrap();
    assert_eq!(rebound.status(), 403, "the Host guard of every lab listener");
}
