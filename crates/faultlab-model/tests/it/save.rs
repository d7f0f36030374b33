//! A value saved from one tool result and used in the next call and the answer, read back from each API shape
//! that carries tool results; a result the pattern misses is asked for again, and the recording says why.

use crate::{Endpoint, request};
use serde_json::{Value, json};

/// The eval tasks' job: read the nonce, write it, answer it.
const SCRIPT: &str = r#"
steps:
  - call: echo
    arguments: {path: input.txt}
    save: {nonce: "nonce: ([0-9a-f]{16})"}
    on_error: retry_once
  - call: add
    arguments: {content: "{{nonce}}"}
answer: "{{nonce}}"
"#;

const READ: &str = "Release notes draft.\nnonce: 00ff00ff00ff00ff\n";

/// The tool call (name, arguments) or the text a non-streaming answer carries, whatever the API.
fn turn(path: &str, body: &Value) -> (String, Value) {
    let (name, args, text) = match path {
        "/v1/chat/completions" => {
            let message = &body["choices"][0]["message"];
            let call = &message["tool_calls"][0]["function"];
            (&call["name"], call["arguments"].as_str().map(|a| serde_json::from_str(a).unwrap()), &message["content"])
        }
        "/v1/responses" => {
            let item = &body["output"][0];
            (
                &item["name"],
                item["arguments"].as_str().map(|a| serde_json::from_str(a).unwrap()),
                &item["content"][0]["text"],
            )
        }
        _ => {
            let block = &body["content"][0];
            (&block["name"], Some(block["input"].clone()).filter(|i| !i.is_null()), &block["text"])
        }
    };
    match (name.as_str(), args) {
        (Some(name), Some(args)) => (name.to_owned(), args),
        _ => ("answer".to_owned(), text.clone()),
    }
}

#[tokio::test]
async fn a_saved_nonce_reaches_the_next_call_and_the_answer_in_every_api_shape() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    for path in ["/v1/chat/completions", "/v1/responses", "/v1/messages"] {
        let ask = |results: Vec<(&'static str, &'static str)>| {
            let endpoint = &endpoint;
            async move {
                let response = endpoint.post(path, &request(path, false, &results)).await;
                assert_eq!(response.status(), 200, "{path}");
                turn(path, &response.json().await.unwrap())
            }
        };
        assert_eq!(ask(vec![]).await, ("echo".into(), json!({"path": "input.txt"})), "{path}");
        // An empty read, as a framework passes it back: no nonce in it, so the read is asked for once more.
        assert_eq!(ask(vec![("c1", "[]")]).await, ("echo".into(), json!({"path": "input.txt"})), "{path}");
        let write = ask(vec![("c1", "[]"), ("c2", READ)]).await;
        assert_eq!(write, ("add".into(), json!({"content": "00ff00ff00ff00ff"})), "{path}");
        let answer = ask(vec![("c1", "[]"), ("c2", READ), ("c3", "wrote 16 bytes")]).await;
        assert_eq!(answer, ("answer".into(), json!("00ff00ff00ff00ff")), "{path}");
        let gave_up = ask(vec![("c1", "[]"), ("c2", "nonce: none here")]).await;
        assert_eq!(gave_up.0, "answer", "{path}: the retry missed too");
        assert!(gave_up.1.as_str().unwrap().contains("`echo` failed"), "{path}: {gave_up:?}");
    }
    let recording = endpoint.recording();
    assert_eq!(recording.len(), 15);
    for (i, line) in recording.iter().enumerate().skip(2).step_by(5) {
        let failed: Vec<&Value> = line["tool_results"].as_array().unwrap().iter().map(|r| &r["failed"]).collect();
        assert_eq!(failed, [&json!(true), &json!(false)], "line {i}: the unmatched read counts as failed");
        assert_eq!(line["turn"]["call"]["arguments"]["content"], "00ff00ff00ff00ff", "line {i}");
    }
}
