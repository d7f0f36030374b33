//! The MCP-Faultline faults on the wire: the stdio front with `--fault '<rule>'` rules in front of the real
//! server in process, a raw line client, and the exact bytes it receives. Each rule matches only `delay` calls
//! with `delayMs: 2` (or a given tool), so every test also checks that the other calls' replies arrive byte for
//! byte as the server wrote them.

use serde_json::{Value, json};

use crate::harness::Client;

/// A proxy with one rule: `fault` on `delay` calls whose `delayMs` is 2.
fn faulting_delay_2(fault: &str) -> Client {
    let rule = format!("{{match: {{tool: delay, argument: {{pointer: /delayMs, equals: 2}}}}, fault: {fault}}}");
    Client::with_faults(&[&rule])
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
    let mut client = faulting_delay_2("{type: rate_limit, retry_after_sec: 3}");
    client.initialize().await;
    let expected = error_line(
        1,
        json!({"code": -32029, "message": "HTTP 429: Too many requests", "data": {"httpStatus": 429, "retryAfterSec": 3}}),
    );
    assert_eq!(delay(&mut client, 1, 2).await, expected);
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn auth_expired_and_forbidden_answer_with_their_json_rpc_errors() {
    let mut client = Client::with_faults(&[
        "{match: {tool: delay, argument: {pointer: /delayMs, equals: 2}}, fault: {type: auth_expired}}",
        "{match: {tool: delay, argument: {pointer: /delayMs, equals: 3}}, fault: {type: forbidden}}",
    ]);
    client.initialize().await;
    let unauthorized = json!({"code": -32001, "message": "HTTP 401: Unauthorized: authentication expired",
        "data": {"httpStatus": 401}});
    assert_eq!(delay(&mut client, 1, 2).await, error_line(1, unauthorized));
    let forbidden = json!({"code": -32003, "message": "HTTP 403: Forbidden", "data": {"httpStatus": 403}});
    assert_eq!(delay(&mut client, 2, 3).await, error_line(2, forbidden));
    assert_eq!(delay(&mut client, 3, 1).await, delay_line(3, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn invalid_schema_turns_the_content_array_into_an_object() {
    let mut client = faulting_delay_2("{type: invalid_schema}");
    client.initialize().await;
    assert_eq!(delay(&mut client, 1, 2).await, result_line(1, json!({"0": {"type": "text", "text": delay_text(2)}})));
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn missing_field_removes_the_content_by_default_or_the_member_named() {
    let mut client = Client::with_faults(&[
        "{match: {tool: delay, argument: {pointer: /delayMs, equals: 2}}, fault: {type: missing_field}}",
        "{match: {tool: delay, argument: {pointer: /delayMs, equals: 3}}, \
         fault: {type: missing_field, pointer: /result/isError}}",
    ]);
    client.initialize().await;
    assert_eq!(delay(&mut client, 1, 2).await, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":false}}\n");
    let without_is_error =
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": delay_text(3)}]}});
    assert_eq!(delay(&mut client, 2, 3).await, without_is_error.to_string() + "\n");
    assert_eq!(delay(&mut client, 3, 1).await, delay_line(3, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn empty_sends_a_valid_result_with_no_content() {
    let mut client = faulting_delay_2("{type: empty}");
    client.initialize().await;
    assert_eq!(delay(&mut client, 1, 2).await, result_line(1, json!([])));
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn partial_result_keeps_the_first_half_of_a_single_text() {
    let mut client = faulting_delay_2("{type: partial_result}");
    client.initialize().await;
    let text = delay_text(2);
    let half = &text[..text.len() / 2];
    assert_eq!(half, r#"{"status":"delay"#);
    assert_eq!(delay(&mut client, 1, 2).await, result_line(1, json!([{"type": "text", "text": half}])));
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn wrong_value_sets_the_value_at_a_pointer_inside_the_result() {
    let mut client = faulting_delay_2("{type: wrong_value, pointer: /content/0/text, value: tampered}");
    client.initialize().await;
    assert_eq!(delay(&mut client, 1, 2).await, result_line(1, json!([{"type": "text", "text": "tampered"}])));
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn contradictory_appends_a_text_with_a_changed_value() {
    let mut client = faulting_delay_2("{type: contradictory}");
    client.initialize().await;
    let both = json!([{"type": "text", "text": delay_text(2)}, {"type": "text", "text": delay_text(3)}]);
    assert_eq!(delay(&mut client, 1, 2).await, result_line(1, both));
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn stale_serves_the_last_real_reply_of_the_same_tool_with_the_new_id() {
    let mut client = faulting_delay_2("{type: stale}");
    client.initialize().await;
    assert_eq!(delay(&mut client, 1, 2).await, delay_line(1, 2), "nothing earlier: the reply passes unchanged");
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
    client.call(3, "ping", json!({})).await;
    assert_eq!(serde_json::from_str::<Value>(&client.recv_line().await).unwrap()["id"], 3, "another tool");
    assert_eq!(delay(&mut client, 4, 2).await, delay_line(4, 1), "the reply to call 2 (delayMs 1), with id 4");
    assert_eq!(delay(&mut client, 5, 2).await, delay_line(5, 1), "a stale reply is not remembered as real");
    assert_eq!(delay(&mut client, 6, 1).await, delay_line(6, 1));
    client.finish_clean().await;
}

#[tokio::test]
async fn replayed_resends_the_last_real_reply_with_its_old_id_after_this_one() {
    let mut client = faulting_delay_2("{type: replayed}");
    client.initialize().await;
    assert_eq!(delay(&mut client, 1, 2).await, delay_line(1, 2), "nothing earlier: only the reply");
    assert_eq!(delay(&mut client, 2, 1).await, delay_line(2, 1));
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
