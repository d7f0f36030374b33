//! The pagination faults on an upstream's real one-page lists, through the proxy's stdio front: a client that
//! follows `nextCursor` (at most [`MAX_PAGES`] pages, as a careful client bounds it) sees what each variant does:
//! the same page forever, a cycle, `""` as a continuation or as an end that starts over, a repeated name, pages
//! without end, an error on page 2; on `tools/list`, `prompts/list` and `resources/list` alike. And list drift:
//! the second listing lacks a tool, announced by `notifications/tools/list_changed`, and a call to it is refused.

use crate::harness::Client;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use faultlab_proxy::upstream::http::Endpoint;
use serde_json::{Value, json};

/// The most pages the test client fetches for one listing: its bound against a list that never ends.
const MAX_PAGES: usize = 12;

fn named(names: &[&str]) -> Value {
    Value::Array(names.iter().map(|name| json!({"name": name, "uri": format!("file:///{name}")})).collect())
}

/// The upstream: whole lists in one reply, whatever cursor it is sent (it does not paginate).
async fn upstream(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(id) = request.get("id") else { return StatusCode::ACCEPTED.into_response() };
    let result = match request["method"].as_str() {
        Some("tools/list") => json!({"tools": named(&["a", "b", "c"])}),
        Some("prompts/list") => json!({"prompts": named(&["p", "q"])}),
        Some("resources/list") => json!({"resources": named(&["r", "s", "t"])}),
        Some("tools/call") => {
            json!({"content": [{"type": "text", "text": format!("ran {}", request["params"]["name"])}]})
        }
        _ => json!({}),
    };
    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    ([(header::CONTENT_TYPE, "application/json")], reply).into_response()
}

/// What one bounded listing got: the names in order, the pages fetched, and how it ended.
#[derive(Debug, PartialEq)]
struct Listing {
    names: Vec<String>,
    pages: usize,
    end: End,
}

#[derive(Debug, PartialEq)]
enum End {
    /// A page without `nextCursor`.
    Complete,
    /// The client's page bound was reached with a cursor still to follow.
    Bounded,
    /// A page was answered with this JSON-RPC error code.
    Error(i64),
}

