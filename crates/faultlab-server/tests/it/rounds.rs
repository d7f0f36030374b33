//! `input_rounds`: multi-round-trip `tools/call` (2026-07-28, SEP-2322) over stdio and stateless HTTP, and the
//! `input_required` faults, checked on the bytes: `resultType`, `inputRequests`, `requestState`, the retry and
//! the -32602 refusals.

use crate::util::*;
use faultlab_wire::{Frame, MessageId};
use serde_json::{Value, json};

/// A 2026-07-28 `tools/call` of `input_rounds`; a retry adds `inputResponses` and `requestState`.
fn rounds_call(id: i64, args: Value, retry: Option<(Value, &str)>) -> Value {
    let mut body = call(id, "input_rounds", args, Some(modern_meta()));
    if let Some((responses, state)) = retry {
        body["params"]["inputResponses"] = responses;
        body["params"]["requestState"] = json!(state);
    }
    body
}

fn confirmed(confirm: bool) -> Value {
    json!({"confirm": {"action": "accept", "content": {"confirm": confirm}}})
}

async fn reply(c: &mut StdioClient, id: i64) -> Value {
    loop {
        let frame: Frame = c.recv().await;
        if frame.id() == Some(&MessageId::from(id)) {
            return frame.value().unwrap().clone();
        }
    }
}

/// The `input_required` answer's checks; returns its `requestState`.
fn input_required(reply: &Value) -> String {
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let ask = &result["inputRequests"]["confirm"];
    assert_eq!(ask["method"], "elicitation/create", "{reply}");
    assert_eq!(ask["params"]["mode"], "form", "{reply}");
    assert_eq!(ask["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean", "{reply}");
    assert!(result.get("content").is_none(), "{reply}");
    let state = result["requestState"].as_str().unwrap_or_else(|| panic!("a requestState: {reply}"));
    assert!(!state.is_empty() && state.len() <= 256, "{reply}");
    state.to_owned()
}

fn refused_naming_request_state(reply: &Value) -> String {
    assert!(reply.get("result").is_none(), "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("requestState"), "{reply}");
    message
}

#[tokio::test]
async fn the_call_asks_one_confirmation_then_finishes_when_retried_with_the_state_and_the_answer() {
    let mut c = StdioClient::start(None).await;
    c.send(&rounds_call(2, json!({}), None)).await;
    let state = input_required(&reply(&mut c, 2).await);
    c.send(&rounds_call(3, json!({}), Some((confirmed(true), &state)))).await;
    let done = reply(&mut c, 3).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "input_rounds finished after 1 round(s): confirm = true");
    // A handle answers one retry: the same state again is refused.
    c.send(&rounds_call(4, json!({}), Some((confirmed(true), &state)))).await;
    refused_naming_request_state(&reply(&mut c, 4).await);
}

#[tokio::test]
async fn a_declined_confirmation_finishes_and_a_missing_answer_is_invalid_params() {
    let mut c = StdioClient::start(None).await;
    c.send(&rounds_call(2, json!({}), None)).await;
    let state = input_required(&reply(&mut c, 2).await);
    c.send(&rounds_call(3, json!({}), Some((json!({"confirm": {"action": "decline"}}), &state)))).await;
    let done = reply(&mut c, 3).await;
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("chose decline"), "{done}");
    c.send(&rounds_call(4, json!({}), None)).await;
    let state = input_required(&reply(&mut c, 4).await);
    c.send(&rounds_call(5, json!({}), Some((json!({}), &state)))).await;
    let refused = reply(&mut c, 5).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("inputResponses.confirm"), "{refused}");
}

#[tokio::test]
async fn a_state_the_server_never_issued_or_too_long_is_refused_naming_request_state() {
    let mut c = StdioClient::start(None).await;
    c.send(&rounds_call(2, json!({}), Some((confirmed(true), "made-up")))).await;
    assert!(refused_naming_request_state(&reply(&mut c, 2).await).contains("not issued"));
    let long = "x".repeat(10_000);
    c.send(&rounds_call(3, json!({}), Some((confirmed(true), &long)))).await;
    assert!(refused_naming_request_state(&reply(&mut c, 3).await).contains("10000 bytes"));
}

#[tokio::test]
async fn endless_answers_every_retry_input_required_with_a_new_state() {
    let mut c = StdioClient::start(None).await;
    c.send(&rounds_call(2, json!({"fault": "endless"}), None)).await;
    let mut states = vec![input_required(&reply(&mut c, 2).await)];
    for round in 0..12 {
        let id = 3 + round;
        let state = states.last().unwrap().clone();
        c.send(&rounds_call(id, json!({"fault": "endless"}), Some((confirmed(true), &state)))).await;
        let again = reply(&mut c, id).await;
        let message = again["result"]["inputRequests"]["confirm"]["params"]["message"].as_str().unwrap().to_owned();
        assert!(message.starts_with(&format!("Round {}:", round + 2)), "{again}");
        states.push(input_required(&again));
    }
    let distinct: std::collections::HashSet<&String> = states.iter().collect();
    assert_eq!(distinct.len(), states.len(), "{states:?}");
}

#[tokio::test]
async fn tampered_state_refuses_the_faithful_echo_with_32602() {
    let mut c = StdioClient::start(None).await;
    c.send(&rounds_call(2, json!({"fault": "tampered_state"}), None)).await;
    let state = input_required(&reply(&mut c, 2).await);
    c.send(&rounds_call(3, json!({"fault": "tampered_state"}), Some((confirmed(true), &state)))).await;
    assert!(refused_naming_request_state(&reply(&mut c, 3).await).contains("tampered"));
}

#[tokio::test]
async fn unknown_result_type_answers_a_result_type_mcp_does_not_define() {
    let mut c = StdioClient::start(None).await;
    c.send(&rounds_call(2, json!({"fault": "unknown_result_type"}), None)).await;
    let answer = reply(&mut c, 2).await;
    assert_eq!(answer["result"]["resultType"], "faultlab_unknown", "{answer}");
    assert!(answer["result"].get("requestState").is_none(), "{answer}");
}

#[tokio::test]
async fn on_2025_11_25_the_tool_answers_a_tool_error_saying_why() {
    let mut c = StdioClient::start(Some("2025-11-25")).await;
    c.call(2, "input_rounds", json!({})).await;
    let answer = reply(&mut c, 2).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("2026-07-28") && text.contains("2025-11-25"), "{answer}");
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
}

#[tokio::test]
async fn the_rounds_run_over_stateless_http() {
    let server = HttpServer::start().await;
    let post = |body: Value| {
        server
            .post(&body, None)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "input_rounds")
    };
    let (status, _, bytes) = exchange(post(rounds_call(2, json!({}), None))).await;
    assert_eq!(status, 200);
    let first: Value = serde_json::from_slice(&bytes.unwrap()).unwrap();
    let state = input_required(&first);
    let (status, _, bytes) = exchange(post(rounds_call(3, json!({}), Some((confirmed(false), &state))))).await;
    assert_eq!(status, 200);
    let done: Value = serde_json::from_slice(&bytes.unwrap()).unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "input_rounds finished after 1 round(s): confirm = false");
}
