//! The trajectory's order: a client's request is recorded before the reply it gets, however fast the upstream
//! answers. A reply recorded first reads as a call never answered (and its reply as one to an unknown request),
//! which is what graded a good agent's healthy run `recovered by ignore` when the Unix-socket front's threads
//! read a fast server's reply while the request's write was still returning.

use faultlab_engine::Recorder;
use faultlab_engine::recorder::{Direction, Event, FrameEvent};
use faultlab_proxy::front::stdio;
use faultlab_proxy::relay::{Connect, Link, ProxyError, ProxyOptions, Upstream};
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_wire::Frame;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// An upstream that answers a request while its write is still returning: the reply reaches the proxy before
/// `send` does (the fastest a server on another thread can be).
struct AnswersAtOnce;

struct Answering(Link);

impl Connect for AnswersAtOnce {
    type Upstream = Answering;
    fn connect(self, link: Link) -> Result<Arc<Answering>, ProxyError> {
        Ok(Arc::new(Answering(link)))
    }
}

impl Upstream for Answering {
    async fn send(&self, frame: &Frame) -> bool {
        if let Some(id) = frame.id() {
            let reply = json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {"content": []}});
            self.0.deliver([Frame::from_value(reply)]);
        }
        true
    }

    async fn client_left(&self) {
        self.0.end();
    }

    fn stop(&self) {
        self.0.end();
    }

    async fn finish(&self) -> Option<String> {
        None
    }
}

#[tokio::test]
async fn a_request_is_recorded_before_the_reply_it_gets_however_fast_the_upstream() {
    let file: RulesFile = yaml_serde::from_str("rules: []").unwrap();
    let (client, proxy_side) = tokio::io::duplex(1 << 16);
    let (input, output) = tokio::io::split(proxy_side);
    let recorder = Recorder::memory();
    let trajectory = Arc::new(Trajectory::new(recorder.clone()));
    let stop = CancellationToken::new();
    let rules = RuleSet::new(file).shared();
    let proxy =
        tokio::spawn(stdio::run(ProxyOptions::default(), AnswersAtOnce, rules, trajectory, input, output, stop));
    let (from_proxy, mut to_proxy) = tokio::io::split(client);
    let mut lines = BufReader::new(from_proxy).lines();
    for id in 1..=3 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo"}});
        to_proxy.write_all(format!("{call}\n").as_bytes()).await.unwrap();
        let reply = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap();
        assert!(reply.is_some_and(|l| l.contains(&format!("\"id\":{id}"))));
    }
    to_proxy.shutdown().await.unwrap();
    drop(to_proxy);
    tokio::time::timeout(Duration::from_secs(10), proxy).await.unwrap().unwrap().unwrap();
    let order: Vec<(Direction, u64)> = recorder
        .records()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::Frame(FrameEvent { direction, id: Some(id), .. }) => Some((direction, id.as_u64()?)),
            _ => None,
        })
        .collect();
    let expected: Vec<(Direction, u64)> =
        (1..=3).flat_map(|id| [(Direction::ClientToServer, id), (Direction::ServerToClient, id)]).collect();
    assert_eq!(order, expected);
}
