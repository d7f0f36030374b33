//! `ask_client` over stdio: the server asks the client during a call (elicitation in form and URL mode, sampling,
//! roots), and each fault it commits while asking, observed as raw lines; the client's answers are written by hand,
//! including malformed, late and unknown-id ones.

use crate::util::*;
use faultlab_engine::MAX_PENDING_ASKS;
use faultlab_engine::recorder::Event;
use faultlab_wire::{Frame, MessageId};
use serde_json::{Value, json};
use std::time::Duration;

fn everything() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": false}})
}

fn answer(request: &Frame, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request.value().unwrap()["id"], "result": result})
}

fn body(reply: &Frame) -> Value {
    serde_json::from_str(&text_of(reply)).unwrap_or_else(|_| panic!("a JSON body: {reply:?}"))
}

fn ask_outcomes(c: &StdioClient) -> Vec<(String, String)> {
    c.records()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::AskBack { fault, outcome, .. } => Some((fault, outcome)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_form_elicitation_is_sent_during_the_call_and_the_call_finishes_with_the_answer() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "elicitation_form"})).await;
    let asked = c.recv().await;
    assert_eq!(asked.method(), Some("elicitation/create"));
    let params = &asked.value().unwrap()["params"];
    assert_eq!(params["mode"], "form");
    assert_eq!(params["requestedSchema"]["properties"]["confirm"]["type"], "boolean");
    c.send(&answer(&asked, json!({"action": "accept", "content": {"confirm": true}}))).await;
    let reply = c.recv().await;
    assert_eq!(reply.id(), Some(&MessageId::from(2)));
    let body = body(&reply);
    assert_eq!(body["status"], "answered");
    assert_eq!(body["answers"][0]["outcome"], "accept");
    assert_eq!(body["answers"][0]["answer"]["content"]["confirm"], true);
    assert_eq!(ask_outcomes(&c), [("none".to_owned(), "accept".to_owned())]);
}

#[tokio::test]
async fn a_decline_finishes_the_call_without_an_error() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "elicitation_form"})).await;
    let asked = c.recv().await;
    c.send(&answer(&asked, json!({"action": "decline"}))).await;
    let reply = c.recv().await;
    assert_eq!(reply.value().unwrap()["result"]["isError"], false);
    assert_eq!(body(&reply)["answers"][0]["outcome"], "decline");
}

#[tokio::test]
async fn sampling_and_roots_are_asked_and_their_answers_checked() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "sampling"})).await;
    let asked = c.recv().await;
    assert_eq!(asked.method(), Some("sampling/createMessage"));
    assert_eq!(asked.value().unwrap()["params"]["messages"][0]["role"], "user");
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "scripted"});
    c.send(&answer(&asked, sampled)).await;
    assert_eq!(body(&c.recv().await)["answers"][0]["outcome"], "answered");

    c.call(3, "ask_client", json!({"ask": "roots"})).await;
    let asked = c.recv().await;
    assert_eq!(asked.method(), Some("roots/list"));
    // A root must be a file:// URI: this answer is recorded as invalid, and the call says the ask failed.
    c.send(&answer(&asked, json!({"roots": [{"uri": "https://example.com/"}]}))).await;
    let reply = c.recv().await;
    assert_eq!(reply.value().unwrap()["result"]["isError"], true);
    assert_eq!(body(&reply)["answers"][0]["outcome"], "invalid_answer");
}

