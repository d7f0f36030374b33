//! Frames that arrive together (a client pipelining requests, an upstream answering many at once) are relayed
//! and recorded together: nothing is lost or reordered, every frame has its own trajectory event, and a fault
//! that fires in the middle of a burst stays in its place in the trajectory. The upstream is an echo server in
//! process, so a frame the client sends comes back as server output (and a request it echoes stays unanswered:
//! when the echo ends on the client's EOF, the proxy fails each such request with the upstream's exit).

use faultlab_engine::Recorder;
use faultlab_engine::recorder::{Direction, Event, FrameAction, FrameEvent, Record};
use faultlab_proxy::front::stdio;
use faultlab_proxy::relay::ProxyOptions;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_proxy::upstream::in_process::InProcess;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// An upstream that writes `first`, then echoes every byte it is sent (an in-process `cat`).
fn echo(first: Vec<u8>) -> InProcess {
    InProcess::spawn(|pipe| async move {
        let (mut from_proxy, mut to_proxy) = tokio::io::split(pipe);
        if to_proxy.write_all(&first).await.is_ok() {
            let _ = tokio::io::copy(&mut from_proxy, &mut to_proxy).await;
        }
    })
}

/// Writes `input` to the proxy in front of an echo upstream in one write, closes, and returns what the client
/// read back and the trajectory.
async fn relay(rules: &str, input: String) -> (Vec<Value>, Vec<Record>) {
    relay_with(ProxyOptions::default(), echo(Vec::new()), rules, input).await
}

async fn relay_with(
    options: ProxyOptions,
    upstream: InProcess,
    rules: &str,
    input: String,
) -> (Vec<Value>, Vec<Record>) {
    let file: RulesFile = yaml_serde::from_str(rules).unwrap();
    let (mut client, proxy_side) = tokio::io::duplex(1 << 22);
    let (proxy_in, proxy_out) = tokio::io::split(proxy_side);
    let recorder = Recorder::memory();
    let trajectory = Arc::new(Trajectory::new(recorder.clone()));
    let shared = RuleSet::new(file).shared();
    let stop = CancellationToken::new();
    let proxy = tokio::spawn(stdio::run(options, upstream, shared, trajectory, proxy_in, proxy_out, stop));
    client.write_all(input.as_bytes()).await.unwrap();
    client.shutdown().await.unwrap();
    let mut received = String::new();
    let read = tokio::time::timeout(Duration::from_secs(30), client.read_to_string(&mut received)).await;
    read.expect("the proxy finished in time").unwrap();
    proxy.await.expect("the proxy did not panic").unwrap();
    let lines = received.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    (lines, recorder.records())
}

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {"n": id}}})
}

