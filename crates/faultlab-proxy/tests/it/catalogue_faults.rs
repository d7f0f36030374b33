//! The MCP-Faultline faults on the wire: the stdio front with `--fault '<rule>'` rules in front of the real
//! server in process, a raw line client, and the exact bytes it receives. Each rule matches only `delay` calls
//! with `delayMs: 2` (or a given tool), so every test also checks that the other calls' replies arrive byte for
//! byte as the server wrote them.

use serde_json::{Value, json};

use crate::harness::Client;

/// A rule: `fault` on `delay` calls whose `delayMs` is `ms`.
fn on_delay(ms: u64, fault: &str) -> String {
    format!("{{match: {{tool: delay, argument: {{pointer: /delayMs, equals: {ms}}}}}, fault: {fault}}}")
}

/// A proxy with one rule: `fault` on `delay` calls whose `delayMs` is 2.
fn faulting_delay_2(fault: &str) -> Client {
    Client::with_faults(&[&on_delay(2, fault)])
}

/// Through a proxy with `rules`, each `(delayMs, line)` in turn: a `delay` call (ids 1, 2...) gets that line back;
/// then a `delay` of 1 ms, which no rule matches, passes unchanged and the session ends cleanly.
async fn expect_replies(rules: &[String], expected: &[(u64, String)]) {
    let mut client = Client::with_faults(&rules.iter().map(String::as_str).collect::<Vec<_>>());
    client.initialize().await;
    for (id, (ms, line)) in (1..).zip(expected) {
        assert_eq!(delay(&mut client, id, *ms).await, *line, "delayMs {ms}");
    }
    let id = expected.len() as i64 + 1;
    assert_eq!(delay(&mut client, id, 1).await, delay_line(id, 1));
    client.finish_clean().await;
}

/// A proxy with `fault` on `delayMs: 2`, after two `delay` calls (ids 1 and 2, 2 ms then 1 ms) whose replies
/// arrived unchanged: for the first, the fault had no earlier reply to use (`why`).
async fn after_two_real_replies(fault: &str, why: &str) -> Client {
    let mut client = faulting_delay_2(fault);
    client.initialize().await;
    assert_eq!(delay(&mut client, 1, 2).await, delay_line(1, 2), "{why}");
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client
}

/// [`expect_replies`] with the one rule `fault` on `delayMs: 2`: the first call's reply is `line`.
async fn expect_faulted_reply(fault: &str, line: String) {
    expect_replies(&[on_delay(2, fault)], &[(2, line)]).await;
}

/// Calls `delay` with `delayMs: ms` and returns the line that comes back.
async fn delay(client: &mut Client, id: i64, ms: u64) -> String {
    client.call(id, "delay", json!({"delayMs": ms})).await;
    client.recv_line().await
}

/// The text `faultlab serve`'s `delay` tool answers with.
fn delay_text(ms: u64) -> String {
    json!({"status": "delayed", "delayMs": ms}).to_string()
}

/// A tool result line as `faultlab serve` writes it, with this `content`.
fn result_line(id: i64, content: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": content, "isError": false}}).to_string() + "\n"
}

/// The untouched reply to `delay` with `delayMs: ms`.
fn delay_line(id: i64, ms: u64) -> String {
    result_line(id, json!([{"type": "text", "text": delay_text(ms)}]))
}

/// A JSON-RPC error line.
fn error_line(id: i64, error: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string() + "\n"
}

#[tokio::test]
async fn rate_limit_answers_with_a_json_rpc_error_carrying_the_retry_delay() {
    let expected = error_line(
        1,
        json!({"code": -32029, "message": "HTTP 429: Too many requests", "data": {"httpStatus": 429, "retryAfterSec": 3}}),
    );
    expect_faulted_reply("{type: rate_limit, retry_after_sec: 3}", expected).await;
}