#[tokio::test]
async fn a_capability_the_client_did_not_declare_is_not_asked_unless_that_is_the_fault() {
    let mut c = StdioClient::start_declaring(json!({})).await;
    c.call(2, "ask_client", json!({"ask": "sampling"})).await;
    let reply = c.recv().await;
    assert_eq!(reply.id(), Some(&MessageId::from(2)), "no request before the result: {reply:?}");
    assert_eq!(body(&reply)["status"], "not_asked");

    c.call(3, "ask_client", json!({"ask": "sampling", "fault": "undeclared"})).await;
    let asked = c.recv().await;
    assert_eq!(asked.method(), Some("sampling/createMessage"));
    let refused = json!({"jsonrpc": "2.0", "id": asked.value().unwrap()["id"],
        "error": {"code": -32601, "message": "Method not found"}});
    c.send(&refused).await;
    let reply = c.recv().await;
    let body = body(&reply);
    assert_eq!(body["answers"][0]["outcome"], "error");
    assert_eq!(body["answers"][0]["answer"]["code"], -32601);
    assert_eq!(body["declared"], false);
}

#[tokio::test]
async fn a_repeated_request_arrives_twice_with_two_ids_and_both_answers_count() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "elicitation_form", "fault": "repeated"})).await;
    let first = c.recv().await;
    let second = c.recv().await;
    assert_eq!(first.method(), second.method());
    // rmcp gives each request a progress token of its own in `_meta`; everything else is the same.
    let without_meta = |f: &Frame| {
        let mut params = f.value().unwrap()["params"].clone();
        params.as_object_mut().unwrap().remove("_meta");
        params
    };
    assert_eq!(without_meta(&first), without_meta(&second));
    assert_ne!(first.value().unwrap()["id"], second.value().unwrap()["id"]);
    c.send(&answer(&first, json!({"action": "accept", "content": {"confirm": true}}))).await;
    c.send(&answer(&second, json!({"action": "decline"}))).await;
    let body = body(&c.recv().await);
    let outcomes: Vec<&str> =
        body["answers"].as_array().unwrap().iter().map(|a| a["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["accept", "decline"]);
}

#[tokio::test]
async fn url_mode_completes_with_the_elicitation_id_or_an_unknown_one_or_never() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "elicitation_url"})).await;
    let asked = c.recv().await;
    let params = asked.value().unwrap()["params"].clone();
    assert_eq!(params["mode"], "url");
    assert!(params["url"].as_str().unwrap().starts_with("https://"));
    c.send(&answer(&asked, json!({"action": "accept"}))).await;
    let complete = c.recv().await;
    assert_eq!(complete.method(), Some("notifications/elicitation/complete"));
    assert_eq!(complete.value().unwrap()["params"]["elicitationId"], params["elicitationId"]);
    assert_eq!(c.recv().await.id(), Some(&MessageId::from(2)));

    c.call(3, "ask_client", json!({"ask": "elicitation_url", "fault": "completion_unknown_id"})).await;
    let asked = c.recv().await;
    c.send(&answer(&asked, json!({"action": "accept"}))).await;
    let complete = c.recv().await;
    assert_eq!(
        complete.value().unwrap()["params"]["elicitationId"],
        faultlab_engine::catalogue::UNKNOWN_ELICITATION_ID
    );
    assert_ne!(complete.value().unwrap()["params"]["elicitationId"], asked.value().unwrap()["params"]["elicitationId"]);
    assert_eq!(c.recv().await.id(), Some(&MessageId::from(3)));

    c.call(4, "ask_client", json!({"ask": "elicitation_url", "fault": "completion_missing"})).await;
    let asked = c.recv().await;
    c.send(&answer(&asked, json!({"action": "accept"}))).await;
    let reply = c.recv().await;
    assert_eq!(reply.id(), Some(&MessageId::from(4)), "the result, with no completion before it: {reply:?}");
}

