//! The tool surface tools over stdio and a 2025-11-25 HTTP session: a tool list that drifts after
//! `tool_list_drift` (with or without `notifications/tools/list_changed`), calls to the tool that is gone, and
//! `tools/list` paged with broken cursors after `list_pagination`.

use super::util::{HttpServer, StdioClient, exchange, messages, text_of};
use serde_json::{Value, json};

/// Lists tools with `cursor` as request `id`; returns the names and the next cursor.
async fn list(client: &mut StdioClient, id: i64, cursor: Option<&str>) -> (Vec<String>, Option<String>) {
    let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
    client.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})).await;
    let reply = client.recv().await;
    let result = reply.value().unwrap()["result"].clone();
    let names = result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    (names, result["nextCursor"].as_str().map(str::to_owned))
}

fn tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["name"] == name)
}

async fn listed_tools(client: &mut StdioClient, id: i64) -> Vec<Value> {
    client.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})).await;
    client.recv().await.value().unwrap()["result"]["tools"].as_array().unwrap().clone()
}

/// Calls `tool` and returns the reply, after any notifications (counted).
async fn call(client: &mut StdioClient, id: i64, tool: &str, args: Value) -> (Value, usize) {
    client.call(id, tool, args).await;
    let mut notes = 0;
    loop {
        let frame = client.recv().await;
        let value = frame.value().unwrap().clone();
        if value["method"] == "notifications/tools/list_changed" {
            notes += 1;
            continue;
        }
        return (value, notes);
    }
}

#[tokio::test]
async fn a_removed_tool_leaves_the_list_and_its_calls_get_invalid_params() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let before = listed_tools(&mut client, 2).await;
    assert!(tool(&before, "surface_probe").is_some());
    assert!(tool(&before, "surface_probe_v2").is_none(), "the renamed twin is never listed by the server itself");
    let (reply, notes) = call(&mut client, 3, "tool_list_drift", json!({"change": "removed"})).await;
    assert_eq!(notes, 1, "list_changed precedes the result: {reply}");
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("drift-armed"));
    let after = listed_tools(&mut client, 4).await;
    assert!(tool(&after, "surface_probe").is_none());
    assert_eq!(after.len(), before.len() - 1, "only the probe is gone");
    for id in [5, 6] {
        let (reply, _) = call(&mut client, id, "surface_probe", json!({"text": "hi"})).await;
        assert_eq!(reply["error"]["code"], -32602, "every later call: {reply}");
        assert!(reply["error"]["message"].as_str().unwrap().contains("surface_probe"));
    }
    let (reply, _) = call(&mut client, 7, "ping", json!({})).await;
    assert!(reply.get("result").is_some(), "other tools still answer: {reply}");
}

#[tokio::test]
async fn a_renamed_tool_answers_by_its_new_name_only_and_silently_without_notify() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let (reply, _) = call(&mut client, 2, "surface_probe_v2", json!({})).await;
    assert_eq!(reply["error"]["code"], -32602, "before the drift the new name is unknown: {reply}");
    let (_, notes) = call(&mut client, 3, "tool_list_drift", json!({"change": "renamed", "notify": false})).await;
    assert_eq!(notes, 0, "no list_changed: the list changes silently");
    let after = listed_tools(&mut client, 4).await;
    assert!(tool(&after, "surface_probe_v2").is_some() && tool(&after, "surface_probe").is_none());
    let (reply, _) = call(&mut client, 5, "surface_probe_v2", json!({"text": "hi"})).await;
    assert!(text_of_value(&reply).contains("surface_probe_v2"), "{reply}");
    let (reply, _) = call(&mut client, 6, "surface_probe", json!({})).await;
    assert_eq!(reply["error"]["code"], -32602);
}

