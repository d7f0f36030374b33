//! What counts as a failed tool result: the bare error texts agent frameworks pass back to the model after an MCP
//! fault, and results that are data.

use crate::{Endpoint, SCRIPT, request};
use serde_json::Value;

/// Error texts as frameworks pass them back to the model, with no "error" in them: HTTP status lines and reasons,
/// a lost session, a closed connection.
const BARE_ERRORS: [&str; 12] = [
    "HTTP 403: Forbidden",
    "HTTP 429: Too many requests",
    "HTTP 401: Unauthorized: authentication expired",
    "HTTP 503: Service unavailable",
    "HTTP 404: Not found",
    "HTTP 400",
    "HTTP 502 Bad Gateway",
    "Session terminated",
    "Connection closed",
    "Server disconnected without sending a response.",
    "429 Too Many Requests",
    "Rate limit exceeded, retry later",
];

/// Results that are data and must move the script on.
const DATA: [&str; 4] = [
    "Release notes draft.\nnonce: 0123456789abcdef\n",
    "wrote 16 bytes to output.txt",
    r#"{"status":"ok","timestamp":"2026-01-01T00:00:00Z"}"#,
    r#"{"status":"delayed","delayMs":100}"#,
];

/// The tool the model asks for after one result of the first step (`echo`, retried once on failure; then `add`).
async fn next_tool(endpoint: &Endpoint, result: &str) -> String {
    let path = "/v1/chat/completions";
    let response = endpoint.post(path, &request(path, false, &[("c1", result)])).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["choices"][0]["message"]["tool_calls"][0]["function"]["name"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn bare_error_texts_frameworks_pass_back_count_as_failed_and_data_does_not() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    for text in BARE_ERRORS {
        assert_eq!(next_tool(&endpoint, text).await, "echo", "{text:?} is a failure: the call is asked for again");
    }
    for text in DATA {
        assert_eq!(next_tool(&endpoint, text).await, "add", "{text:?} is data: the script moves on");
    }
    let failed: Vec<bool> =
        endpoint.recording().iter().map(|r| r["tool_results"][0]["failed"].as_bool().unwrap()).collect();
    let expected: Vec<bool> = BARE_ERRORS.iter().map(|_| true).chain(DATA.iter().map(|_| false)).collect();
    assert_eq!(failed, expected, "the recording says which results counted as failed");
}
