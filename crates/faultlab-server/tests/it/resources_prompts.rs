//! The server's resources and prompts, and `list_pagination {list: resources | prompts}` paging their lists with
//! broken cursors on the bytes, while the other lists stay whole.

use super::util::{HttpServer, StdioClient, exchange, messages, text_of};
use serde_json::{Value, json};

/// Sends `method` with `params` as request `id`; returns the reply's raw line and its parsed value.
async fn request(client: &mut StdioClient, id: i64, method: &str, params: Value) -> (String, Value) {
    client.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
    let line = client.recv_raw().await.expect("a reply");
    let text = String::from_utf8(line).unwrap();
    let value: Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(value["id"], id, "the next line is the reply, not a notification: {text}");
    (text, value)
}

/// `list_pagination` with `args`; returns its result text, after checking no notification came first.
async fn paginate(client: &mut StdioClient, id: i64, args: Value) -> String {
    client.call(id, "list_pagination", args).await;
    let frame = client.recv().await;
    assert_eq!(frame.value().unwrap()["id"], id, "resources and prompts change without a notification");
    text_of(&frame)
}

/// The whole list's result: what the pages are cut from.
async fn whole(client: &mut StdioClient, id: i64, method: &str) -> Value {
    request(client, id, method, json!({})).await.1["result"].clone()
}

/// `whole` with its `key` list cut to `range` and `nextCursor` set: the page a client should get.
fn page(whole: &Value, key: &str, range: std::ops::Range<usize>, next: &str) -> Value {
    let mut page = whole.clone();
    page[key] = Value::Array(whole[key].as_array().unwrap()[range].to_vec());
    page["nextCursor"] = json!(next);
    page
}

#[tokio::test]
async fn the_server_offers_resources_and_prompts_that_read_and_get() {
    let mut fresh = StdioClient::start(Some("2025-11-25")).await;
    let resources = whole(&mut fresh, 2, "resources/list").await;
    let listed = resources["resources"].as_array().unwrap();
    assert_eq!(listed.len(), 12, "{resources}");
    assert!(resources.get("nextCursor").is_none(), "one whole list when no fault is armed");
    let uri = listed[11]["uri"].as_str().unwrap();
    let (_, read) = request(&mut fresh, 3, "resources/read", json!({"uri": uri})).await;
    assert_eq!(read["result"]["contents"][0]["uri"], uri, "{read}");
    assert!(read["result"]["contents"][0]["text"].as_str().unwrap().contains("12 of 12"));
    let (_, missing) = request(&mut fresh, 4, "resources/read", json!({"uri": "faultlab://lab/none"})).await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let prompts = whole(&mut fresh, 5, "prompts/list").await;
    assert_eq!(prompts["prompts"].as_array().unwrap().len(), 12, "{prompts}");
    let name = prompts["prompts"][0]["name"].as_str().unwrap();
    let (_, got) =
        request(&mut fresh, 6, "prompts/get", json!({"name": name, "arguments": {"topic": "timeouts"}})).await;
    assert!(got["result"]["messages"][0]["content"]["text"].as_str().unwrap().contains("timeouts"), "{got}");
    let (_, missing) = request(&mut fresh, 7, "prompts/get", json!({"name": "nope"})).await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
}

#[tokio::test]
async fn the_handshake_declares_resources_and_prompts() {
    let mut client = StdioClient::start(None).await;
    client.send(&super::util::initialize(1, "2025-11-25")).await;
    let reply = client.recv().await.value().unwrap().clone();
    let caps = &reply["result"]["capabilities"];
    assert!(caps["resources"].is_object() && caps["prompts"].is_object(), "{reply}");
}