#[tokio::test]
async fn an_input_schema_drift_requires_the_new_argument_and_unchanged_only_notifies() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    call(&mut client, 2, "tool_list_drift", json!({"change": "input-schema"})).await;
    let after = listed_tools(&mut client, 3).await;
    let schema = &tool(&after, "surface_probe").unwrap()["inputSchema"];
    assert!(schema["required"].as_array().unwrap().contains(&json!("confirm")), "{schema}");
    let (reply, _) = call(&mut client, 4, "surface_probe", json!({"text": "old schema"})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("confirm"));
    let (reply, _) = call(&mut client, 5, "surface_probe", json!({"text": "new", "confirm": "yes"})).await;
    assert!(reply.get("result").is_some(), "{reply}");
    let (_, notes) = call(&mut client, 6, "tool_list_drift", json!({"change": "unchanged"})).await;
    assert_eq!(notes, 1, "the notification comes, for a list that is as it was");
    let restored = listed_tools(&mut client, 7).await;
    assert!(!tool(&restored, "surface_probe").unwrap()["inputSchema"]["required"].is_array());
    let (reply, _) = call(&mut client, 8, "surface_probe", json!({})).await;
    assert!(reply.get("result").is_some(), "{reply}");
}

fn text_of_value(reply: &Value) -> String {
    reply.pointer("/result/content/0/text").and_then(Value::as_str).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn stuck_pages_never_advance_and_cycles_come_back() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let (reply, notes) = call(&mut client, 2, "list_pagination", json!({"variant": "stuck", "pageSize": 3})).await;
    assert_eq!(notes, 1, "{reply}");
    let first = list(&mut client, 3, None).await;
    assert_eq!(first.0.len(), 3);
    let again = list(&mut client, 4, first.1.as_deref()).await;
    assert_eq!(again, first, "the cursor leads to the same page");
    call(&mut client, 5, "list_pagination", json!({"variant": "cycle", "pageSize": 3})).await;
    let a = list(&mut client, 6, None).await;
    let b = list(&mut client, 7, a.1.as_deref()).await;
    let c = list(&mut client, 8, b.1.as_deref()).await;
    assert_ne!(a.0, b.0);
    assert_eq!(c.0, a.0, "B leads back to A's page");
}

#[tokio::test]
async fn empty_cursors_page_errors_and_off() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let whole = listed_tools(&mut client, 2).await.len();
    call(&mut client, 3, "list_pagination", json!({"variant": "empty-continuation", "pageSize": 5})).await;
    let first = list(&mut client, 4, None).await;
    assert_eq!(first.1.as_deref(), Some(""), "\"\" is the next cursor");
    let rest = list(&mut client, 5, Some("")).await;
    assert_eq!(rest.0.len(), 5, "a client that follows \"\" gets the second page");
    call(&mut client, 6, "list_pagination", json!({"variant": "page-error", "pageSize": 5})).await;
    let first = list(&mut client, 7, None).await;
    client.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"cursor": first.1}})).await;
    let error = client.recv().await.value().unwrap().clone();
    assert_eq!(error["error"]["code"], -32603, "{error}");
    call(&mut client, 9, "list_pagination", json!({"variant": "off"})).await;
    assert_eq!(listed_tools(&mut client, 10).await.len(), whole, "off: one whole list again");
    let (reply, _) = call(&mut client, 11, "list_pagination", json!({"variant": "stuck", "pageSize": 0})).await;
    assert!(text_of_value(&reply).contains("pageSize"), "{reply}");
}

#[tokio::test]
async fn over_a_legacy_session_the_drift_lasts_between_requests() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let drift = super::util::call(2, "tool_list_drift", json!({"change": "removed"}), None);
    let (status, content_type, body) = exchange(server.post(&drift, Some(&sid))).await;
    assert_eq!(status, 200);
    let frames = messages(&content_type, &body.unwrap());
    let methods: Vec<_> = frames.iter().map(|f| f.value().unwrap()["method"].clone()).collect();
    assert_eq!(methods[0], "notifications/tools/list_changed", "on the call's own stream, before its result");
    assert!(text_of(frames.last().unwrap()).contains("drift-armed"));
    let listing = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let (_, content_type, body) = exchange(server.post(&listing, Some(&sid))).await;
    let tools = messages(&content_type, &body.unwrap())[0].value().unwrap()["result"]["tools"].clone();
    assert!(tool(tools.as_array().unwrap(), "surface_probe").is_none());
    let probe = super::util::call(4, "surface_probe", json!({}), None);
    let (_, content_type, body) = exchange(server.post(&probe, Some(&sid))).await;
    let reply = messages(&content_type, &body.unwrap())[0].value().unwrap().clone();
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}