/// Lists `method` through a proxy applying `fault` to every request for it, following cursors (`""` included).
async fn list(method: &str, fault: Value) -> Listing {
    let rules = json!({"seed": 1, "rules": [{"name": "pages", "match": {"method": method}, "fault": fault}]});
    let mut session = Session::start(rules).await;
    let key = method.split('/').next().unwrap();
    let (mut names, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    let end = loop {
        if pages == MAX_PAGES {
            break End::Bounded;
        }
        pages += 1;
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let read = session.exchange(pages as i64, method, params).await;
        let [reply] = &read[..] else { panic!("one reply, nothing before it: {read:?}") };
        if let Some(code) = reply["error"]["code"].as_i64() {
            break End::Error(code);
        }
        for item in reply["result"][key].as_array().unwrap() {
            names.push(item["name"].as_str().unwrap().to_owned());
        }
        match reply["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break End::Complete,
        }
    };
    session.close().await;
    Listing { names, pages, end }
}

fn names(list: &str) -> Vec<String> {
    list.chars().map(String::from).collect()
}

#[tokio::test]
async fn each_variant_does_to_a_following_client_what_its_file_says() {
    let variant = |variant: &str| json!({"type": "broken_pagination", "variant": variant});
    let stuck = list("tools/list", variant("stuck")).await;
    assert_eq!(stuck, Listing { names: names(&"a".repeat(MAX_PAGES)), pages: MAX_PAGES, end: End::Bounded });
    let cycle = list("tools/list", variant("cycle")).await;
    assert_eq!(cycle, Listing { names: names(&"ab".repeat(MAX_PAGES / 2)), pages: MAX_PAGES, end: End::Bounded });

    let sized = |name: &str| json!({"type": "broken_pagination", "variant": name, "page_size": 2});
    let continued = list("tools/list", sized("empty-continuation")).await;
    assert_eq!(continued, Listing { names: names("abc"), pages: 2, end: End::Complete }, "\"\" followed: all");
    let restarted = list("tools/list", sized("empty-end")).await;
    assert_eq!(restarted.names[..5], names("abcab"), "following the \"\" end starts over");
    assert_eq!(restarted.end, End::Bounded);
    let repeated = list("tools/list", sized("repeated-name")).await;
    assert_eq!(repeated, Listing { names: names("abbc"), pages: 2, end: End::Complete });
}

#[tokio::test]
async fn prompts_and_resources_page_too_and_page_2_can_fail() {
    let endless = list("prompts/list", json!({"type": "broken_pagination", "variant": "endless"})).await;
    assert_eq!(endless, Listing { names: names("pq"), pages: MAX_PAGES, end: End::Bounded }, "empty pages go on");
    let failed = list("resources/list", json!({"type": "page_error", "page": 2})).await;
    assert_eq!(failed, Listing { names: names("r"), pages: 2, end: End::Error(-32603) });
    let later = list("resources/list", json!({"type": "page_error", "page": 3})).await;
    assert_eq!(later, Listing { names: names("rs"), pages: 3, end: End::Error(-32603) });
}

/// A client's session through the proxy's stdio front, with `file`'s rules, in front of [`upstream`].
struct Session {
    client: Client,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Session {
    async fn start(file: Value) -> Self {
        let (url, server) = crate::harness::upstream_at(axum::routing::post(upstream)).await;
        let endpoint = Endpoint(faultlab_proxy::remote::Remote::new(&url).unwrap());
        Self { client: Client::with_upstream(serde_json::from_value(file).unwrap(), endpoint), server }
    }

    /// Every line read until the reply to `id`.
    async fn exchange(&mut self, id: i64, method: &str, params: Value) -> Vec<Value> {
        self.client.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let mut read = Vec::new();
        loop {
            let message = self.client.recv().await;
            let done = message["id"] == id;
            read.push(message);
            if done {
                return read;
            }
        }
    }

    /// The `key` list of the last frame's result, by name.
    fn listed(frames: &[Value], key: &str) -> Vec<String> {
        let items = frames.last().unwrap()["result"][key].as_array().unwrap().clone();
        items.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    }

    /// Closes the client's side; the proxy must finish in time.
    async fn close(self) {
        self.client.finish().await;
        self.server.abort();
    }
}

/// Drift as a scenario of three rules: the listings after the first lose the last tool (`c`), the first call
/// announces it with one `notifications/tools/list_changed`, and calls to `c` are answered as to a tool the
/// server does not have, without reaching it.
#[tokio::test]
async fn drift_removes_a_tool_announces_it_and_refuses_calls_to_it() {
    let mut session = Session::start(json!({"seed": 1, "rules": [
        {"name": "drift", "match": {"method": "tools/list", "after": 1}, "fault": {"type": "list_drift", "change": "removed"}},
        {"name": "announce", "match": {"tool": "a", "nth": 1}, "fault": {"type": "list_changed_storm", "count": 1}},
        {"name": "gone", "match": {"tool": "c"}, "mode": "instead", "fault": {"type": "unknown_tool"}}
    ]}))
    .await;
    let first = session.exchange(1, "tools/list", json!({})).await;
    assert_eq!(Session::listed(&first, "tools"), names("abc"), "the first listing is the server's");
    let call = session.exchange(2, "tools/call", json!({"name": "a", "arguments": {}})).await;
    assert_eq!(call.len(), 2, "{call:?}");
    assert_eq!(call[0]["method"], "notifications/tools/list_changed", "announced before the reply");
    assert_eq!(call[1]["result"]["content"][0]["text"], "ran \"a\"");
    assert_eq!(Session::listed(&session.exchange(3, "tools/list", json!({})).await, "tools"), names("ab"), "c is gone");
    let refused = session.exchange(4, "tools/call", json!({"name": "c", "arguments": {}})).await;
    assert_eq!(refused, [json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Unknown tool: c"}})]);
    session.close().await;
}

/// The same drift on an upstream's real prompts and resources lists: the second prompts listing gives `q` a new
/// required argument and the second resources listing renames `t`, each announced by its own list's
/// `list_changed` before the reply of the call that announces it.
#[tokio::test]
async fn prompts_and_resources_drift_announced_by_their_own_notification() {
    let mut session = Session::start(json!({"seed": 1, "rules": [
        {"name": "prompts", "match": {"method": "prompts/list", "after": 1},
         "fault": {"type": "list_drift", "change": "arguments", "list": "prompts"}},
        {"name": "resources", "match": {"method": "resources/list", "after": 1},
         "fault": {"type": "list_drift", "change": "renamed", "list": "resources", "tool": "file:///t"}},
        {"name": "announce-prompts", "match": {"tool": "a", "nth": 1},
         "fault": {"type": "list_changed_storm", "count": 1, "list": "prompts"}},
        {"name": "announce-resources", "match": {"tool": "a", "nth": 2},
         "fault": {"type": "list_changed_storm", "count": 1, "list": "resources"}}
    ]}))
    .await;
    let first = session.exchange(1, "prompts/list", json!({})).await;
    assert!(first[0]["result"]["prompts"][1].get("arguments").is_none(), "the first listing is the server's");
    let call = session.exchange(2, "tools/call", json!({"name": "a", "arguments": {}})).await;
    assert_eq!(call[0]["method"], "notifications/prompts/list_changed", "{call:?}");
    let second = session.exchange(3, "prompts/list", json!({})).await;
    assert_eq!(second[0]["result"]["prompts"][1]["arguments"][0]["name"], "confirm", "{second:?}");
    assert_eq!(second[0]["result"]["prompts"][1]["arguments"][0]["required"], true);
    assert_eq!(Session::listed(&session.exchange(4, "resources/list", json!({})).await, "resources"), names("rst"));
    let call = session.exchange(5, "tools/call", json!({"name": "a", "arguments": {}})).await;
    assert_eq!(call[0]["method"], "notifications/resources/list_changed", "{call:?}");
    let renamed = session.exchange(6, "resources/list", json!({})).await;
    assert_eq!(Session::listed(&renamed, "resources"), ["r", "s", "t_v2"]);
    assert_eq!(renamed[0]["result"]["resources"][2]["uri"], "file:///t_v2");
    session.close().await;
}

/// What a drift removed is refused on the real server too: a read of the resource and a get of the prompt that
/// left their lists are answered by the proxy as a server answers for an item it does not have (`unknown_tool`,
/// `match.tool` naming the URI and the prompt), and the items still listed reach the upstream.
#[tokio::test]
async fn reads_and_gets_of_removed_items_are_refused_and_the_rest_reach_the_upstream() {
    let mut session = Session::start(json!({"seed": 1, "rules": [
        {"name": "prompts", "match": {"method": "prompts/list", "after": 1},
         "fault": {"type": "list_drift", "change": "removed", "list": "prompts", "tool": "q"}},
        {"name": "resources", "match": {"method": "resources/list", "after": 1},
         "fault": {"type": "list_drift", "change": "removed", "list": "resources", "tool": "file:///t"}},
        {"name": "gone-prompt", "match": {"method": "prompts/get", "tool": "q"}, "mode": "instead",
         "fault": {"type": "unknown_tool"}},
        {"name": "gone-resource", "match": {"method": "resources/read", "tool": "file:///t"}, "mode": "instead",
         "fault": {"type": "unknown_tool"}}
    ]}))
    .await;
    let prompt = session.exchange(1, "prompts/get", json!({"name": "q"})).await;
    assert_eq!(prompt, [json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unknown prompt: q"}})]);
    let resource = session.exchange(2, "resources/read", json!({"uri": "file:///t"})).await;
    let message = "Resource not found: file:///t";
    let error = json!({"code": -32002, "message": message, "data": {"uri": "file:///t"}});
    assert_eq!(resource, [json!({"jsonrpc": "2.0", "id": 2, "error": error})]);
    let kept = session.exchange(3, "resources/read", json!({"uri": "file:///s"})).await;
    assert_eq!(kept, [json!({"jsonrpc": "2.0", "id": 3, "result": {}})], "a resource still listed is the upstream's");
    let kept = session.exchange(4, "prompts/get", json!({"name": "p"})).await;
    assert_eq!(kept, [json!({"jsonrpc": "2.0", "id": 4, "result": {}})], "a prompt still listed is the upstream's");
    let call = session.exchange(5, "tools/call", json!({"name": "q", "arguments": {}})).await;
    assert_eq!(call[0]["result"]["content"][0]["text"], "ran \"q\"", "a tool named like the prompt is not matched");
    session.close().await;
}
