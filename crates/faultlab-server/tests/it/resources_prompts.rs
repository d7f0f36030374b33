//! The server's resources and prompts, `list_pagination {list: resources | prompts}` paging their lists with
//! broken cursors on the bytes while the other lists stay whole, and `tool_list_drift {list: resources | prompts}`
//! removing, renaming or changing the arguments of one item, announced by the list's own `list_changed` or not.

use super::util::{HttpServer, StdioClient, exchange, messages, modern_meta, text_of};
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

/// Calls `tool` with `args`; returns its result text and the notification methods that came before it.
async fn arm(client: &mut StdioClient, id: i64, tool: &str, args: Value) -> (String, Vec<String>) {
    client.call(id, tool, args).await;
    let mut notes = Vec::new();
    loop {
        let frame = client.recv().await;
        let value = frame.value().unwrap();
        match value["method"].as_str() {
            Some(method) => notes.push(method.to_owned()),
            None => {
                assert_eq!(value["id"], id, "{value}");
                return (text_of(&frame), notes);
            }
        }
    }
}

/// `list_pagination` with `args`; returns its result text, after checking the list's notification came first.
async fn paginate(client: &mut StdioClient, id: i64, args: Value) -> String {
    let list = args["list"].as_str().unwrap_or("tools").to_owned();
    let (text, notes) = arm(client, id, "list_pagination", args).await;
    assert_eq!(notes, [format!("notifications/{list}/list_changed")], "{text}");
    text
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

/// Each list is one whole page; a 2026-07-28 request gets it with the cache hints rmcp lists with (fresh for 0 ms,
/// public: the list may change at any time), a 2025-11-25 session without them.
#[tokio::test]
async fn every_list_is_whole_with_cache_hints_for_2026_07_28_only() {
    let mut legacy = StdioClient::start(Some("2025-11-25")).await;
    let mut modern = StdioClient::start(None).await;
    for (id, method) in [(2, "tools/list"), (3, "resources/list"), (4, "prompts/list")] {
        let old = whole(&mut legacy, id, method).await;
        let hints = |result: &Value| ["ttlMs", "cacheScope", "nextCursor"].map(|key| result.get(key).cloned());
        assert_eq!(hints(&old), [None, None, None], "{method}: {old}");
        let new = request(&mut modern, id, method, json!({"_meta": modern_meta()})).await.1["result"].clone();
        assert_eq!(hints(&new), [Some(json!(0)), Some(json!("public")), None], "{method}: {new}");
        assert_eq!(new["resultType"], "complete", "{method}");
        let key = method.split('/').next().unwrap();
        assert_eq!(new[key], old[key], "{method}: the same items in either era");
    }
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
    // The lists change under a client (drift, pagination) and the server says so.
    assert_eq!(caps["resources"]["listChanged"], true, "{reply}");
    assert_eq!(caps["prompts"]["listChanged"], true, "{reply}");
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

fn names(list: &Value, key: &str, member: &str) -> Vec<String> {
    list[key].as_array().unwrap().iter().map(|item| item[member].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_removed_resource_leaves_the_list_and_its_reads_fail_announced_or_not() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let before = whole(&mut client, 2, "resources/list").await;
    let gone = "faultlab://lab/note-12";
    assert!(names(&before, "resources", "uri").contains(&gone.to_owned()));
    let (text, notes) = arm(&mut client, 3, "tool_list_drift", json!({"change": "removed", "list": "resources"})).await;
    assert_eq!(notes, ["notifications/resources/list_changed"], "{text}");
    assert!(text.contains(gone), "the result names the item: {text}");
    let after = whole(&mut client, 4, "resources/list").await;
    assert_eq!(names(&after, "resources", "uri"), names(&before, "resources", "uri")[..11], "only note-12 is gone");
    let (_, read) = request(&mut client, 5, "resources/read", json!({"uri": gone})).await;
    assert_eq!(read["error"]["code"], -32002, "resource not found: {read}");
    let (_, read) = request(&mut client, 6, "resources/read", json!({"uri": "faultlab://lab/note-01"})).await;
    assert!(read.get("result").is_some(), "the others still read: {read}");
    let probe = whole(&mut client, 7, "tools/list").await;
    assert!(names(&probe, "tools", "name").contains(&"surface_probe".to_owned()), "the tools list does not drift");
    // Renamed silently: no notification, the new URI reads, the old one does not.
    let (_, notes) =
        arm(&mut client, 9, "tool_list_drift", json!({"change": "renamed", "list": "resources", "notify": false}))
            .await;
    assert!(notes.is_empty(), "{notes:?}");
    let renamed = whole(&mut client, 10, "resources/list").await;
    assert_eq!(names(&renamed, "resources", "uri")[11], "faultlab://lab/note-12_v2");
    assert_eq!(names(&renamed, "resources", "name")[11], "note-12_v2");
    let (_, read) = request(&mut client, 11, "resources/read", json!({"uri": "faultlab://lab/note-12_v2"})).await;
    assert_eq!(read["result"]["contents"][0]["uri"], "faultlab://lab/note-12_v2", "{read}");
    assert!(read["result"]["contents"][0]["text"].as_str().unwrap().contains("12 of 12"), "{read}");
    let (_, read) = request(&mut client, 12, "resources/read", json!({"uri": gone})).await;
    assert_eq!(read["error"]["code"], -32002, "{read}");
    // The notification for a list that is as it was, and the old name reads again.
    let (_, notes) = arm(&mut client, 13, "tool_list_drift", json!({"change": "unchanged", "list": "resources"})).await;
    assert_eq!(notes, ["notifications/resources/list_changed"]);
    assert_eq!(whole(&mut client, 14, "resources/list").await, before);
    let (_, read) = request(&mut client, 15, "resources/read", json!({"uri": "faultlab://lab/note-12_v2"})).await;
    assert_eq!(read["error"]["code"], -32002, "the twin is gone with the drift: {read}");
}

#[tokio::test]
async fn a_prompt_drifts_by_name_or_arguments_and_gets_follow_the_list() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    let before = whole(&mut client, 2, "prompts/list").await;
    let (text, notes) = arm(&mut client, 3, "tool_list_drift", json!({"change": "arguments", "list": "prompts"})).await;
    assert_eq!(notes, ["notifications/prompts/list_changed"], "{text}");
    let after = whole(&mut client, 4, "prompts/list").await;
    let arguments = after["prompts"][11]["arguments"].as_array().unwrap().clone();
    assert_eq!(arguments.len(), 2, "{after}");
    assert_eq!((arguments[1]["name"].clone(), arguments[1]["required"].clone()), (json!("confirm"), json!(true)));
    assert_eq!(after["prompts"][0], before["prompts"][0], "only lab_prompt_12 changes");
    let (_, got) = request(&mut client, 5, "prompts/get", json!({"name": "lab_prompt_12"})).await;
    assert_eq!(got["error"]["code"], -32602, "the old arguments no longer do: {got}");
    assert!(got["error"]["message"].as_str().unwrap().contains("confirm"), "{got}");
    let with = json!({"name": "lab_prompt_12", "arguments": {"confirm": "yes"}});
    assert!(request(&mut client, 6, "prompts/get", with).await.1.get("result").is_some());
    let (_, notes) = arm(&mut client, 7, "tool_list_drift", json!({"change": "removed", "list": "prompts"})).await;
    assert_eq!(notes.len(), 1);
    let after = whole(&mut client, 8, "prompts/list").await;
    assert_eq!(after["prompts"].as_array().unwrap().len(), 11, "{after}");
    let (_, got) = request(&mut client, 9, "prompts/get", json!({"name": "lab_prompt_12"})).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    arm(&mut client, 10, "tool_list_drift", json!({"change": "renamed", "list": "prompts"})).await;
    let (_, got) = request(&mut client, 11, "prompts/get", json!({"name": "lab_prompt_12_v2"})).await;
    assert!(got["result"]["messages"][0]["content"]["text"].as_str().unwrap().contains("Lab prompt 12"), "{got}");
}

#[tokio::test]
async fn a_change_that_does_not_fit_the_list_is_a_tool_error() {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    for (args, says) in [
        (json!({"change": "arguments"}), "needs list prompts"),
        (json!({"change": "input-schema", "list": "resources"}), "needs list tools"),
    ] {
        client.call(2, "tool_list_drift", args.clone()).await;
        let reply = client.recv().await.value().unwrap().clone();
        assert_eq!(reply["result"]["isError"], true, "{args}: {reply}");
        assert!(text_of_value(&reply).contains(says), "{args}: {reply}");
    }
    assert_eq!(whole(&mut client, 3, "prompts/list").await["prompts"].as_array().unwrap().len(), 12, "nothing armed");
}

fn text_of_value(reply: &Value) -> String {
    reply.pointer("/result/content/0/text").and_then(Value::as_str).unwrap_or_default().to_owned()
}
