//! What a request may cost: the body limit and the JSON value limit, refused in the API's error shape with the
//! endpoint still serving.

use crate::{Endpoint, SCRIPT, request};
use faultlab_model::{MAX_JSON_VALUES, MAX_REQUEST_BYTES};
use serde_json::Value;

async fn post_raw(endpoint: &Endpoint, path: &str, body: String) -> (u16, Value) {
    let url = format!("{}{path}", endpoint.base);
    let response = endpoint.client.post(url).header("content-type", "application/json").body(body).send().await;
    let response = response.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn an_over_large_or_over_wide_body_gets_413_in_the_apis_shape_and_the_endpoint_keeps_serving() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    // A tool result one byte too long for the limit.
    let mut large = request("/v1/messages", false, &[("t1", "x")]);
    let envelope = large.to_string().len();
    large["messages"][2]["content"][0]["content"] = Value::String("x".repeat(MAX_REQUEST_BYTES - envelope + 2));
    let (status, body) = post_raw(&endpoint, "/v1/messages", large.to_string()).await;
    assert_eq!(status, 413);
    assert_eq!((body["type"].as_str(), body["error"]["type"].as_str()), (Some("error"), Some("invalid_request_error")));
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&MAX_REQUEST_BYTES.to_string()) && message.contains("--max-request-bytes"), "{message}");

    // Within the byte limit, but wide: `[{},{},…]` costs far more parsed than its size.
    let wide = format!(r#"{{"model":"m","messages":[{}{{}}]}}"#, "{},".repeat(MAX_JSON_VALUES));
    assert!(wide.len() < MAX_REQUEST_BYTES);
    let (status, body) = post_raw(&endpoint, "/v1/chat/completions", wide).await;
    assert_eq!(status, 413);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&MAX_JSON_VALUES.to_string()), "{message}");

    let path = "/v1/chat/completions";
    assert_eq!(endpoint.post(path, &request(path, false, &[])).await.status(), 200, "the endpoint still serves");
    let recording = endpoint.recording();
    assert_eq!(recording.len(), 3, "both refusals are recorded, with why");
    assert_eq!(recording[0]["request"], Value::Null, "the over-large body was never read");
    assert!(recording[0]["error"].as_str().unwrap().contains("--max-request-bytes"), "{}", recording[0]);
    assert!(recording[1]["error"].as_str().unwrap().contains("JSON values"), "{}", recording[1]["error"]);
    assert!(recording[1]["request"].as_str().unwrap().starts_with(r#"{"model":"m","messages":[{},"#), "as text");
}

/// Sends a request's head and the first `sent` bytes of its body, and leaves it there.
async fn start_request(base: &str, body: &str, sent: usize) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body.as_bytes()[..sent]).await.unwrap();
    stream
}

/// A chat request whose one tool result makes it `size` bytes long.
fn sized(size: usize) -> String {
    let mut body = request("/v1/chat/completions", false, &[("c1", "")]);
    let envelope = body.to_string().len();
    body["messages"][2]["content"] = Value::String("x".repeat(size - envelope));
    body.to_string()
}

#[tokio::test]
async fn requests_past_the_memory_budget_get_503_and_what_they_held_is_given_back() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    const BUDGET: usize = 256 << 10;
    let endpoint = Endpoint::start_with_budget(SCRIPT, "", BUDGET).await;
    let path = "/v1/chat/completions";
    // A body of 175 000 bytes, half sent: its declared length is held while it is read.
    let slow = sized(175_000);
    let mut first = start_request(&endpoint.base, &slow, 87_500).await;
    // A small request still fits (and, answered, shows the first one's head was read: its hold is taken).
    assert_eq!(endpoint.post(path, &request(path, false, &[])).await.status(), 200, "a small request fits");
    // Another 100 000 would pass the budget (256 KiB).
    let mut second = endpoint.client.post(format!("{}{path}", endpoint.base));
    second = second.header("content-type", "application/json").body(sized(100_000));
    let second = second.send().await.unwrap();
    assert_eq!(second.status(), 503);
    assert_eq!(second.headers()["retry-after"], "1");
    let body: Value = second.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("busy"), "{body}");

    // The first body ends; parsing it would cost its text twice more: past the budget too.
    first.write_all(&slow.as_bytes()[87_500..]).await.unwrap();
    let mut answer = String::new();
    first.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{}", &answer[..answer.len().min(200)]);

    // Everything held was given back: a request that fits alone is answered.
    let fits = sized(75_000);
    let url = format!("{}{path}", endpoint.base);
    let response = endpoint.client.post(url).header("content-type", "application/json").body(fits).send().await;
    assert_eq!(response.unwrap().status(), 200);
    let errors: Vec<Value> = endpoint.recording().iter().map(|r| r["error"].clone()).collect();
    assert_eq!(errors.iter().filter(|e| e.as_str().is_some_and(|e| e.contains("busy"))).count(), 2, "{errors:?}");
}
