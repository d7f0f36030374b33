//! Every example of every catalogue fault, through both of the proxy's fronts (stdio lines to an HTTP upstream,
//! and the HTTP front), checked against the effect the fault's file promises: what the client reads off the wire
//! for the faulted call is classified (result, wrong data, error, invalid, timeout, lost) and compared. A call
//! before it, which the rule does not touch, must pass byte for byte. All cells run at once, in process: one
//! upstream (a few lines of axum), one proxy per cell.

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use faultlab_engine::catalogue::Effect;
use faultlab_engine::catalogue::observe::{self, Ending};
use faultlab_engine::{FaultKind, Recorder};
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::time::{Instant, timeout_at};
use tokio_util::sync::CancellationToken;

use crate::harness;

/// How long a cell waits for a reply it expects none of (`timeout`), and how long after a frame that is not this
/// call's answer (a non-JSON line, a reply with another id) it waits for the answer still to come: long enough
/// for any fault here to have answered (the slowest example holds a reply 50 ms), short enough to keep it fast.
const ABSENCE: Duration = Duration::from_millis(300);
/// How long a cell waits for a reply it expects; reached only when the check fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// The upstream's result for a `tools/call` with this id: text naming the id, so an old answer shows, and the
/// structured output its `outputSchema` declares.
fn result_for(id: &Value) -> Value {
    json!({"content": [{"type": "text", "text": format!("3 apples, answer {id}")}], "structuredContent": {"apples": 3}})
}

/// The `outputSchema` the upstream lists for `probe`. Nothing is required, so an empty result stays valid (wrong
/// data, not invalid); the faults on structured output need a schema to break or to keep.
fn output_schema() -> Value {
    json!({"type": "object", "properties": {"apples": {"type": "integer", "minimum": 0}}})
}

/// The upstream's whole tool list, in one reply (it does not paginate).
fn tool_list() -> Value {
    json!({"tools": [
        {"name": "probe", "inputSchema": {"type": "object"}, "outputSchema": output_schema()},
        {"name": "second", "inputSchema": {"type": "object"}},
        {"name": "third", "inputSchema": {"type": "object"}}
    ]})
}

/// Whether the example is a fault on list replies (`catalogue::LIST_FAULTS`): its cell faults the second
/// `tools/list` (asking for page 2 with the first cursor the fault issues) instead of the second `probe` call.
fn on_lists(example: &str) -> bool {
    let fault: FaultKind = serde_json::from_str(example).unwrap();
    faultlab_engine::catalogue::LIST_FAULTS.contains(&fault.name())
}

/// The list a list fault acts on: `tools/list`, or the list a `list_drift` names.
fn list_method(example: &str) -> &'static str {
    match serde_json::from_str(example).unwrap() {
        FaultKind::ListDrift(drift) => drift.list.method(),
        _ => "tools/list",
    }
}

/// The upstream's whole list for `method`, in one reply (it does not paginate).
fn whole_list(method: &str) -> Option<Value> {
    match method {
        "tools/list" => Some(tool_list()),
        "resources/list" => Some(json!({"resources": [
            {"uri": "file:///a", "name": "a"}, {"uri": "file:///b", "name": "b"}
        ]})),
        "prompts/list" => Some(json!({"prompts": [{"name": "p"}, {"name": "q", "arguments": []}]})),
        _ => None,
    }
}

/// The faulted request, id 2: the second `probe` call, or for a list fault the request for page 2.
fn second(example: &str) -> String {
    if on_lists(example) {
        let method = list_method(example);
        json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {"cursor": "faultlab-page-1"}}).to_string()
    } else {
        call(2)
    }
}

/// The client lists the tools first, as clients do, so the proxy learns `probe`'s output schema.
fn list_tools() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}).to_string()
}

async fn upstream(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(id) = request.get("id") else { return StatusCode::ACCEPTED.into_response() };
    let reply = match request["method"].as_str() {
        Some("tools/call") => json!({"jsonrpc": "2.0", "id": id, "result": result_for(id)}),
        Some(method) if whole_list(method).is_some() => {
            json!({"jsonrpc": "2.0", "id": id, "result": whole_list(method)})
        }
        _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "not here"}}),
    };
    ([(header::CONTENT_TYPE, "application/json")], reply.to_string()).into_response()
}

fn call(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "probe", "arguments": {}}})
        .to_string()
}

/// The rule: the second `probe` call gets the example's fault.
fn rules(example: &str) -> RuleSet {
    let fault: Value = serde_json::from_str(example).unwrap();
    // A list fault: every `tools/list` after the first (which teaches the proxy the output schema and passes), or
    // every listing of the resources or prompts a drift names (the first of those is request 2).
    let matching = if on_lists(example) {
        match list_method(example) {
            "tools/list" => json!({"method": "tools/list", "after": 1}),
            method => json!({"method": method}),
        }
    } else {
        json!({"tool": "probe", "nth": 2})
    };
    let file = json!({"seed": 1, "rules": [{"name": "r", "match": matching, "fault": fault}]});
    RuleSet::new(serde_json::from_value::<RulesFile>(file).unwrap())
}