#[tokio::test]
async fn an_odd_schema_breaks_the_flat_primitive_rule() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "elicitation_form", "fault": "odd_schema"})).await;
    let asked = c.recv().await;
    let schema = &asked.value().unwrap()["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["target"]["type"], "object");
    assert_eq!(schema["properties"]["files"]["items"]["type"], "object");
    c.send(&answer(&asked, json!({"action": "decline"}))).await;
    assert_eq!(body(&c.recv().await)["answers"][0]["outcome"], "decline");
    // A fault that needs another ask is refused, naming both.
    c.call(3, "ask_client", json!({"ask": "roots", "fault": "odd_schema"})).await;
    assert!(text_of(&c.recv().await).contains("fault odd_schema needs ask elicitation_form"));
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_answers_times_the_ask_out_and_the_call_still_finishes() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "roots", "answerTimeoutMs": 1000})).await;
    let asked = c.recv().await;
    let start = tokio::time::Instant::now();
    // The server gives up after 1 s and tells the client so.
    let cancel = c.recv().await;
    assert_eq!(cancel.method(), Some("notifications/cancelled"));
    assert_eq!(cancel.value().unwrap()["params"]["requestId"], asked.value().unwrap()["id"]);
    let reply = c.recv().await;
    assert_eq!(start.elapsed(), Duration::from_millis(1000));
    assert_eq!(body(&reply)["answers"][0]["outcome"], "timeout");
    // The answer arrives late, then one for an id never sent, then a malformed one: none of them is a panic, and
    // the connection keeps working.
    c.send(&answer(&asked, json!({"roots": []}))).await;
    c.send(&json!({"jsonrpc": "2.0", "id": "never-sent", "result": {"roots": []}})).await;
    c.send(&json!({"jsonrpc": "2.0", "id": asked.value().unwrap()["id"], "result": 5, "error": {}})).await;
    // JSON-RPC answers a message that is neither a request nor a response (a result and an error) with an
    // `Invalid request` error whose id is null; the late and unknown-id answers get nothing.
    let invalid = c.recv().await;
    assert_eq!(invalid.value().unwrap()["error"]["code"], -32600, "{invalid:?}");
    c.call(3, "ping", json!({})).await;
    let next = c.recv().await;
    assert_eq!(next.id(), Some(&MessageId::from(3)), "{next:?}");
}