#[tokio::test]
async fn auth_expired_and_forbidden_answer_with_their_json_rpc_errors() {
    let unauthorized = json!({"code": -32001, "message": "HTTP 401: Unauthorized: authentication expired",
        "data": {"httpStatus": 401}});
    let forbidden = json!({"code": -32003, "message": "HTTP 403: Forbidden", "data": {"httpStatus": 403}});
    expect_replies(
        &[on_delay(2, "{type: auth_expired}"), on_delay(3, "{type: forbidden}")],
        &[(2, error_line(1, unauthorized)), (3, error_line(2, forbidden))],
    )
    .await;
}

#[tokio::test]
async fn invalid_schema_turns_the_content_array_into_an_object() {
    let object = result_line(1, json!({"0": {"type": "text", "text": delay_text(2)}}));
    expect_faulted_reply("{type: invalid_schema}", object).await;
}

#[tokio::test]
async fn missing_field_removes_the_content_by_default_or_the_member_named() {
    let without_content = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":false}}\n".to_owned();
    let without_is_error =
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": delay_text(3)}]}});
    expect_replies(
        &[on_delay(2, "{type: missing_field}"), on_delay(3, "{type: missing_field, pointer: /result/isError}")],
        &[(2, without_content), (3, without_is_error.to_string() + "\n")],
    )
    .await;
}

#[tokio::test]
async fn empty_sends_a_valid_result_with_no_content() {
    expect_faulted_reply("{type: empty}", result_line(1, json!([]))).await;
}

#[tokio::test]
async fn partial_result_keeps_the_first_half_of_a_single_text() {
    let text = delay_text(2);
    let half = &text[..text.len() / 2];
    assert_eq!(half, r#"{"status":"delay"#);
    expect_faulted_reply("{type: partial_result}", result_line(1, json!([{"type": "text", "text": half}]))).await;
}

#[tokio::test]
async fn wrong_value_sets_the_value_at_a_pointer_inside_the_result() {
    let tampered = result_line(1, json!([{"type": "text", "text": "tampered"}]));
    expect_faulted_reply("{type: wrong_value, pointer: /content/0/text, value: tampered}", tampered).await;
}

#[tokio::test]
async fn contradictory_appends_a_text_with_a_changed_value() {
    let both = json!([{"type": "text", "text": delay_text(2)}, {"type": "text", "text": delay_text(3)}]);
    expect_faulted_reply("{type: contradictory}", result_line(1, both)).await;
}

#[tokio::test]
async fn stale_serves_the_last_real_reply_of_the_same_tool_with_the_new_id() {
    let mut client = after_two_real_replies("{type: stale}", "nothing earlier: the reply passes unchanged").await;
    client.call(3, "ping", json!({})).await;
    assert_eq!(serde_json::from_str::<Value>(&client.recv_line().await).unwrap()["id"], 3, "another tool");
    assert_eq!(delay(&mut client, 4, 2).await, delay_line(4, 1), "the reply to call 2 (delayMs 1), with id 4");
    assert_eq!(delay(&mut client, 5, 2).await, delay_line(5, 1), "a stale reply is not remembered as real");
    assert_eq!(delay(&mut client, 6, 1).await, delay_line(6, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn replayed_resends_the_last_real_reply_with_its_old_id_after_this_one() {
    let mut client = after_two_real_replies("{type: replayed}", "nothing earlier: only the reply").await;
    assert_eq!(delay(&mut client, 3, 2).await, delay_line(3, 2));
    assert_eq!(client.recv_line().await, delay_line(2, 1), "the reply to call 2 again, byte for byte");
    assert_eq!(delay(&mut client, 4, 1).await, delay_line(4, 1));
    client.finish_clean().await;
}

/// The paused clock: the 400 ms pass as soon as nothing else can happen.
#[tokio::test(start_paused = true)]
async fn delayed_is_latency_holding_back_only_its_own_reply() {
    let mut client = faulting_delay_2("{type: delayed, delay_ms: 400}");
    client.initialize().await;
    client.call(1, "delay", json!({"delayMs": 2})).await;
    client.call(2, "delay", json!({"delayMs": 1})).await;
    assert_eq!(client.recv_line().await, delay_line(2, 1), "the unrelated reply overtakes the held one");
    assert_eq!(client.recv_line().await, delay_line(1, 2), "then the held reply, unchanged");
    client.finish_clean().await;
}
