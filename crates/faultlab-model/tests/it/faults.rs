//! Catalogue faults on the model hop, as a client meets them on the wire.

use crate::{Endpoint, SCRIPT, request, sse};
use faultlab_model::rules;
use faultlab_proxy::rules::RulesFile;
use futures::StreamExt as _;
use serde_json::{Value, json};
use std::time::Duration;

fn every_request(fault: &str) -> String {
    format!("rules:\n  - name: hop\n    fault: {fault}\n")
}

/// The bytes that arrived before the body ended, and whether it ended in an error (the connection dropped).
async fn drain(response: reqwest::Response) -> (String, bool) {
    let mut stream = response.bytes_stream();
    let mut got = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => got.extend_from_slice(&bytes),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), true),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), false)
}

#[tokio::test]
async fn statuses_carry_the_apis_error_body_and_retry_after() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: rate_limit, retry_after_sec: 7}")).await;
    let response = endpoint.post("/v1/messages", &request("/v1/messages", false, &[])).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body: Value = response.json().await.unwrap();
    assert_eq!((body["type"].as_str(), body["error"]["type"].as_str()), (Some("error"), Some("rate_limit_error")));
    let response = endpoint.post("/v1/chat/completions", &request("/v1/chat/completions", true, &[])).await;
    assert_eq!(response.status(), 429, "a streaming request gets the status before any event");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert_eq!(
        endpoint.recording()[0]["fault"],
        json!({"rule": "hop", "mode": "after",
        "fault": {"type": "rate_limit", "retry_after_sec": 7}})
    );

    // The proxy's matching: only the second Responses request fails.
    let rules = "rules:\n  - name: second\n    match: {method: responses, nth: 2}\n    fault: {type: http_status, status: 500}\n";
    let endpoint = Endpoint::start(SCRIPT, rules).await;
    let path = "/v1/responses";
    assert_eq!(endpoint.post(path, &request(path, false, &[])).await.status(), 200);
    let response = endpoint.post(path, &request(path, false, &[("c1", "hello")])).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "api_error");
    assert_eq!(endpoint.post(path, &request(path, false, &[])).await.status(), 200, "nth: 2 only");
}

#[tokio::test]
async fn malformed_json_in_a_body_and_in_a_streams_first_event() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: malformed}")).await;
    let path = "/v1/chat/completions";
    let response = endpoint.post(path, &request(path, false, &[])).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_err(), "not JSON: {text}");
    assert!(text.contains("\"tool_calls\""), "the answer's bytes, broken: {text}");

    let path = "/v1/responses";
    let text = endpoint.post(path, &request(path, true, &[])).await.text().await.unwrap();
    let events = sse(&text);
    assert!(serde_json::from_str::<Value>(&events[0].1).is_err(), "the first event is broken");
    assert!(events[1..].iter().all(|(_, data)| serde_json::from_str::<Value>(data).is_ok()), "the rest is intact");
}

#[tokio::test]
async fn truncated_cuts_a_stream_midway_and_a_body_halfway_then_drops_the_connection() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: truncated}")).await;
    let path = "/v1/messages";
    let (got, dropped) = drain(endpoint.post(path, &request(path, true, &[])).await).await;
    assert!(dropped, "the connection drops mid-stream");
    assert!(got.contains("event: message_start"), "{got}");
    assert!(!got.contains("message_stop"), "the stream never ends: {got}");

    let path = "/v1/chat/completions";
    let (got, dropped) = drain(endpoint.post(path, &request(path, false, &[])).await).await;
    assert!(dropped && got.starts_with("{\"id\"") && serde_json::from_str::<Value>(&got).is_err(), "{got}");
}

/// Sends one raw HTTP/1.1 request and reads until the server closes: every byte the client was sent (an error
/// when the connection was reset rather than closed).
async fn raw_exchange(base: &str, path: &str, body: &Value) -> std::io::Result<Vec<u8>> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut got)).await.expect("the server closes")?;
    Ok(got)
}

#[tokio::test]
async fn disconnect_closes_the_connection_with_nothing_written_not_even_a_status_line() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: disconnect}")).await;
    for path in ["/v1/chat/completions", "/v1/responses", "/v1/messages"] {
        for stream in [false, true] {
            let got = raw_exchange(&endpoint.base, path, &request(path, stream, &[])).await;
            let got = got.unwrap_or_else(|e| panic!("{path} stream={stream}: a clean close, not a reset: {e}"));
            assert_eq!(String::from_utf8_lossy(&got), "", "{path} stream={stream}: nothing before the close");
        }
    }
    assert_eq!(endpoint.recording().len(), 6, "each request is recorded before its connection is closed");
}

#[tokio::test]
async fn disconnect_closes_the_connection_before_any_answer() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: disconnect}")).await;
    let path = "/v1/responses";
    let url = format!("{}{path}", endpoint.base);
    match endpoint.client.post(url).json(&request(path, false, &[])).send().await {
        Err(e) => assert!(!e.is_timeout(), "{e}"),
        Ok(response) => assert_eq!(drain(response).await, (String::new(), true)),
    }
}

#[tokio::test(start_paused = true)]
async fn latency_holds_the_answer_and_timeout_never_answers() {
    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: latency, delay_ms: 30000}")).await;
    let path = "/v1/chat/completions";
    let started = tokio::time::Instant::now();
    let response = endpoint.post(path, &request(path, true, &[])).await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().ends_with("data: [DONE]\n\n"));
    assert!(started.elapsed() >= Duration::from_secs(30), "{:?}", started.elapsed());

    let endpoint = Endpoint::start(SCRIPT, &every_request("{type: timeout}")).await;
    let url = format!("{}{path}", endpoint.base);
    let sent = endpoint.client.post(url).timeout(Duration::from_secs(60)).json(&request(path, false, &[])).send();
    let error = sent.await.unwrap_err();
    assert!(error.is_timeout(), "the answer never comes: {error}");
}

#[test]
fn faults_with_no_meaning_on_the_model_hop_are_refused_naming_the_rule() {
    let file: RulesFile = RulesFile {
        seed: None,
        rules: vec![RulesFile::parse_spec("{name: dup, fault: {type: duplicate}}", 0).unwrap()],
        auth: None,
    };
    let error = rules(file).err().unwrap().to_string();
    assert!(error.contains("rule \"dup\"") && error.contains("model hop"), "{error}");
    let restart = RulesFile::parse_spec("{fault: {type: server_outage, duration_ms: 10, restart: true}}", 1).unwrap();
    assert!(rules(RulesFile { seed: None, rules: vec![restart], auth: None }).is_err(), "nothing to restart");
    let by_tool = RulesFile::parse_spec("{match: {tool: echo}, fault: {type: timeout}}", 2).unwrap();
    let error = rules(RulesFile { seed: None, rules: vec![by_tool], auth: None }).err().unwrap().to_string();
    assert!(error.contains("match.tool"), "{error}");
}
