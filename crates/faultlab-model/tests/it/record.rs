//! Record a real model once, fault it offline: an endpoint forwarding to a "real" one (here `faultlab model`
//! itself) records its answers; a third endpoint replays them from that recording with faults on top.

use crate::{Endpoint, SCRIPT, request};
use faultlab_model::recorded::{Keys, Replay, Upstream};
use serde_json::Value;

const KEY: &str = "sk-faultlab-test-secret";

/// The conversation's three turns on `path`: the answer to each, as text.
async fn conversation(endpoint: &Endpoint, path: &str, stream: bool) -> Vec<(u16, String)> {
    let mut answers = Vec::new();
    for results in [&[][..], &[("c1", "hello")][..], &[("c1", "hello"), ("c2", "3")][..]] {
        let response = endpoint.post(path, &request(path, stream, results)).await;
        answers.push((response.status().as_u16(), response.text().await.unwrap()));
    }
    answers
}

#[tokio::test]
async fn a_recorded_run_replays_offline_with_faults_on_top_and_the_key_is_never_written() {
    let real = Endpoint::start(SCRIPT, "").await;
    let upstream = Upstream {
        base: format!("{}/v1", real.base),
        keys: Keys { openai: Some(KEY.into()), anthropic: Some(KEY.into()), gemini: None },
        client: faultlab_client::tls::client_builder().build().unwrap(),
    };
    let recorder =
        Endpoint::start_full("answer: unused\n", "", faultlab_model::REQUEST_MEMORY_BUDGET, Some(upstream), None).await;
    let chat = conversation(&recorder, "/v1/chat/completions", false).await;
    let messages = conversation(&recorder, "/v1/messages", true).await;
    assert!(chat.iter().chain(&messages).all(|(status, _)| *status == 200));
    assert!(chat[0].1.contains("\"echo\"") && chat[2].1.contains("the sum is 3"), "the real answers: {chat:?}");
    assert!(messages[1].1.contains("event: message_stop") && messages[1].1.contains("\"add\""));
    let recording = std::fs::read_to_string(recorder.recording_path()).unwrap();
    assert!(!recording.contains(KEY), "the key is never written");
    assert_eq!(real.recording().len(), 6, "every request reached the real endpoint");

    // Offline: the recording answers, the second chat request gets a 500 instead.
    let rules = "rules:\n  - name: second\n    match: {method: chat.completions, nth: 2}\n    fault: {type: http_status, status: 500}\n";
    let replay = Replay::load(&recorder.recording_path()).unwrap();
    drop(real);
    let offline =
        Endpoint::start_full("answer: unused\n", rules, faultlab_model::REQUEST_MEMORY_BUDGET, None, Some(replay))
            .await;
    let replayed = conversation(&offline, "/v1/chat/completions", false).await;
    assert_eq!(replayed[0], chat[0], "the first turn as recorded");
    assert_eq!(replayed[1].0, 500, "the fault on top");
    assert_eq!(replayed[2], chat[2]);
    let path = "/v1/chat/completions";
    let again = offline.post(path, &request(path, false, &[("c1", "hello")])).await.text().await.unwrap();
    assert_eq!(again, chat[1].1, "the faulted turn, asked again, is the recorded answer");
    assert_eq!(conversation(&offline, "/v1/messages", true).await, messages, "a stream replays event for event");

    // A turn the recording lacks is refused naming it.
    let response = offline.post("/v1/responses", &request("/v1/responses", false, &[])).await;
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("no answer for this turn"), "{body}");
}

#[test]
fn a_recording_without_answers_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.jsonl");
    std::fs::write(&path, "{\"api\": \"messages\", \"stream\": false}\n").unwrap();
    let error = Replay::load(&path).unwrap_err();
    assert!(error.contains("plain.jsonl") && error.contains("no recorded answers"), "{error}");
    std::fs::write(&path, "{\"api\": 1}\n").unwrap();
    assert!(Replay::load(&path).unwrap_err().contains("line 1"));
}

/// The key goes to the real endpoint in each provider's header, and the client's own never does.
#[tokio::test]
async fn the_key_is_sent_upstream_in_each_providers_header() {
    use faultlab_model::api::Api;
    let seen = axum::Router::new().fallback(|headers: http::HeaderMap| async move {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        serde_json::json!({"authorization": header("authorization"), "x-api-key": header("x-api-key"),
            "x-goog-api-key": header("x-goog-api-key"), "anthropic-version": header("anthropic-version")})
        .to_string()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, seen).await });
    let keys = Keys { openai: Some("sk-o".into()), anthropic: Some("sk-a".into()), gemini: Some("g-k".into()) };
    assert_eq!(format!("{keys:?}"), "Keys { openai: set, anthropic: set, gemini: set }", "Debug never shows a key");
    let upstream = Upstream { base, keys, client: faultlab_client::tls::client_builder().build().unwrap() };
    let mut client_headers = http::HeaderMap::new();
    client_headers.insert("authorization", "Bearer the-clients-own".parse().unwrap());
    client_headers.insert("anthropic-version", "2023-06-01".parse().unwrap());
    let ask = |api, path: &'static str| {
        let headers = client_headers.clone();
        let upstream = &upstream;
        async move {
            let answer = upstream.forward(api, path, &headers, "{}".into(), 1 << 20).await.unwrap();
            serde_json::from_str::<Value>(&answer.body).unwrap()
        }
    };
    let chat = ask(Api::ChatCompletions, "/v1/chat/completions").await;
    assert_eq!(chat["authorization"], "Bearer sk-o");
    let messages = ask(Api::Messages, "/v1/messages").await;
    assert_eq!((messages["x-api-key"].as_str(), messages["authorization"].as_str()), (Some("sk-a"), Some("")));
    assert_eq!(messages["anthropic-version"], "2023-06-01");
    let gemini = ask(Api::Gemini, "/v1beta/models/g:generateContent").await;
    assert_eq!(gemini["x-goog-api-key"], "g-k");
    server.abort();
}
