//! The stdio front with the real server (`faultlab serve`'s rmcp server and wire layer) as an in-process upstream
//! over an in-memory pipe: no child process, no `cat`, and the paused tokio clock where time matters.

use faultlab_engine::recorder::Event;
use faultlab_proxy::relay::{ProxyEnd, ProxyOptions};
use serde_json::json;
use std::time::Duration;

use crate::harness::{Client, call};

#[tokio::test]
async fn the_real_server_answers_through_the_relay_and_the_run_ends_cleanly() {
    let mut client = Client::start("rules: []\n");
    client.initialize().await;
    let reply = client.ask(&call(1, "ping", json!({}))).await;
    assert_eq!(reply["id"], 1);
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("ok"), "{reply}");
    // A fault the server arms itself passes through the proxy untouched: the reply comes twice.
    client.send(&call(2, "duplicate_response", json!({}))).await;
    assert_eq!(client.recv().await["id"], 2);
    assert_eq!(client.recv().await["id"], 2, "the server's own duplicate");
    let (end, records) = client.finish().await;
    assert_eq!(end, ProxyEnd::Finished);
    assert!(!records.iter().any(|r| matches!(r.event, Event::UpstreamExit { .. })), "a clean end is no death");
}

#[tokio::test]
async fn a_rule_arms_a_catalogue_fault_on_the_real_servers_reply() {
    let rules = "rules:\n  - name: twice\n    match: {tool: ping}\n    mode: after\n    fault: {type: duplicate}\n";
    let mut client = Client::start(rules);
    client.initialize().await;
    client.send(&call(7, "ping", json!({}))).await;
    let (first, second) = (client.recv().await, client.recv().await);
    assert_eq!((first["id"].clone(), second["id"].clone()), (json!(7), json!(7)), "{first} {second}");
    assert_eq!(first["result"], second["result"], "the server's one reply, sent twice");
    let reply = client.ask(&call(8, "delay", json!({"delayMs": 0}))).await;
    assert_eq!(reply["id"], 8, "another tool is untouched: {reply}");
    client.finish().await;
}

/// The paused clock: the shutdown grace passes as soon as nothing else can happen.
#[tokio::test(start_paused = true)]
async fn a_request_left_open_when_the_client_leaves_gets_an_error_within_the_grace() {
    let mut client = Client::start("rules: []\n");
    client.initialize().await;
    // `hang` never answers and holds the server open past the client's EOF: after the shutdown grace the server
    // is stopped and the request gets its error, never silence.
    client.send(&call(3, "hang", json!({}))).await;
    let started = tokio::time::Instant::now();
    client.close().await;
    let reply = client.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(3), json!(-32000)), "{reply}");
    assert_eq!(reply["error"]["data"]["upstream"], "stopped", "{reply}");
    assert_eq!(started.elapsed(), ProxyOptions::default().shutdown_grace, "bounded by the grace");
    let end = tokio::time::timeout(Duration::from_secs(10), client.proxy).await.unwrap().unwrap().unwrap();
    assert_eq!(end, ProxyEnd::Finished, "the proxy stopped it: not a death");
}

/// `server_outage` under the paused tokio clock: every request fails for exactly the window, whatever its tool,
/// then requests reach the server again. The window is measured on the test's clock, not by waiting.
#[tokio::test(start_paused = true)]
async fn an_outage_fails_every_tool_for_exactly_its_window_then_forwards_again() {
    let rules = "rules:\n  - name: down\n    match: {tool: ping}\n    mode: instead\n    fault: {type: server_outage, duration_ms: 300}\n";
    let mut client = Client::start(rules);
    client.initialize().await;

    let first = client.ask(&call(1, "ping", json!({}))).await;
    assert_eq!(first["error"]["data"]["fault"], "server_outage", "{first}");
    let other = client.ask(&call(2, "delay", json!({"delayMs": 0}))).await;
    assert_eq!(other["error"]["data"]["httpStatus"], 503, "another tool fails too: {other}");
    tokio::time::advance(Duration::from_millis(299)).await;
    let late = client.ask(&call(3, "delay", json!({"delayMs": 0}))).await;
    assert_eq!(late["error"]["data"]["httpStatus"], 503, "still down 299 ms in: {late}");
    tokio::time::advance(Duration::from_millis(1)).await;
    let after = client.ask(&call(4, "delay", json!({"delayMs": 0}))).await;
    assert_eq!(after["id"], 4);
    assert!(after.get("result").is_some(), "the server answers again: {after}");
    client.finish().await;
}

#[tokio::test]
async fn a_server_that_disconnects_ends_the_run_as_an_upstream_exit_and_its_request_gets_an_error() {
    let mut client = Client::start("rules: []\n");
    client.initialize().await;
    let reply = client.ask(&call(5, "disconnect", json!({}))).await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(5), json!(-32000)), "{reply}");
    assert_eq!(reply["error"]["data"]["upstreamExit"]["status"], "the in-process server ended", "{reply}");
    let (end, records) = client.finish().await;
    assert_eq!(end, ProxyEnd::UpstreamExited { status: "the in-process server ended".into() });
    let exits = records.iter().filter(|r| matches!(r.event, Event::UpstreamExit { pending: 1, .. })).count();
    assert_eq!(exits, 1, "one upstream_exit event, with the one request it left");
}
