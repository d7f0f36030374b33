//! `wrong_value` and `contradictory` through the real proxy keep a tool's result valid against the output schema
//! the upstream listed. The upstream is a tiny in-test Streamable HTTP server (no Node, no script): it lists a tool
//! with an `outputSchema` and answers its calls with `structuredContent` mirrored as JSON text; the client speaks
//! lines to the proxy's stdio front over an in-memory pipe, or POSTs to the proxy's HTTP front, where each request
//! has an engine of its own and the faults still build on what other requests' replies taught.

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use faultlab_engine::recorder::Record;
use faultlab_engine::{Event, Recorder};
use faultlab_proxy::relay::ProxyEnd;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_proxy::upstream::http::Endpoint;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::harness::{self, Client};

/// `count` is at its maximum, so `contradictory`'s usual +1 would make the copy invalid.
fn output_schema() -> Value {
    json!({
        "type": "object",
        "required": ["count", "status"],
        "properties": {
            "count": {"type": "integer", "minimum": 0, "maximum": 10},
            "status": {"enum": ["in_stock", "sold_out"]}
        },
        "additionalProperties": false
    })
}

const STRUCTURED: &str = r#"{"count":10,"status":"in_stock"}"#;

/// The upstream's answer to one request, as the bytes of its JSON body; `None` for a notification.
fn answer(request: &Value) -> Option<String> {
    let id = request.get("id")?.clone();
    let result = match (request["method"].as_str(), request["params"]["name"].as_str()) {
        (Some("initialize"), _) => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-upstream", "version": "0"}}),
        (Some("tools/list"), _) => json!({"tools": [
            {"name": "inventory", "inputSchema": {"type": "object"}, "outputSchema": output_schema()},
            {"name": "plain", "inputSchema": {"type": "object"}}
        ]}),
        (Some("tools/call"), Some("inventory")) => json!({
            "content": [{"type": "text", "text": STRUCTURED}],
            "structuredContent": serde_json::from_str::<Value>(STRUCTURED).unwrap()
        }),
        // Names the request it answers, so that a `stale` copy of it is told apart from a fresh answer.
        (Some("tools/call"), _) => json!({"content": [{"type": "text", "text": format!("3 apples, answer {id}")}]}),
        _ => return Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}).to_string()),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
}

