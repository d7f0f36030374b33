//! `faultlab serve` side by side with the Node reference server `@modelcontextprotocol/server-everything`, in one
//! run; one module per figure:
//!
//! 1. [`cold_start`]: stdio cold start: spawn, write `initialize`, time until its response line arrives (runs
//!    alternate servers);
//! 2. [`ping`]: stdio JSON-RPC `ping` round trip on one initialized connection, after a warm-up;
//! 3. [`throughput`]: HTTP `tools/call` requests per second on loopback with a fixed number in flight: ours with
//!    stateless 2026-07-28 requests, Node with the newest era it serves (2025-11-25, in a session); for a same-era
//!    comparison ours is also measured in a 2025-11-25 session (informational row);
//! 4. [`memory`]: memory per open 2025-11-25 session: resident memory of a fresh server with 128 sessions open
//!    (each initialized and called once), less its memory before, over 128 (informational; no goal);
//! 5. [`suite`]: wall time of `faultlab run` over the built-in suite (examples/scenarios) against the built-in
//!    server, per era.
//!
//! What `faultlab proxy` costs over HTTP is the proxy bench's figure 5 ([`crate::proxy`]), not measured here.
//!
//! Inputs: those of [`crate::inputs`], and `FAULTLAB_BENCH_IN_FLIGHT=N`, HTTP requests kept in flight (default 16).
//! Prints a Markdown table on stdout and writes the same figures as JSON (default `bench/serve.json` in the
//! target directory).

mod cold_start;
mod memory;
mod ping;
mod suite;
mod throughput;

use crate::inputs::{Inputs, Machine, Tools, write_report};
use crate::procs::{kill_groups_on_panic, leftover_processes};
use crate::stats::{Stats, met, row};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Newest era the Node reference server (SDK 1.x) accepts; ours is asked for the modern one.
const NODE_ERA: &str = "2025-11-25";
const MODERN_ERA: &str = "2026-07-28";

struct Config {
    quick: bool,
    tools: Tools,
    json: PathBuf,
    cold_runs: usize,
    ping_warmup: usize,
    ping_count: usize,
    http_in_flight: usize,
    http_warmup: Duration,
    http_window: Duration,
    http_rounds: usize,
    /// Sessions held open to measure memory per session (the server's cap is 128), on `memory_rounds` fresh servers.
    memory_sessions: usize,
    memory_rounds: usize,
    /// The built-in scenario suite (the example scenarios) run by `faultlab run`, per era.
    scenarios: PathBuf,
    suite_rounds: usize,
}

impl Config {
    fn load() -> Config {
        let i = Inputs::load();
        Config {
            quick: i.quick,
            tools: i.tools("scripts/bench-serve.sh"),
            json: i.json("serve"),
            cold_runs: i.q(2, 20),
            ping_warmup: i.q(20, 200),
            ping_count: i.q(100, 2000),
            http_in_flight: std::env::var("FAULTLAB_BENCH_IN_FLIGHT").ok().and_then(|v| v.parse().ok()).unwrap_or(16),
            http_warmup: i.ms(100, 1000),
            http_window: i.ms(300, 3000),
            http_rounds: i.q(1, 3),
            memory_sessions: i.q(8, 128),
            memory_rounds: i.q(1, 3),
            scenarios: i.root.join("examples/scenarios"),
            suite_rounds: i.q(1, 5),
        }
    }
}

/// One row of the main table: ours beside Node (`p99`: with the p99 column), the ratio of the medians with
/// `digits` decimals, the goal and whether it is met (`None`: informational).
fn compare(what: String, ours: &Stats, node: &Stats, p99: bool, digits: usize, goal: &str, ok: Option<bool>) {
    let ratio = format!("{:.digits$}x", ours.median / node.median);
    row(&[what, ours.cell(p99), node.cell(p99), ratio, goal.to_owned(), ok.map_or("-", met).to_owned()]);
}

#[derive(Clone, Copy, PartialEq)]
enum Server {
    Ours,
    Node,
}

pub fn main() {
    let cfg = Config::load();
    kill_groups_on_panic();
    let Machine { cores, cpu } = Machine::this();
    let versions = cfg.tools.versions();
    eprintln!("bench: {} ({} cores, {cpu}){}", versions, cores, if cfg.quick { ", QUICK mode" } else { "" });
    let run_start = Instant::now();

    eprintln!("bench: stdio cold start x{}", cfg.cold_runs);
    let cold = cold_start::measure(&cfg);
    eprintln!("bench: stdio ping x{} (+{} warm-up)", cfg.ping_count, cfg.ping_warmup);
    let ping = ping::measure(&cfg);
    eprintln!("bench: HTTP tools/call, {} in flight, {} x {:?}", cfg.http_in_flight, cfg.http_rounds, cfg.http_window);
    let http = throughput::measure(&cfg);
    eprintln!("bench: HTTP memory with {} sessions open x{}", cfg.memory_sessions, cfg.memory_rounds);
    let memory = memory::measure(&cfg);
    let suite = suite::measure(&cfg);
    let run_secs = run_start.elapsed().as_secs_f64();
    let leftover = leftover_processes(Duration::from_secs(5));

    let everything = versions["server_everything"].as_str().unwrap_or("unknown");
    println!("\n### faultlab serve vs @modelcontextprotocol/server-everything {everything}");
    println!(
        "\n{cores} cores, {cpu}; faultlab {}, Node {}{}\n",
        versions["faultlab"].as_str().unwrap_or("unknown"),
        versions["node"].as_str().unwrap_or("unknown"),
        if cfg.quick { "; QUICK mode (tiny counts, figures not meaningful)" } else { "" }
    );
    println!("| measurement | faultlab | Node reference | ours/Node (median) | goal | met |");
    println!("|---|---|---|---|---|---|");
    cold.print(&cfg);
    ping.print(&cfg);
    http.print(&cfg);
    memory.print(&cfg);
    suite.print(&cfg);
    println!(
        "\nHTTP: ours = {}; Node = {} (the newest era it accepts; it does not serve {MODERN_ERA}). Run took {run_secs:.1} s; processes left after the run: {leftover}.",
        http.ours.label, http.node.label
    );

    let report = json!({
        "quick": cfg.quick,
        "machine": {"cores": cores, "cpu": cpu},
        "versions": versions,
        "run_seconds": run_secs,
        "leftover_processes": leftover,
        "cold_start_ms": cold.json(),
        "stdio_ping_us": ping.json(&cfg),
        "http_tools_call": http.json(&cfg),
        "suite_wall_s": suite.json(&cfg),
        "memory_per_session_kib": memory.json(&cfg),
    });
    write_report(&cfg.json, &report);
}
