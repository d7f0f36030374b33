//! Figure 3: HTTP `tools/call` requests per second with a fixed number in flight: ours stateless (2026-07-28),
//! ours in a 2025-11-25 session (same era as Node, informational), Node in a 2025-11-25 session.

use super::{Config, MODERN_ERA, NODE_ERA, compare};
use crate::http::{self, Server, Target};
use crate::procs::cpu_us;
use crate::stats::{Stats, fmt};
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) struct HttpResult {
    pub(super) label: String,
    rps: Stats,
    latency_us: Stats,
    /// Server process CPU time (user + system, all threads) per request; the client shares the same cores.
    server_cpu_us: f64,
}

impl HttpResult {
    fn json(&self) -> Value {
        json!({"label": self.label, "rps": self.rps.json(), "latency_us": self.latency_us.json(),
            "server_cpu_us_per_request": self.server_cpu_us})
    }
}

pub(super) struct Throughput {
    pub(super) ours: HttpResult,
    ours_session: HttpResult,
    pub(super) node: HttpResult,
}

/// Stateless 2026-07-28 `tools/call` of our `ping` tool.
fn modern_target(url: &str) -> Target {
    let call = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": "ping", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN_ERA,
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers =
        http::headers(&[("mcp-protocol-version", MODERN_ERA), ("mcp-method", "tools/call"), ("mcp-name", "ping")]);
    Target::new(url, headers, &call, "\"result\":")
}

/// A `tools/call` of `tool` in a new 2025-11-25 session at `url`.
pub(super) async fn session_target(client: &reqwest::Client, url: &str, tool: &str, arguments: Value) -> Target {
    let headers = http::open_session(client, url, NODE_ERA).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    assert!(headers.contains_key("mcp-session-id"), "{url}: no mcp-session-id");
    Target::tools_call(url, headers, tool, arguments)
}

async fn bench(cfg: &Config, label: &str, server: &Server, client: &reqwest::Client, target: Target) -> HttpResult {
    let target = Arc::new(target);
    let load = |window| http::load(client, &target, cfg.http_in_flight, window);
    let fail = |e| panic!("{label}: {e}");
    load(cfg.http_warmup).await.unwrap_or_else(fail);
    let (mut rps, mut latencies) = (Vec::new(), Vec::new());
    let cpu_before = cpu_us(server.pid());
    for _ in 0..cfg.http_rounds {
        let (r, l) = load(cfg.http_window).await.unwrap_or_else(fail);
        rps.push(r);
        latencies.extend(l);
    }
    let server_cpu_us = (cpu_us(server.pid()) - cpu_before) / latencies.len() as f64;
    HttpResult { label: label.to_owned(), rps: Stats::of(&rps), latency_us: Stats::of(&latencies), server_cpu_us }
}

pub(super) fn measure(cfg: &Config) -> Throughput {
    let started = |s: Result<Server, String>| s.unwrap_or_else(|e| panic!("{e}"));
    http::runtime().block_on(async {
        let client = http::client();
        let ours = started(http::start_ours(&cfg.tools));
        let modern_label = "faultlab, stateless 2026-07-28, tool `ping`";
        let modern = bench(cfg, modern_label, &ours, &client, modern_target(&ours.url)).await;
        let target = session_target(&client, &ours.url, "ping", json!({})).await;
        let session = bench(cfg, "faultlab, 2025-11-25 session, tool `ping`", &ours, &client, target).await;
        drop(ours);
        let node = started(http::start_node(&cfg.tools));
        let target = session_target(&client, &node.url, "echo", json!({"message": "ping"})).await;
        let node_result = bench(cfg, "Node, 2025-11-25 session, tool `echo`", &node, &client, target).await;
        Throughput { ours: modern, ours_session: session, node: node_result }
    })
}

impl Throughput {
    fn ratio(&self) -> f64 {
        self.ours.rps.median / self.node.rps.median
    }

    pub(super) fn print(&self, cfg: &Config) {
        let (ours, node) = (&self.ours, &self.node);
        let what = format!(
            "HTTP `tools/call` req/s, {} in flight (min / median / max of {} x {:?})",
            cfg.http_in_flight, cfg.http_rounds, cfg.http_window
        );
        compare(what, &ours.rps, &node.rps, false, 2, ">= 5x", Some(self.ratio() >= 5.0));
        let what = "HTTP `tools/call` latency, µs (min / median / p99 / max)".to_owned();
        compare(what, &ours.latency_us, &node.latency_us, true, 3, "-", None);
        println!(
            "| HTTP server CPU time per request, µs (whole run; client shares the cores) | {} | {} | {:.3}x | - | - |",
            fmt(ours.server_cpu_us),
            fmt(node.server_cpu_us),
            ours.server_cpu_us / node.server_cpu_us
        );
        let what = "same era as Node: faultlab HTTP req/s in a 2025-11-25 session (min / median / max)".to_owned();
        compare(what, &self.ours_session.rps, &node.rps, false, 2, "-", None);
    }

    pub(super) fn json(&self, cfg: &Config) -> Value {
        json!({"in_flight": cfg.http_in_flight, "rounds": cfg.http_rounds,
            "window_ms": cfg.http_window.as_millis() as u64, "warmup_ms": cfg.http_warmup.as_millis() as u64,
            "ours": self.ours.json(), "ours_same_era_as_node": self.ours_session.json(),
            "node": self.node.json(), "ratio_median_rps": self.ratio(), "goal": "ours/node >= 5", "met": self.ratio() >= 5.0})
    }
}