async fn upstream(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    match answer(&request) {
        Some(reply) => ([(header::CONTENT_TYPE, "application/json")], reply).into_response(),
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// The fake upstream on a loopback port of its own: its URL and its task.
async fn start_upstream() -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    harness::upstream_at(axum::routing::post(upstream)).await
}

/// A client on the proxy's stdio front with the rules file `rules` (YAML), in front of the fake upstream: the
/// client and the upstream's task.
async fn stdio_client(rules: &str) -> (Client, tokio::task::JoinHandle<std::io::Result<()>>) {
    let (url, server) = start_upstream().await;
    let endpoint = Endpoint(faultlab_proxy::remote::Remote::new(&url).unwrap());
    (Client::with_upstream(yaml_serde::from_str(rules).unwrap(), endpoint), server)
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(id: i64, tool: &str) -> Value {
    request(id, "tools/call", json!({"name": tool, "arguments": {}}))
}

const RULES: &str = r#"
rules:
  - name: contradict
    match: { tool: inventory, nth: 1 }
    fault: { type: contradictory }
  - name: wrong-but-valid
    match: { tool: inventory, nth: 2 }
    fault: { type: wrong_value, pointer: /structuredContent/count, value: 7 }
  - name: wrong-and-invalid
    match: { tool: inventory, nth: 3 }
    fault: { type: wrong_value, pointer: /structuredContent/count, value: 11 }
"#;

#[tokio::test]
async fn faults_keep_structured_content_valid_against_the_listed_output_schema() {
    let (mut client, server) = stdio_client(RULES).await;
    // One request at a time, so each line read is the answer to the request just sent.
    let mut exchange = async |message: Value| -> String {
        client.send(&message).await;
        client.recv_raw().await.expect("the proxy is still open")
    };

    let initialize = request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}),
    );
    assert_eq!(exchange(initialize.clone()).await, answer(&initialize).unwrap());
    let list = request(1, "tools/list", json!({}));
    assert_eq!(exchange(list.clone()).await, answer(&list).unwrap(), "the list passes byte for byte");

    // contradictory: +1 would break `maximum`, so the copy says 9; structuredContent and its text are kept.
    let contradicted: Value = serde_json::from_str(&exchange(call(2, "inventory")).await).unwrap();
    let result = &contradicted["result"];
    assert_eq!(result["structuredContent"], serde_json::from_str::<Value>(STRUCTURED).unwrap());
    assert_eq!(result["content"][0]["text"], STRUCTURED);
    assert_eq!(result["content"][1]["text"], r#"{"count":9,"status":"in_stock"}"#);

    // An unrelated call passes untouched.
    assert_eq!(exchange(call(3, "plain")).await, answer(&call(3, "plain")).unwrap());

    // wrong_value with a valid value: written, and the mirrored text follows.
    let wrong: Value = serde_json::from_str(&exchange(call(4, "inventory")).await).unwrap();
    assert_eq!(wrong["result"]["structuredContent"], json!({"count": 7, "status": "in_stock"}));
    assert_eq!(wrong["result"]["content"][0]["text"], r#"{"count":7,"status":"in_stock"}"#);

    // wrong_value with a value the schema forbids: the reply goes through unchanged, and the reason is recorded.
    assert_eq!(exchange(call(5, "inventory")).await, answer(&call(5, "inventory")).unwrap());

    let (end, records) = client.finish().await;
    assert_eq!(end, ProxyEnd::Finished);
    server.abort();

    let outcomes = outcomes(records);
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert_eq!(outcomes[0], ("contradictory".into(), json!(2), None));
    assert_eq!(outcomes[1], ("wrong_value".into(), json!(4), None));
    let (fault, id, reason) = &outcomes[2];
    assert_eq!((fault.as_str(), id), ("wrong_value", &json!(5)));
    assert!(reason.as_deref().is_some_and(|r| r.contains("maximum")), "{reason:?}");
}

/// What the proxy recorded: each fault activated or skipped, with its request id and the reason it was skipped.
fn outcomes(records: Vec<Record>) -> Vec<(String, Value, Option<String>)> {
    records
        .into_iter()
        .filter_map(|record| match record.event {
            Event::FaultActivated { fault, request_id } => Some((fault, request_id, None)),
            Event::FaultSkipped { fault, request_id, reason } => Some((fault, request_id, Some(reason))),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn over_the_http_front_faults_build_on_replies_other_requests_brought() {
    let (upstream_url, server) = start_upstream().await;

    let rules =
        format!("{RULES}  - name: stuck-cache\n    match: {{ tool: plain, nth: 2 }}\n    fault: {{ type: stale }}\n");
    let rules = RuleSet::new(yaml_serde::from_str::<RulesFile>(&rules).unwrap()).shared();
    let recorder = Recorder::memory();
    let trajectory = Arc::new(Trajectory::new(recorder.clone()));
    let upstream = faultlab_proxy::front::http::Backend::url(upstream_url.parse().unwrap()).unwrap();
    let shutdown = CancellationToken::new();
    let (url, proxy) = harness::http_front(upstream, rules, trajectory, shutdown.clone()).await;

    // Each message is a POST of its own: a request of its own to the front, with an engine of its own.
    let client = faultlab_client::tls::client_builder().build().unwrap();
    let exchange = async |message: Value| -> String {
        let response =
            harness::post(&client, &url, message.to_string()).timeout(Duration::from_secs(20)).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.text().await.unwrap()
    };

    let list = request(1, "tools/list", json!({}));
    assert_eq!(exchange(list.clone()).await, answer(&list).unwrap(), "the list passes byte for byte");
    // The schema came with request 1's reply; the faults below fire on other requests and still keep to it.
    let contradicted: Value = serde_json::from_str(&exchange(call(2, "inventory")).await).unwrap();
    assert_eq!(contradicted["result"]["content"][1]["text"], r#"{"count":9,"status":"in_stock"}"#);
    assert_eq!(exchange(call(3, "plain")).await, answer(&call(3, "plain")).unwrap(), "unrelated: untouched");
    let wrong: Value = serde_json::from_str(&exchange(call(4, "inventory")).await).unwrap();
    assert_eq!(wrong["result"]["structuredContent"], json!({"count": 7, "status": "in_stock"}));
    assert_eq!(exchange(call(5, "inventory")).await, answer(&call(5, "inventory")).unwrap(), "invalid: unchanged");
    // `stale` on the second `plain` call serves request 3's answer under id 6.
    let stale: Value = serde_json::from_str(&exchange(call(6, "plain")).await).unwrap();
    assert_eq!(stale["id"], 6);
    assert_eq!(stale["result"]["content"][0]["text"], "3 apples, answer 3", "the earlier answer, not a fresh one");

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(20), proxy).await.expect("the front stopped in time").unwrap().unwrap();
    server.abort();

    let outcomes = outcomes(recorder.records());
    assert_eq!(outcomes.len(), 4, "{outcomes:?}");
    assert_eq!(outcomes[0], ("contradictory".into(), json!(2), None));
    assert_eq!(outcomes[1], ("wrong_value".into(), json!(4), None));
    assert_eq!((outcomes[2].0.as_str(), &outcomes[2].1), ("wrong_value", &json!(5)));
    assert!(outcomes[2].2.as_deref().is_some_and(|r| r.contains("maximum")), "{outcomes:?}");
    assert_eq!(outcomes[3], ("stale".into(), json!(6), None));
}

const STRUCTURED_RULES: &str = r#"
rules:
  - name: violate
    match: { tool: inventory, nth: 1 }
    fault: { type: output_schema_violation }
  - name: error-result
    match: { tool: inventory, nth: 2 }
    fault: { type: error_structured_content }
  - name: no-structure
    match: { tool: inventory, nth: 3 }
    fault: { type: missing_structured_content }
  - name: disagree
    match: { tool: inventory, nth: 4 }
    fault: { type: content_structured_mismatch }
  - name: nothing-declared
    match: { tool: plain, nth: 1 }
    fault: { type: output_schema_violation }
"#;

/// The four structured-output faults on what the upstream really listed and returned, through the stdio front: each
/// breaks the listed `outputSchema` (or keeps to it) as its file says, and the one aimed at a tool that declared no
/// schema is skipped with its reason recorded.
#[tokio::test]
async fn structured_output_faults_break_or_keep_the_listed_output_schema() {
    let (mut client, server) = stdio_client(STRUCTURED_RULES).await;
    let mut exchange = async |message: Value| -> Value { client.ask(&message).await };
    let validator = jsonschema::validator_for(&output_schema()).unwrap();

    exchange(request(1, "tools/list", json!({}))).await;
    let violated = exchange(call(2, "inventory")).await["result"].clone();
    assert!(!validator.is_valid(&violated["structuredContent"]), "{violated}");
    assert_eq!(violated["structuredContent"], json!({"status": "in_stock"}), "the first required property is gone");
    assert_eq!(violated["content"][0]["text"], STRUCTURED, "the text still says what the server said");

    let error = exchange(call(3, "inventory")).await["result"].clone();
    assert_eq!(error["isError"], true);
    assert!(!validator.is_valid(&error["structuredContent"]), "{error}");

    let bare = exchange(call(4, "inventory")).await["result"].clone();
    assert_eq!(bare, json!({"content": [{"type": "text", "text": STRUCTURED}]}));

    let disagree = exchange(call(5, "inventory")).await["result"].clone();
    assert_eq!(disagree["content"][0]["text"], STRUCTURED);
    assert_eq!(disagree["structuredContent"], json!({"count": 9, "status": "in_stock"}), "valid, and not the text");
    assert!(validator.is_valid(&disagree["structuredContent"]));

    assert_eq!(
        exchange(call(6, "plain")).await,
        serde_json::from_str::<Value>(&answer(&call(6, "plain")).unwrap()).unwrap()
    );

    let (_, records) = client.finish().await;
    server.abort();
    let outcomes = outcomes(records);
    let names: Vec<(&str, &Value)> = outcomes.iter().map(|(fault, id, _)| (fault.as_str(), id)).collect();
    assert_eq!(
        names,
        [
            ("output_schema_violation", &json!(2)),
            ("error_structured_content", &json!(3)),
            ("missing_structured_content", &json!(4)),
            ("content_structured_mismatch", &json!(5)),
            ("output_schema_violation", &json!(6)),
        ]
    );
    assert!(outcomes[..4].iter().all(|(_, _, skipped)| skipped.is_none()), "{outcomes:?}");
    assert!(outcomes[4].2.as_deref().is_some_and(|r| r.contains("no outputSchema")), "{outcomes:?}");
}
