//! The tools' input schemas as clients read them: an optional argument is typed as its value (`integer`), never
//! "integer or null", which form-filling clients such as the MCP Inspector send as a string the tool rejects.

use super::util::{HttpServer, StdioClient, exchange, messages, modern_meta};
use faultlab_engine::catalogue::Offered;
use serde_json::{Map, Value, json};

/// Every object in `schema`, with its JSON pointer after `at`.
fn each_object(schema: &Value, at: &str, visit: &mut dyn FnMut(&Map<String, Value>, &str)) {
    match schema {
        Value::Object(map) => {
            visit(map, at);
            for (key, value) in map {
                each_object(value, &format!("{at}/{key}"), visit);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                each_object(item, &format!("{at}/{i}"), visit);
            }
        }
        _ => {}
    }
}

/// What `find` reports of each object in the tools' input schemas, as `TOOL:POINTER`s.
fn in_input_schemas(tools: &[Value], find: impl Fn(&Map<String, Value>, &str, &mut Vec<String>)) -> Vec<String> {
    let mut found = Vec::new();
    for tool in tools {
        let at = format!("{}:", tool["name"].as_str().unwrap());
        each_object(&tool["inputSchema"], &at, &mut |map, at| find(map, at, &mut found));
    }
    found
}

/// A place that admits `null`.
fn nullable(map: &Map<String, Value>, at: &str, found: &mut Vec<String>) {
    let null = |t: &Value| t == "null";
    if map.get("type").is_some_and(|t| null(t) || t.as_array().is_some_and(|all| all.iter().any(null))) {
        found.push(at.to_owned());
    }
}

/// Every tool the catalogue names as arming a fault is offered where the catalogue says, over stdio and over
/// 2026-07-28 HTTP (`faultlab faults NAME` prints this).
#[tokio::test]
async fn the_catalogues_serve_tools_are_offered_where_it_says() {
    let (stdio, http) = tools_by_front().await;
    let names = |tools: &[Value]| -> Vec<String> { tools.iter().map(|t| t["name"].as_str().unwrap().into()).collect() };
    let (stdio, http) = (names(&stdio), names(&http));
    for (name, examples) in faultlab_engine::FaultKind::examples() {
        let fault: faultlab_engine::FaultKind = serde_json::from_str(examples[0]).unwrap();
        let Some(tool) = fault.serve_tool() else { continue };
        let offered = |list: &[String]| list.iter().any(|n| n == tool.name);
        let (over_stdio, over_http) = match tool.offered {
            Offered::Everywhere => (true, true),
            Offered::HttpOnly => (false, true),
            Offered::StdioAndSessions => (true, false),
            Offered::Sessions => (false, false),
        };
        assert_eq!(offered(&stdio), over_stdio, "{name}: {} over stdio", tool.name);
        assert_eq!(offered(&http), over_http, "{name}: {} over 2026-07-28 HTTP", tool.name);
    }
}

/// The tools a stdio connection lists, then those of the HTTP front (where `http_status` is).
async fn every_tool() -> Vec<Value> {
    let (mut stdio, http) = tools_by_front().await;
    stdio.extend(http);
    stdio
}

/// The tools a stdio connection lists, and those the HTTP front lists.
async fn tools_by_front() -> (Vec<Value>, Vec<Value>) {
    let mut client = StdioClient::start(Some("2025-11-25")).await;
    client.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let tools = client.recv().await.value().unwrap()["result"]["tools"].as_array().unwrap().clone();
    let server = HttpServer::start().await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let req = server.post(&list, None).header("mcp-protocol-version", "2026-07-28").header("mcp-method", "tools/list");
    let (_, content_type, body) = exchange(req).await;
    let http = messages(&content_type, &body.unwrap())[0].value().unwrap()["result"]["tools"].clone();
    (tools, http.as_array().unwrap().clone())
}

#[tokio::test]
async fn no_input_schema_types_an_argument_as_null() {
    let tools = every_tool().await;
    let found = in_input_schemas(&tools, nullable);
    assert!(found.is_empty(), "arguments typed as null: {found:?}");
    let status = tools.iter().find(|t| t["name"] == "http_status").expect("the tool with an optional integer");
    assert_eq!(status["inputSchema"]["properties"]["retryAfterSec"]["type"], "integer");
    assert_eq!(status["inputSchema"]["required"], json!(["status"]));
}

/// An `anyOf` branch without a `type` of its own.
fn untyped_any_of(map: &Map<String, Value>, at: &str, found: &mut Vec<String>) {
    if let Some(branches) = map.get("anyOf").and_then(Value::as_array) {
        for (i, branch) in branches.iter().enumerate() {
            if branch.get("type").is_none() {
                found.push(format!("{at}/anyOf/{i}"));
            }
        }
    }
}

/// Agent frameworks that turn a tool's input schema into their own read `type` on every `anyOf` branch
/// (smolagents 1.x raises `KeyError: 'type'` on a `$ref` there and then cannot use the server at all), so no lab
/// tool puts one there; the `list_pagination` variant is one string enum whose names all parse.
#[tokio::test]
async fn every_any_of_branch_in_an_input_schema_has_a_type() {
    let tools = every_tool().await;
    let found = in_input_schemas(&tools, untyped_any_of);
    assert!(found.is_empty(), "anyOf branches without a type: {found:?}");
    let paging = tools.iter().find(|t| t["name"] == "list_pagination").expect("list_pagination is offered");
    let names = paging["inputSchema"]["properties"]["variant"]["enum"].as_array().unwrap();
    assert_eq!(names.len(), faultlab_server::tools::PAGING_NAMES.len());
    for name in names {
        let parsed = serde_json::from_value::<faultlab_server::tools::Paging>(name.clone());
        assert!(parsed.is_ok(), "{name} does not parse as a list_pagination variant");
    }
}