/// What the client saw for request 2.
fn classify(example: &str, frames: &[&[u8]], ended: Ending) -> Effect {
    if on_lists(example) {
        return observe::seen(frames, &json!(2), ended, whole_list(list_method(example)).as_ref(), None);
    }
    observe::seen(frames, &json!(2), ended, Some(&result_for(&json!(2))), Some(&output_schema()))
}

fn deadline(expected: Effect) -> Instant {
    Instant::now() + if expected == Effect::Timeout { ABSENCE } else { PATIENCE }
}

/// The stdio front (lines over an in-memory pipe) in front of the upstream at `url`.
async fn through_stdio(url: String, example: &'static str, expected: Effect) -> Effect {
    let trajectory = Arc::new(Trajectory::new(Recorder::memory()));
    let (client, proxy_side) = tokio::io::duplex(1 << 20);
    let (input, output) = tokio::io::split(proxy_side);
    let stop = CancellationToken::new();
    let rules = rules(example).shared();
    let proxy = tokio::spawn({
        let stop = stop.clone();
        async move {
            let endpoint = faultlab_proxy::upstream::http::Endpoint(faultlab_proxy::remote::Remote::new(&url).unwrap());
            let options = faultlab_proxy::relay::ProxyOptions::default();
            faultlab_proxy::front::stdio::run(options, endpoint, rules, trajectory, input, output, stop).await
        }
    });
    let (from_proxy, mut to_proxy) = tokio::io::split(client);
    let mut lines = BufReader::new(from_proxy).split(b'\n');
    to_proxy.write_all(format!("{}\n", list_tools()).as_bytes()).await.unwrap();
    let listed = lines.next_segment().await.unwrap().unwrap();
    assert_eq!(id_of(&listed), Some(json!(0)), "{example}: the tools are listed first");
    to_proxy.write_all(format!("{}\n", call(1)).as_bytes()).await.unwrap();
    let first = lines.next_segment().await.unwrap().unwrap();
    let untouched = json!({"jsonrpc": "2.0", "id": 1, "result": result_for(&json!(1))}).to_string();
    assert_eq!(String::from_utf8_lossy(&first), untouched, "{example}: the call before passes byte for byte");

    to_proxy.write_all(format!("{}\n", second(example)).as_bytes()).await.unwrap();
    let mut until = deadline(expected);
    let mut frames: Vec<Vec<u8>> = Vec::new();
    // Read until this call's reply (good or not), the end of the output, or the deadline.
    let ended = loop {
        match timeout_at(until, lines.next_segment()).await {
            Err(_) => break Ending::Waited,
            Ok(Ok(Some(line))) => {
                let answered = id_of(&line) == Some(json!(2));
                let notification = observe::parse(&line).is_some_and(|m| m.get("method").is_some());
                frames.push(line);
                if answered {
                    break Ending::Done;
                }
                if !notification {
                    until = until.min(Instant::now() + ABSENCE);
                }
            }
            Ok(_) => break Ending::Lost,
        }
    };
    stop.cancel();
    proxy.abort();
    let read: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    classify(example, &read, ended)
}

fn id_of(bytes: &[u8]) -> Option<Value> {
    observe::parse(bytes)?.get("id").cloned()
}

/// The HTTP front (one POST per call) in front of the upstream at `url`.
async fn through_http(client: reqwest::Client, url: String, example: &'static str, expected: Effect) -> Effect {
    let upstream = faultlab_proxy::front::http::Backend::url(url.parse().unwrap()).unwrap();
    let trajectory = Arc::new(Trajectory::new(Recorder::memory()));
    let stop = CancellationToken::new();
    let (front, proxy) = harness::http_front(upstream, rules(example).shared(), trajectory, stop.clone()).await;
    let post = |body: String| harness::post(&client, &front, body).send();
    let listed = post(list_tools()).await.unwrap().text().await.unwrap();
    assert!(listed.contains("outputSchema"), "{example}: the tools are listed first: {listed}");
    let first = post(call(1)).await.unwrap().text().await.unwrap();
    let untouched = json!({"jsonrpc": "2.0", "id": 1, "result": result_for(&json!(1))}).to_string();
    assert_eq!(first, untouched, "{example}: the call before passes byte for byte");

    let exchange = async {
        let response = post(second(example)).await?;
        let (status, sse) = (response.status(), response.headers().get(header::CONTENT_TYPE).cloned());
        Ok::<_, reqwest::Error>((status, sse, response.bytes().await?))
    };
    let effect = match timeout_at(deadline(expected), exchange).await {
        Err(_) => Effect::Timeout,
        Ok(Err(_)) => Effect::TransportLoss,
        Ok(Ok((status, _, body))) if status != StatusCode::OK => {
            // An error status whose body is empty or this call's JSON-RPC error; or no MCP at all (a reverse
            // proxy's page, a gateway's JSON), which the client cannot read as any answer.
            match serde_json::from_slice::<Value>(&body).ok() {
                _ if body.is_empty() => Effect::Error,
                Some(e) if e["id"] == 2 && e["error"].is_object() => Effect::Error,
                _ => classify(example, &[&body], Ending::Done),
            }
        }
        Ok(Ok((_, content_type, body))) => {
            let is_sse = content_type.is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
            let frames = if is_sse { sse_data(&body) } else { vec![body.to_vec()] };
            let read: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            // A stream fault's event stream that ends without this call's reply was lost (cut there); any other
            // answer is whole as it came (a withheld reply, `late_response`, is a call left waiting).
            let on_stream = serde_json::from_str::<FaultKind>(example).is_ok_and(|f| f.on_stream());
            classify(example, &read, if is_sse && on_stream { Ending::Lost } else { Ending::Done })
        }
    };
    stop.cancel();
    proxy.abort();
    effect
}

