//! Gemini's `generateContent` and `streamGenerateContent?alt=sse` beside the three APIs: the scripted
//! conversation, its errors in Gemini's shape, and the stream only as SSE.

use crate::model_faults::read;
use crate::{Endpoint, GEMINI, GEMINI_STREAM, SCRIPT, request, sse};
use serde_json::Value;

#[tokio::test]
async fn the_script_runs_over_generate_content_json_and_sse() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    for stream in [false, true] {
        let path = if stream { GEMINI_STREAM } else { GEMINI };
        let first = endpoint.post(path, &request(GEMINI, stream, &[])).await;
        assert_eq!(first.status(), 200);
        let content_type = first.headers()["content-type"].to_str().unwrap().to_owned();
        assert_eq!(content_type, if stream { "text/event-stream" } else { "application/json" });
        let seen = read(GEMINI, stream, &first.text().await.unwrap());
        assert_eq!(seen.calls, [(String::new(), "echo".into(), r#"{"text":"hello"}"#.into())]);
        assert_eq!(seen.stop, "STOP");
        // The echo's result carried back as a functionResponse: the script's next call.
        let second = endpoint.post(path, &request(GEMINI, stream, &[("echo", "hello")])).await;
        let seen = read(GEMINI, stream, &second.text().await.unwrap());
        assert_eq!(seen.calls[0].1, "add");
        let results = [("echo", "hello"), ("add", "3")];
        let last = endpoint.post(path, &request(GEMINI, stream, &results)).await.text().await.unwrap();
        if stream {
            assert_eq!(sse(&last).len(), 2, "the text in two chunks: {last}");
        }
        let seen = read(GEMINI, stream, &last);
        assert_eq!((seen.text.as_str(), seen.stop.as_str(), seen.calls.len()), ("the sum is 3", "STOP", 0));
    }
    let recording = endpoint.recording();
    assert_eq!(recording[0]["api"], "generate_content");
    assert_eq!(recording[4]["tool_results"][0]["text"], "hello");
    assert_eq!(recording[4]["stream"], true, "the stream is named by the path");
}

#[tokio::test]
async fn errors_are_in_geminis_shape_and_a_stream_without_alt_sse_is_refused() {
    let rules = "rules:\n  - name: r\n    fault: {type: rate_limit, retry_after_sec: 3}\n";
    let endpoint = Endpoint::start(SCRIPT, rules).await;
    let response = endpoint.post(GEMINI, &request(GEMINI, false, &[])).await;
    assert_eq!(response.status(), 429);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        (body["error"]["code"].as_u64(), body["error"]["status"].as_str()),
        (Some(429), Some("RESOURCE_EXHAUSTED"))
    );

    let endpoint = Endpoint::start(SCRIPT, "").await;
    let no_sse = GEMINI_STREAM.trim_end_matches("?alt=sse");
    let response = endpoint.post(no_sse, &request(GEMINI, true, &[])).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("alt=sse"), "{body}");
    let response = endpoint.post(GEMINI, &serde_json::json!({"contents": 1})).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "contents: an array is required");
}
