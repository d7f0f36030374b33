//! Figure 4 (informational): memory per open 2025-11-25 session, KiB, on fresh servers, alternating.

use super::throughput::session_target;
use super::{Config, compare};
use crate::http::{self, Server};
use crate::procs::rss_kib;
use crate::stats::Stats;
use serde_json::{Value, json};

pub(super) struct Memory {
    ours: Stats,
    node: Stats,
}

/// Memory each open 2025-11-25 session adds to a fresh server, KiB: resident memory with `count` sessions open
/// (each initialized and called once) minus resident memory before, over `count`. One session opened and deleted
/// first, so memory the server allocates once (runtime, tool router) is not charged to the sessions.
async fn per_session(client: &reqwest::Client, server: &Server, count: usize, tool: &str, args: Value) -> f64 {
    let warm = session_target(client, &server.url, tool, args.clone()).await;
    warm.call(client, 1).await.unwrap_or_else(|e| panic!("{e}"));
    let end = client.delete(&server.url).headers(warm.headers.clone()).send().await.expect("DELETE session");
    assert!(end.status().is_success(), "DELETE session: HTTP {}", end.status());
    let before = rss_kib(server.pid());
    let mut open = Vec::with_capacity(count);
    for _ in 0..count {
        let target = session_target(client, &server.url, tool, args.clone()).await;
        target.call(client, 1).await.unwrap_or_else(|e| panic!("{e}"));
        open.push(target);
    }
    (rss_kib(server.pid()) - before) / count as f64
}

pub(super) fn measure(cfg: &Config) -> Memory {
    http::runtime().block_on(async {
        let client = http::client();
        let (mut ours, mut node) = (Vec::new(), Vec::new());
        for _ in 0..cfg.memory_rounds {
            // Each server is killed (dropped) before the next starts.
            let server = http::start_ours(&cfg.tools).unwrap_or_else(|e| panic!("{e}"));
            ours.push(per_session(&client, &server, cfg.memory_sessions, "ping", json!({})).await);
            drop(server);
            let server = http::start_node(&cfg.tools).unwrap_or_else(|e| panic!("{e}"));
            node.push(per_session(&client, &server, cfg.memory_sessions, "echo", json!({"message": "ping"})).await);
        }
        Memory { ours: Stats::of(&ours), node: Stats::of(&node) }
    })
}

impl Memory {
    pub(super) fn print(&self, cfg: &Config) {
        let what = format!(
            "HTTP memory per open 2025-11-25 session, KiB ({} open; min / median / max of {} fresh servers)",
            cfg.memory_sessions, cfg.memory_rounds
        );
        compare(what, &self.ours, &self.node, false, 3, "-", None);
    }

    pub(super) fn json(&self, cfg: &Config) -> Value {
        json!({"sessions_open": cfg.memory_sessions, "rounds": cfg.memory_rounds,
            "ours": self.ours.json(), "node": self.node.json(), "ratio_median": self.ours.median / self.node.median})
    }
}