#[tokio::test]
async fn stuck_resources_pages_never_advance_and_tools_stay_whole() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let resources = whole(&mut client, 2, "resources/list").await;
    let tools = whole(&mut client, 3, "tools/list").await;
    let text = paginate(&mut client, 4, json!({"variant": "stuck", "list": "resources", "pageSize": 5})).await;
    assert!(text.contains(r#""list":"resources""#), "{text}");
    let first = page(&resources, "resources", 0..5, "faultlab-page-1");
    for (id, cursor) in [(5, None), (6, Some("faultlab-page-1")), (7, Some("faultlab-page-1"))] {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        let (line, reply) = request(&mut client, id, "resources/list", params).await;
        assert_eq!(reply["result"], first, "every page is the first: {line}");
        assert!(line.contains(r#""nextCursor":"faultlab-page-1""#), "{line}");
    }
    assert_eq!(whole(&mut client, 8, "tools/list").await, tools, "only the resources list is paged");
    assert!(whole(&mut client, 9, "prompts/list").await.get("nextCursor").is_none());
    paginate(&mut client, 10, json!({"variant": "off", "list": "resources"})).await;
    assert_eq!(whole(&mut client, 11, "resources/list").await, resources, "off: one whole list again");
}

#[tokio::test]
async fn cycling_prompts_pages_come_back_and_page_two_can_fail() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let prompts = whole(&mut client, 2, "prompts/list").await;
    paginate(&mut client, 3, json!({"variant": "cycle", "list": "prompts", "pageSize": 5})).await;
    let (a_line, a) = request(&mut client, 4, "prompts/list", json!({})).await;
    assert_eq!(a["result"], page(&prompts, "prompts", 0..5, "faultlab-page-1"), "{a_line}");
    let (b_line, b) = request(&mut client, 5, "prompts/list", json!({"cursor": "faultlab-page-1"})).await;
    assert_eq!(b["result"], page(&prompts, "prompts", 5..10, "faultlab-page-2"), "{b_line}");
    let (c_line, c) = request(&mut client, 6, "prompts/list", json!({"cursor": "faultlab-page-2"})).await;
    assert_eq!(c["result"], a["result"], "B leads back to A's page, and prompts 11 and 12 never come: {c_line}");
    assert!(c_line.contains(r#""nextCursor":"faultlab-page-1""#));
    paginate(&mut client, 7, json!({"variant": "page-error", "list": "prompts", "pageSize": 5})).await;
    let (_, first) = request(&mut client, 8, "prompts/list", json!({})).await;
    let cursor = first["result"]["nextCursor"].clone();
    let (line, error) = request(&mut client, 9, "prompts/list", json!({"cursor": cursor})).await;
    assert_eq!(error["error"]["code"], -32603, "{line}");
    let (_, resources) = request(&mut client, 10, "resources/list", json!({})).await;
    assert_eq!(resources["result"]["resources"].as_array().unwrap().len(), 12, "resources stay whole");
}

#[tokio::test]
async fn an_unknown_list_is_refused_by_name() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    client.call(2, "list_pagination", json!({"variant": "stuck", "list": "templates"})).await;
    let reply = client.recv().await.value().unwrap().clone();
    assert_eq!(reply["result"]["isError"], true, "a tool error the model can read: {reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("templates") && text.contains("resources") && text.contains("prompts"), "{reply}");
}

#[tokio::test]
async fn over_a_legacy_session_resources_pages_stay_stuck_between_requests() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let arm = super::util::call(2, "list_pagination", json!({"variant": "stuck", "list": "resources"}), None);
    let (status, content_type, body) = exchange(server.post(&arm, Some(&sid))).await;
    assert_eq!(status, 200);
    assert!(text_of(messages(&content_type, &body.unwrap()).last().unwrap()).contains("pagination-armed"));
    for (id, cursor) in [(3, json!({})), (4, json!({"cursor": "faultlab-page-1"}))] {
        let listing = json!({"jsonrpc": "2.0", "id": id, "method": "resources/list", "params": cursor});
        let (_, content_type, body) = exchange(server.post(&listing, Some(&sid))).await;
        let reply = messages(&content_type, &body.unwrap())[0].value().unwrap().clone();
        let names: Vec<_> =
            reply["result"]["resources"].as_array().unwrap().iter().map(|r| r["name"].clone()).collect();
        assert_eq!(names, ["note-01", "note-02", "note-03", "note-04", "note-05"], "{reply}");
        assert_eq!(reply["result"]["nextCursor"], "faultlab-page-1", "{reply}");
    }
}
