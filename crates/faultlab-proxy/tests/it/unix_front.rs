//! The Unix-socket front: every connection a stdio session with an upstream of its own, all sharing the run's rule
//! state, each connection's events under its own scope in the one trajectory.

use crate::harness::{call, lab_server};
use faultlab_engine::Recorder;
use faultlab_engine::recorder::Event;
use faultlab_proxy::front::unix::{self, Record};
use faultlab_proxy::relay::ProxyOptions;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

/// The next line, or `None` at the end.
async fn next(lines: &mut tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>) -> Option<String> {
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await;
    line.expect("a line or the end in time").unwrap()
}

/// Connects, initializes, calls `ping` with id 1; the reply line, or `None` when the proxy closed the connection.
async fn ping_once(socket: &std::path::Path) -> Option<Value> {
    let stream = UnixStream::connect(socket).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
        "capabilities":{},"clientInfo":{"name":"unix-test","version":"1"}}});
    write.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    let reply: Value = serde_json::from_str(&next(&mut lines).await.expect("initialize answered")).unwrap();
    assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
    write.write_all(format!("{}\n", call(1, "ping", json!({}))).as_bytes()).await.unwrap();
    next(&mut lines).await.map(|line| serde_json::from_str(&line).unwrap())
}

#[tokio::test]
async fn a_client_that_reconnects_meets_the_rules_where_the_run_left_them() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("mcp.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let rules: RulesFile = yaml_serde::from_str(
        "seed: 1\nrules:\n  - {name: drop-first, match: {tool: ping, nth: 1}, fault: {type: disconnect}}\n",
    )
    .unwrap();
    let rules = RuleSet::new(rules).shared();
    let recorder = Recorder::memory();
    let record = Record { recorder: recorder.clone(), bodies: false, scrub: None };
    let stop = CancellationToken::new();
    let (accepted_tx, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    let served = tokio::spawn(unix::serve(
        listener,
        ProxyOptions::default(),
        |_| lab_server(),
        rules,
        record,
        move |n| {
            let _ = accepted_tx.send(n);
        },
        stop.clone(),
    ));

    assert_eq!(ping_once(&socket).await, None, "the first ping of the run is disconnected");
    let reply = ping_once(&socket).await.expect("the second connection's ping is answered");
    assert!(reply["result"]["content"].is_array(), "the rule is spent for the run: {reply}");
    assert_eq!((accepted.recv().await, accepted.recv().await), (Some(1), Some(2)));

    stop.cancel();
    let served = tokio::time::timeout(Duration::from_secs(10), served).await.unwrap().unwrap();
    assert_eq!((served.connections, served.failures.len()), (2, 0), "{:?}", served.failures);
    let records = recorder.records();
    let scopes: std::collections::BTreeSet<&str> = records.iter().map(|r| r.scope.as_str()).collect();
    assert_eq!(scopes, ["connection 1", "connection 2"].into());
    let fired: Vec<&str> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Frame(f) => f.rule.as_deref().map(|_| r.scope.as_str()),
            _ => None,
        })
        .collect();
    assert!(!fired.is_empty() && fired.iter().all(|s| *s == "connection 1"), "{fired:?}");
}

/// An upstream whose start panics (a defect of the lab, not of the client).
struct Panics;

impl faultlab_proxy::relay::Connect for Panics {
    type Upstream = faultlab_proxy::upstream::in_process::InProcessUpstream;

    fn connect(
        self,
        _link: faultlab_proxy::relay::Link,
    ) -> Result<std::sync::Arc<Self::Upstream>, faultlab_proxy::relay::ProxyError> {
        panic!("the upstream could not be made");
    }
}

/// A connection whose session panics is a failure of the run, named, not a connection that silently ended: its
/// client sees the connection close, and the front goes on accepting.
#[tokio::test]
async fn a_session_that_panics_is_a_failure_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("mcp.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let rules = RuleSet::new(RulesFile::default()).shared();
    let record = Record { recorder: Recorder::memory(), bodies: false, scrub: None };
    let stop = CancellationToken::new();
    let served =
        tokio::spawn(unix::serve(listener, ProxyOptions::default(), |_| Panics, rules, record, |_| {}, stop.clone()));
    for _ in 0..2 {
        let stream = UnixStream::connect(&socket).await.unwrap();
        let (read, _write) = stream.into_split();
        assert_eq!(next(&mut BufReader::new(read).lines()).await, None, "the connection is closed");
    }
    stop.cancel();
    let served = tokio::time::timeout(Duration::from_secs(10), served).await.unwrap().unwrap();
    assert_eq!(served.connections, 2);
    assert_eq!(served.failures.len(), 2, "{:?}", served.failures);
    assert!(served.failures[0].contains("panicked: the upstream could not be made"), "{:?}", served.failures);
}