#[tokio::test(start_paused = true)]
async fn never_finish_holds_the_call_after_the_answer_until_the_client_cancels() {
    let mut c = StdioClient::start_declaring(everything()).await;
    c.call(2, "ask_client", json!({"ask": "elicitation_form", "fault": "never_finish"})).await;
    let asked = c.recv().await;
    c.send(&answer(&asked, json!({"action": "accept", "content": {"confirm": true}}))).await;
    c.call(3, "delay", json!({"delayMs": 15_000})).await;
    assert_eq!(c.recv().await.id(), Some(&MessageId::from(3)), "15 s later, still no result for the answered call");
    c.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}})).await;
    c.call(4, "ping", json!({})).await;
    assert_eq!(c.recv().await.id(), Some(&MessageId::from(4)));
    assert_eq!(ask_outcomes(&c), [("never_finish".to_owned(), "accept".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn pending_asks_are_bounded_per_connection_and_freed_when_their_calls_end() {
    let mut c = StdioClient::start_declaring(everything()).await;
    let first = 10;
    for id in first..first + MAX_PENDING_ASKS as i64 {
        c.call(id, "ask_client", json!({"ask": "roots", "answerTimeoutMs": 30_000})).await;
        assert_eq!(c.recv().await.method(), Some("roots/list"));
    }
    c.call(2, "ask_client", json!({"ask": "roots"})).await;
    let refused = c.recv().await;
    assert_eq!(refused.id(), Some(&MessageId::from(2)));
    assert!(text_of(&refused).contains("already pending"), "{refused:?}");
    // Cancelling one call releases its place.
    c.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": first}})).await;
    c.call(3, "ask_client", json!({"ask": "roots"})).await;
    let mut asked = None;
    while asked.is_none() {
        let frame = c.recv().await;
        if frame.method() == Some("roots/list") {
            asked = Some(frame);
        }
    }
    c.send(&answer(&asked.unwrap(), json!({"roots": [{"uri": "file:///tmp"}]}))).await;
    loop {
        let frame = c.recv().await;
        if frame.id() == Some(&MessageId::from(3)) {
            assert_eq!(body(&frame)["answers"][0]["outcome"], "answered");
            break;
        }
    }
}

#[tokio::test]
async fn the_modern_era_forbids_asking_and_the_tool_says_so() {
    let mut c = StdioClient::start(None).await;
    c.send(&call(2, "ask_client", json!({"ask": "elicitation_form"}), Some(modern_meta()))).await;
    let reply = c.recv().await;
    assert_eq!(reply.id(), Some(&MessageId::from(2)));
    assert_eq!(body(&reply)["status"], "unsupported");
}

fn with_token(mut request: Value, token: &str) -> Value {
    request["params"]["_meta"] = json!({"progressToken": token});
    request
}

#[tokio::test(start_paused = true)]
async fn progress_keeps_coming_every_interval_past_a_base_timeout_then_the_result() {
    let mut c = StdioClient::start_declaring(json!({})).await;
    let start = tokio::time::Instant::now();
    c.send(&with_token(call(2, "progress_stream", json!({"everyMs": 1000, "count": 5}), None), "t")).await;
    for expected in 1..=5 {
        let note = c.recv().await;
        assert_eq!(note.method(), Some("notifications/progress"));
        assert_eq!(note.value().unwrap()["params"]["progressToken"], "t");
        // rmcp writes progress as a JSON float.
        assert_eq!(note.value().unwrap()["params"]["progress"].as_f64(), Some(expected as f64));
        assert_eq!(start.elapsed(), Duration::from_millis(1000 * expected));
    }
    let reply = c.recv().await;
    assert_eq!(reply.id(), Some(&MessageId::from(2)));
    assert_eq!(body(&reply)["sent"], 5);
}

#[tokio::test(start_paused = true)]
async fn progress_can_go_backwards_or_name_a_token_no_request_carried() {
    let mut c = StdioClient::start_declaring(json!({})).await;
    let args = json!({"everyMs": 10, "count": 3, "shape": "backwards"});
    c.send(&with_token(call(2, "progress_stream", args, None), "t")).await;
    let mut values = Vec::new();
    for _ in 0..3 {
        values.push(c.recv().await.value().unwrap()["params"]["progress"].as_f64().unwrap());
    }
    assert_eq!(values, [3.0, 2.0, 1.0]);
    assert_eq!(c.recv().await.id(), Some(&MessageId::from(2)));

    // No token on the request: the unknown token is sent anyway.
    c.call(3, "progress_stream", json!({"everyMs": 10, "count": 1, "shape": "unknown_token"})).await;
    let note = c.recv().await;
    assert_eq!(note.value().unwrap()["params"]["progressToken"], "faultlab-unknown-progress-token");
    assert_eq!(c.recv().await.id(), Some(&MessageId::from(3)));
    // Steady without a token: nothing but the result, after count x everyMs.
    let start = tokio::time::Instant::now();
    c.call(4, "progress_stream", json!({"everyMs": 100, "count": 3})).await;
    let reply = c.recv().await;
    assert_eq!(reply.id(), Some(&MessageId::from(4)));
    assert_eq!(start.elapsed(), Duration::from_millis(300));
    assert_eq!(body(&reply)["sent"], 0);
}

#[tokio::test]
async fn over_sessionless_http_the_request_goes_out_but_no_answer_can_come_back() {
    let server = HttpServer::start().await;
    let args = json!({"ask": "sampling", "fault": "undeclared", "answerTimeoutMs": 200});
    let response = within(
        "the sessionless call",
        server.post(&call(5, "ask_client", args, None), None).header("mcp-protocol-version", "2025-11-25").send(),
    )
    .await
    .unwrap();
    let text = within("its body", response.text()).await.unwrap();
    // The request rides on the call's own stream, but without a session no POST can carry the answer back to it:
    // the server gives up after answerTimeoutMs and says so.
    assert!(text.contains(r#""method":"sampling/createMessage""#), "{text}");
    assert!(text.contains(r#"\"outcome\":\"timeout\""#), "{text}");
    server.shutdown.cancel();
}
