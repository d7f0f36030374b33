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
