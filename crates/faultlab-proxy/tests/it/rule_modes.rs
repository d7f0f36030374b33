//! Each rule mode on the wire, through the stdio front in front of the real server in process: `instead`
//! answers without the upstream, `after` arms a catalogue fault on its reply, `before` delays or disconnects first,
//! and the stateful faults (bursts, out-of-order replies).

use faultlab_proxy::relay::ProxyEnd;
use serde_json::json;

use crate::harness::Client;

#[tokio::test]
async fn instead_mode_answers_without_the_upstream() {
    let mut client = Client::with_faults(&[
        "{match: {tool: ping}, mode: instead, fault: {type: http_status, status: 429, retry_after_sec: 3}}",
    ]);
    client.initialize().await;
    client.call(1, "ping", json!({})).await;
    let reply = client.recv().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["error"]["data"]["httpStatus"], 429);
    client.call(2, "delay", json!({"delayMs": 1})).await;
    assert_eq!(client.recv().await["result"]["isError"], false, "other tools pass through");
}

/// The paused clock: the 400 ms pass as soon as nothing else can happen.
#[tokio::test(start_paused = true)]
async fn latency_delays_only_the_matching_reply() {
    let mut client = Client::with_faults(&["{match: {tool: ping}, fault: {type: latency, delay_ms: 400}}"]);
    client.initialize().await;
    client.call(1, "ping", json!({})).await;
    client.call(2, "delay", json!({"delayMs": 1})).await;
    assert_eq!(client.recv().await["id"], 2, "the unrelated reply overtakes the delayed one");
    assert_eq!(client.recv().await["id"], 1);
}

#[tokio::test]
async fn wire_faults_from_the_catalogue_apply_to_upstream_replies() {
    let mut client = Client::with_faults(&[
        "{match: {tool: ping}, fault: {type: duplicate}}",
        "{match: {tool: delay}, fault: {type: malformed, variant: invalid-jsonrpc-version}}",
    ]);
    client.initialize().await;
    client.call(1, "ping", json!({})).await;
    let (a, b) = (client.recv_raw().await.unwrap(), client.recv_raw().await.unwrap());
    assert_eq!(a, b);
    client.call(2, "delay", json!({"delayMs": 1})).await;
    assert_eq!(client.recv().await["jsonrpc"], "1.0");
}

#[tokio::test]
async fn a_disconnect_closes_the_client_and_ends_the_upstream() {
    let mut client = Client::with_faults(&["{match: {tool: ping}, mode: before, fault: {type: disconnect}}"]);
    client.initialize().await;
    client.call(1, "ping", json!({})).await;
    assert_eq!(client.recv_raw().await, None);
    let (end, _) = client.finish().await;
    assert_eq!(end, ProxyEnd::Disconnected, "the run ends, and the upstream with it");
}

#[tokio::test]
async fn a_burst_fails_consecutive_calls_then_service_resumes() {
    let mut client = Client::with_faults(&["{match: {tool: delay, nth: 1}, fault: {type: burst_failure, count: 2}}"]);
    client.initialize().await;
    let mut statuses = Vec::new();
    for id in 1..=4 {
        client.call(id, "delay", json!({"delayMs": 1})).await;
        let reply = client.recv().await;
        statuses.push(reply["error"]["data"]["httpStatus"].as_u64().unwrap_or(200));
    }
    assert_eq!(statuses, [503, 503, 200, 200]);
}

#[tokio::test]
async fn out_of_order_lets_a_later_reply_overtake() {
    let mut client = Client::with_faults(&["{match: {tool: delay, nth: 1}, fault: {type: out_of_order}}"]);
    client.initialize().await;
    client.call(1, "delay", json!({"delayMs": 1})).await;
    client.call(2, "delay", json!({"delayMs": 30})).await;
    let (first, second) = (client.recv().await, client.recv().await);
    assert_eq!((first["id"].clone(), second["id"].clone()), (json!(2), json!(1)), "the held reply comes second");
    assert_eq!(second["result"]["isError"], false, "unchanged, only late");
}