/// Frame events in `direction`, as (id, action, fault) in trajectory order.
fn frames(records: &[Record], direction: Direction) -> Vec<(Value, FrameAction, Option<String>)> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Frame(FrameEvent { direction: d, action, id, fault, .. }) if *d == direction => {
                Some((id.clone().unwrap_or(Value::Null), *action, fault.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_pipelined_burst_arrives_whole_and_in_order_with_one_event_per_frame() {
    // 300 requests in one write (more than one burst), the 150th answered by the proxy in place of the upstream.
    let rules =
        "rules:\n  - name: refuse\n    match: {tool: refused}\n    mode: instead\n    fault: {type: forbidden}\n";
    let requests: Vec<Value> = (1..=300).map(|id| call(id, if id == 150 { "refused" } else { "echo" })).collect();
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let (received, records) = relay(rules, input).await;

    let echoed: Vec<&Value> = received.iter().filter(|v| v.get("method").is_some()).collect();
    let expected: Vec<&Value> = requests.iter().filter(|r| r["params"]["name"] == "echo").collect();
    assert_eq!(echoed, expected, "every plain request reached the upstream once, in order");
    let refused: Vec<&Value> =
        received.iter().filter(|v| v.get("error").is_some() && v["error"]["data"]["upstreamExit"].is_null()).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["id"], 150);

    let sent = frames(&records, Direction::ClientToServer);
    let ids: Vec<Value> = sent.iter().map(|(id, ..)| id.clone()).collect();
    assert_eq!(ids, (1..=300).map(Value::from).collect::<Vec<_>>(), "one event per client frame, in order");
    assert_eq!(sent[149].1, FrameAction::Consumed);
    assert_eq!(sent[149].2.as_deref(), Some("http_status"), "a preset is recorded as the fault it stands for");
    assert!(sent.iter().enumerate().all(|(i, (_, action, _))| i == 149 || *action == FrameAction::Forwarded));
    let ledger = records.iter().find_map(|r| match r.event {
        Event::Ledger { frames_in, frames_out, consumed, injected } => {
            Some((frames_in, frames_out, consumed, injected))
        }
        _ => None,
    });
    // In: 300 client frames + 299 echoed; out: 299 forwarded + 299 relayed back + 1 answer the proxy made + 299
    // errors for the requests the echo never answered.
    assert_eq!(ledger, Some((599, 898, 1, 300)));
}

#[tokio::test]
async fn a_fault_firing_inside_a_burst_of_replies_keeps_its_place() {
    // The client's own response-shaped lines come back from the echo as replies, all in one burst; the reply to
    // request 7 has a fault armed (`mode: after`).
    let rules = "rules:\n  - name: seven\n    match: {tool: armed}\n    mode: after\n    fault: {type: rate_limit}\n";
    let mut input = format!("{}\n", call(7, "armed"));
    for id in 1..=12 {
        input.push_str(&format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "result": {"n": id}})));
    }
    let (received, records) = relay(rules, input).await;

    let replies: Vec<&Value> = received.iter().filter(|v| v.get("method").is_none()).collect();
    let ids: Vec<&Value> = replies.iter().map(|v| &v["id"]).collect();
    assert_eq!(ids, (1..=12).map(Value::from).collect::<Vec<_>>().iter().collect::<Vec<_>>(), "in order");
    assert!(replies[6].get("error").is_some(), "the reply to 7 was replaced: {}", replies[6]);
    assert!(replies.iter().enumerate().all(|(i, v)| i == 6 || v["result"]["n"] == i + 1));

    // The trajectory: replies 1-6, then the fault's activation, then reply 7 (faulted), then 8-12.
    let back: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Frame(FrameEvent { direction: Direction::ServerToClient, id: Some(id), .. }) => {
                Some(format!("frame {id}"))
            }
            Event::FaultActivated { request_id, .. } => Some(format!("activated {request_id}")),
            _ => None,
        })
        .collect();
    let position = |s: &str| back.iter().position(|b| b == s).unwrap_or_else(|| panic!("{s} in {back:?}"));
    // The echo also returns the request 7 itself as the first server frame.
    assert!(position("activated 7") > back.iter().rposition(|b| b == "frame 6").unwrap(), "{back:?}");
    assert!(position("activated 7") < back.iter().rposition(|b| b == "frame 7").unwrap(), "{back:?}");
    assert!(back.iter().rposition(|b| b == "frame 7").unwrap() < position("frame 8"), "{back:?}");
}

#[tokio::test]
async fn an_over_long_line_from_the_upstream_is_skipped_and_the_relay_goes_on() {
    // The upstream writes a line over a 1 MiB limit, then echoes what it is sent.
    let mut long = vec![b'a'; 1_100_000];
    long.push(b'\n');
    let upstream = echo(long);
    let request = call(1, "echo");
    let options = ProxyOptions { max_frame_bytes: 1 << 20, ..Default::default() };
    let (received, records) = relay_with(options, upstream, "rules: []", format!("{request}\n")).await;
    assert_eq!(received[0], request, "the relay went on after the over-long line");
    assert!(
        records.iter().any(|r| matches!(&r.event, Event::Dropped { bytes: 1_100_000, id: None, .. })),
        "the skipped line is recorded"
    );
}