/// The `data` of each SSE event in `body` (lines joined with `\n`), CRLF or LF line ends.
fn sse_data(body: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            (!data.is_empty()).then(|| data.join("\n").into_bytes())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_has_its_effect_on_both_proxy_fronts() {
    let (url, server) = harness::upstream_at(axum::routing::post(upstream)).await;

    let client = faultlab_client::tls::client_builder().build().unwrap();
    let mut cells = Vec::new();
    for (name, examples) in FaultKind::examples() {
        assert!(!examples.is_empty(), "{name} has no examples");
        for &example in examples {
            let fault = serde_json::from_str::<FaultKind>(example).unwrap();
            if fault.model_only() || fault.serve_only().is_some() {
                // Refused by the proxy's fronts: `faultlab model`'s tests run the model hop's faults in every API
                // shape; `faultlab serve`'s catalogue and tasks tests run the faults only it commits.
                continue;
            }
            let expected = fault.effect();
            let http = tokio::spawn(through_http(client.clone(), url.clone(), example, expected));
            cells.push((example, expected, "http", http));
            if fault.on_stream() {
                // No response stream on stdio: the reply passes and the fault is recorded as skipped (the
                // engine's `stream_cut` tests check it); `stream_faults` checks the HTTP front byte for byte.
                continue;
            }
            let stdio = tokio::spawn(through_stdio(url.clone(), example, expected));
            cells.push((example, expected, "stdio", stdio));
        }
    }
    let mut wrong = Vec::new();
    for (example, expected, front, cell) in cells {
        let seen = cell.await.unwrap_or_else(|e| panic!("{front} {example}: {e}"));
        if seen != expected {
            wrong.push(format!("{front} {example}: expected {}, the client saw {}", expected.name(), seen.name()));
        }
    }
    server.abort();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The faults that answer with a status of their own keep their `Content-Type`, `Retry-After` and body bytes
/// through the HTTP front: a reverse proxy's page stays `text/html`, a gateway's JSON stays what it was.
#[tokio::test]
async fn status_answers_keep_their_media_type_and_bytes_through_the_http_front() {
    let (url, server) = harness::upstream_at(axum::routing::post(upstream)).await;
    let client = faultlab_client::tls::client_builder().build().unwrap();
    let cases = [
        (r#"{"type": "html_page", "status": 503, "retry_after_sec": 5}"#, 503, "text/html; charset=utf-8", Some("5")),
        (r#"{"type": "not_jsonrpc", "status": 502}"#, 502, "application/json", None),
        (r#"{"type": "protocol_error", "code": -32022}"#, 400, "application/json", None),
    ];
    for (example, status, content_type, retry_after) in cases {
        let upstream = faultlab_proxy::front::http::Backend::url(url.parse().unwrap()).unwrap();
        let trajectory = Arc::new(Trajectory::new(Recorder::memory()));
        let stop = CancellationToken::new();
        let (front, proxy) = harness::http_front(upstream, rules(example).shared(), trajectory, stop.clone()).await;
        let first = harness::post(&client, &front, call(1)).send().await.unwrap();
        assert_eq!(first.status(), 200, "{example}: the first call passes");
        let response = harness::post(&client, &front, call(2)).send().await.unwrap();
        let text = |name| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(response.status().as_u16(), status, "{example}");
        assert_eq!(text(header::CONTENT_TYPE).as_deref(), Some(content_type), "{example}");
        assert_eq!(text(header::RETRY_AFTER).as_deref(), retry_after, "{example}");
        let body = response.text().await.unwrap();
        let expected = match status {
            503 => faultlab_engine::catalogue::html_page::page(503),
            502 => r#"{"message":"Bad Gateway","status":502}"#.to_owned(),
            _ => r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported protocol version: 2025-11-25","data":{"requested":"2025-11-25","supported":["2025-06-18"]}}}"#.to_owned(),
        };
        assert_eq!(body, expected, "{example}");
        stop.cancel();
        proxy.abort();
    }
    server.abort();
}
