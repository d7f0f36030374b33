//! Responses' `previous_response_id`: a request naming an earlier response of this run continues its
//! conversation; one naming a response the endpoint never gave is refused naming it.

use crate::{Endpoint, SCRIPT, sse};
use serde_json::{Value, json};

#[tokio::test]
async fn a_chained_request_carries_only_the_new_result_and_the_script_moves_on() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    let path = "/v1/responses";
    let tools = json!([{"type": "function", "name": "echo", "parameters": {}},
        {"type": "function", "name": "add", "parameters": {}}]);
    let first: Value = endpoint.post(path, &json!({"input": "go", "tools": tools})).await.json().await.unwrap();
    let call = &first["output"][0];
    assert_eq!(call["name"], "echo");
    // Streamed, naming the first response, with only the echo's result: the script reads it and asks for `add`.
    let next = json!({"previous_response_id": first["id"], "stream": true, "tools": tools,
        "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "hello"}]});
    let text = endpoint.post(path, &next).await.text().await.unwrap();
    let done = sse(&text).into_iter().find(|(name, _)| name.as_deref() == Some("response.completed")).unwrap();
    let second: Value = serde_json::from_str(&done.1).unwrap();
    assert_eq!(second["response"]["output"][0]["name"], "add");
    // Chained again, on the second: both results are in the conversation, and the answer is given.
    let last = json!({"previous_response_id": second["response"]["id"], "tools": tools,
        "input": [{"type": "function_call_output", "call_id": second["response"]["output"][0]["call_id"], "output": "3"}]});
    let answer: Value = endpoint.post(path, &last).await.json().await.unwrap();
    assert_eq!(answer["output"][0]["content"][0]["text"], "the sum is 3");
    let recording = endpoint.recording();
    assert_eq!(recording[2]["tool_results"].as_array().unwrap().len(), 2, "the chained conversation was read whole");
    assert!(recording[2]["request"].get("previous_response_id").is_some(), "the request is recorded as sent");

    let unknown = json!({"previous_response_id": "resp_never", "input": "go"});
    let response = endpoint.post(path, &unknown).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("'resp_never' not found"), "{body}");
}
