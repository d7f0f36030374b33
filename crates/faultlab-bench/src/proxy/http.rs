//! Figure 5: `tools/call` `echo` over Streamable HTTP against one Node server (`streamableHttp`), connections
//! alternating within each round. Per round and connection: the median latency with one request in flight, then
//! requests per second with `http_in_flight`.
//!
//! The figure: `faultlab proxy --listen` against the server direct, both in 2025-11-25 sessions (the newest era
//! Node serves), as proxy / direct per round, with goals. Beside it, when AgentBreak is there, AgentBreak and the
//! same proxy again, both in [`AGENTBREAK_ERA`] sessions, for the informational "faultlab proxy / AgentBreak"
//! (see [`super::peers`]). The two eras are not interchangeable: Node answers a 2025-11-25 session much more
//! slowly than a 2024-11-05 one, so a ratio to direct is only taken within one era.

use super::{Config, NODE_ERA, agentbreak};
use crate::http::{self, Target};
use crate::procs::cpu_us;
use crate::stats::{Stats, fmt, met, per_round, ratio_json, row};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

/// The era of the sessions compared with AgentBreak: the one AgentBreak 0.4.6 speaks to its upstream (it answers
/// the client's `initialize` itself and opens its own session), so that the Node server does the same work behind
/// both.
const AGENTBREAK_ERA: &str = "2024-11-05";
/// The key of the proxy's connection in [`AGENTBREAK_ERA`], beside AgentBreak.
pub(super) const AGENTBREAK_PROXY: &str = "proxy_agentbreak_era";

/// One connection and what it measured.
#[derive(Default)]
pub(super) struct HttpConn {
    key: &'static str,
    name: &'static str,
    url: String,
    era: &'static str,
    target: Option<Arc<Target>>,
    /// The relay process (None when direct): its CPU time is charged per request.
    relay_pid: Option<u32>,
    /// One request in flight: every latency (µs), and the median of each round.
    latency_us: Vec<f64>,
    round_latency_us: Vec<f64>,
    /// `http_in_flight` requests in flight: requests per second, per round.
    round_rps: Vec<f64>,
    relay_cpu_us: f64,
    server_cpu_us: f64,
    requests: usize,
}

impl HttpConn {
    fn new(key: &'static str, name: &'static str, url: String, era: &'static str, relay_pid: Option<u32>) -> HttpConn {
        HttpConn { key, name, url, era, relay_pid, ..HttpConn::default() }
    }
    fn json(&self) -> Value {
        let per = |cpu: f64| if self.requests == 0 { 0.0 } else { cpu / self.requests as f64 };
        json!({"connection": self.name, "url": self.url, "era": self.era,
            "latency_us_one_in_flight": Stats::of(&self.latency_us).json(),
            "round_median_latency_us": self.round_latency_us,
            "round_rps": self.round_rps, "rps": Stats::of(&self.round_rps).json(),
            "relay_cpu_us_per_request": per(self.relay_cpu_us), "server_cpu_us_per_request": per(self.server_cpu_us)})
    }
}

pub(super) struct Http {
    conns: Vec<HttpConn>,
    /// Why AgentBreak has no (or not all) figures.
    pub(super) agentbreak_error: Option<String>,
}

/// The `echo` call; a good answer holds the echoed text, not just any result: AgentBreak answers with a made-up
/// result when its upstream gives none.
fn echo(url: &str, headers: reqwest::header::HeaderMap) -> Target {
    let call = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "ping"}}});
    Target::new(url, headers, &call, "Echo: ping")
}

/// A failing AgentBreak is dropped (the reason kept); any other failure ends the bench.
pub(super) fn measure(cfg: &Config, scratch: &Path) -> Http {
    let mut agentbreak_error = cfg.agentbreak.as_ref().err().map(|r| format!("not run: {r}"));
    if let Some(reason) = &agentbreak_error {
        eprintln!("bench: AgentBreak {reason}");
    }
    eprintln!(
        "bench: 5. Streamable HTTP tools/call echo ({NODE_ERA} sessions), {} rounds x {:?} with 1 and with {} in flight{}",
        cfg.http_rounds,
        cfg.http_window,
        cfg.http_in_flight,
        if cfg.agentbreak.is_ok() {
            ", beside AgentBreak and the proxy in 2024-11-05 sessions"
        } else {
            " (direct and proxy only)"
        }
    );
    let runtime = http::runtime();
    let client = http::client();
    let node = http::start_node(&cfg.tools).unwrap_or_else(|e| panic!("{e}"));
    let record = scratch.join("http-trajectory.jsonl");
    let proxy = http::start_proxy(&cfg.tools, &node.url, &record).unwrap_or_else(|e| panic!("{e}"));
    let proxy_name = "faultlab proxy --listen --record FILE";
    let mut conns = vec![
        HttpConn::new("direct", "direct", node.url.clone(), NODE_ERA, None),
        HttpConn::new("proxy", proxy_name, proxy.url.clone(), NODE_ERA, Some(proxy.pid())),
    ];
    let agentbreak = match &cfg.agentbreak {
        Ok(bin) => match agentbreak::start(bin, &node.url, scratch) {
            Ok((server, url)) => {
                let (era, pid) = (AGENTBREAK_ERA, Some(proxy.pid()));
                conns.push(HttpConn::new(AGENTBREAK_PROXY, proxy_name, proxy.url.clone(), era, pid));
                conns.push(HttpConn::new("agentbreak", "agentbreak serve", url, era, Some(server.pgid)));
                Some(server)
            }
            Err(e) => {
                eprintln!("bench: AgentBreak could not be run: {e}");
                agentbreak_error = Some(format!("could not be run: {e}"));
                None
            }
        },
        Err(_) => None,
    };
    let mut alive = vec![true; conns.len()];
    let mut fail = |conn: &HttpConn, alive: &mut bool, e: String| {
        assert!(conn.key == "agentbreak", "{}: {e}", conn.name);
        eprintln!("bench: AgentBreak failed, dropped from the run: {e}");
        agentbreak_error = Some(format!("failed: {e}"));
        *alive = false;
    };
    for (i, conn) in conns.iter_mut().enumerate() {
        let warmed = runtime.block_on(async {
            let target = Arc::new(echo(&conn.url, http::open_session(&client, &conn.url, conn.era).await?));
            conn.target = Some(target.clone());
            http::load(&client, &target, 1, cfg.http_warmup).await?;
            http::load(&client, &target, cfg.http_in_flight, cfg.http_warmup).await
        });
        if let Err(e) = warmed {
            fail(conn, &mut alive[i], e);
        }
    }
    let n = conns.len();
    for round in 0..cfg.http_rounds {
        for in_flight in [1, cfg.http_in_flight] {
            for k in 0..n {
                let i = (round + k) % n;
                if !alive[i] {
                    continue;
                }
                let conn = &mut conns[i];
                let target = conn.target.clone().expect("a session");
                let relay_cpu = || conn.relay_pid.map_or(0.0, cpu_us);
                let before = (relay_cpu(), cpu_us(node.pid()));
                let measured = runtime.block_on(http::load(&client, &target, in_flight, cfg.http_window));
                let after = (relay_cpu(), cpu_us(node.pid()));
                match measured {
                    Ok((rps, latencies)) => {
                        conn.relay_cpu_us += after.0 - before.0;
                        conn.server_cpu_us += after.1 - before.1;
                        conn.requests += latencies.len();
                        if in_flight == 1 {
                            conn.round_latency_us.push(Stats::of(&latencies).median);
                            conn.latency_us.extend(latencies);
                        } else {
                            conn.round_rps.push(rps);
                        }
                    }
                    Err(e) => fail(conn, &mut alive[i], e),
                }
            }
        }
        let line: Vec<String> = conns
            .iter()
            .zip(&alive)
            .filter(|(c, alive)| **alive && c.key != "direct" && c.round_rps.len() == round + 1)
            .map(|(c, _)| {
                let (lat, rps) = (c.round_latency_us[round], c.round_rps[round]);
                format!("{} ({}) {} µs median, {} req/s", c.key, c.era, fmt(lat), fmt(rps))
            })
            .collect();
        let d = &conns[0];
        eprintln!(
            "bench:   round {}: direct {} µs median, {} req/s; {}",
            round + 1,
            fmt(d.round_latency_us[round]),
            fmt(d.round_rps[round]),
            line.join("; ")
        );
    }
    drop((agentbreak, proxy, node));
    conns.retain(|c| !c.latency_us.is_empty() && !c.round_rps.is_empty());
    Http { conns, agentbreak_error }
}

impl Http {
    fn conn(&self, key: &str) -> Option<&HttpConn> {
        self.conns.iter().find(|c| c.key == key)
    }

    /// Per round: the median latency with one request in flight (`latency`), or req/s.
    pub(super) fn rounds(&self, key: &str, latency: bool) -> Vec<f64> {
        self.conn(key).map_or(Vec::new(), |c| if latency { c.round_latency_us.clone() } else { c.round_rps.clone() })
    }

    /// Proxy / direct per round: (median latency with one request in flight, req/s with `http_in_flight`).
    fn proxy_over_direct(&self) -> (Stats, Stats) {
        let over = |latency| Stats::of(&per_round(&self.rounds("proxy", latency), &self.rounds("direct", latency)));
        (over(true), over(false))
    }

    fn met(&self) -> (bool, bool) {
        let (latency, rps) = self.proxy_over_direct();
        (latency.median <= 1.10, rps.median >= 0.9)
    }

    /// Whether `conn` is compared with direct (same era).
    fn beside_direct(conn: &HttpConn) -> bool {
        conn.key != "direct" && conn.era == NODE_ERA
    }

    /// Rows 5 and 5b of the main table.
    pub(super) fn print_rows(&self, cfg: &Config) {
        let (latency, rps) = self.proxy_over_direct();
        let (latency_met, rps_met) = self.met();
        let median = |key| fmt(Stats::of(&self.rounds(key, true)).median);
        let rps_median = |key| fmt(Stats::of(&self.rounds(key, false)).median);
        row(&[
            "5".to_owned(),
            format!(
                "Streamable HTTP `tools/call` `echo`, {NODE_ERA} session, one request in flight; {} rounds x {:?}",
                cfg.http_rounds, cfg.http_window
            ),
            format!("median {} µs", median("direct")),
            format!("median {} µs", median("proxy")),
            format!("proxy/direct median latency: {}", latency.spread("x")),
            "(AgentBreak: peers table)".to_owned(),
            "<= 1.10x (median)".to_owned(),
            met(latency_met).to_owned(),
        ]);
        row(&[
            "5b".to_owned(),
            format!("the same, {} requests in flight", cfg.http_in_flight),
            format!("{} req/s", rps_median("direct")),
            format!("{} req/s", rps_median("proxy")),
            format!("proxy/direct req/s: {}", rps.spread("x")),
            "-".to_owned(),
            ">= 0.9x (median)".to_owned(),
            met(rps_met).to_owned(),
        ]);
    }

    /// Every connection of figure 5.
    pub(super) fn print_connections(&self, cfg: &Config) {
        println!(
            "\nFigure 5: `tools/call` `echo` over Streamable HTTP against server-everything `streamableHttp`, {} rounds x {:?} per connection and load; ratios to direct within {NODE_ERA} only ({AGENTBREAK_ERA}: the era AgentBreak speaks upstream):\n",
            cfg.http_rounds, cfg.http_window
        );
        println!(
            "| connection | era | 1 in flight: median latency, µs (min / median / max of round medians) | / direct | {} in flight: req/s (min / median / max) | / direct | CPU µs per request, relay + server |",
            cfg.http_in_flight
        );
        println!("|---|---|---|---|---|---|---|");
        let direct = self.conn("direct").expect("direct over HTTP measured");
        for c in &self.conns {
            let over = |a: &[f64], b: &[f64]| match (c.key, Self::beside_direct(c)) {
                ("direct", _) => "1".to_owned(),
                (_, true) => Stats::of(&per_round(a, b)).spread("x"),
                (_, false) => "-".to_owned(),
            };
            let per = |cpu: f64| fmt(cpu / c.requests.max(1) as f64);
            println!(
                "| {} | {} | {} | {} | {} | {} | {} + {} |",
                c.name,
                c.era,
                Stats::of(&c.round_latency_us).spread(""),
                over(&c.round_latency_us, &direct.round_latency_us),
                Stats::of(&c.round_rps).spread(""),
                over(&c.round_rps, &direct.round_rps),
                per(c.relay_cpu_us),
                per(c.server_cpu_us)
            );
        }
        if let Some(e) = &self.agentbreak_error {
            println!("| agentbreak serve | {AGENTBREAK_ERA} | {e} | | | | |");
        }
    }

    pub(super) fn json(&self, cfg: &Config) -> Value {
        let direct = self.conn("direct").expect("direct over HTTP measured");
        let (latency_met, rps_met) = self.met();
        let connections = self.conns.iter().map(|c| {
            let mut v = c.json();
            if Self::beside_direct(c) {
                v["latency_over_direct"] = ratio_json(&per_round(&c.round_latency_us, &direct.round_latency_us));
                v["rps_over_direct"] = ratio_json(&per_round(&c.round_rps, &direct.round_rps));
            }
            if c.key == "proxy" {
                v["latency_over_direct"]["goal"] = json!("proxy/direct median latency <= 1.10 (median round)");
                v["latency_over_direct"]["met"] = json!(latency_met);
                v["rps_over_direct"]["goal"] = json!("proxy/direct req/s >= 0.9 (median round)");
                v["rps_over_direct"]["met"] = json!(rps_met);
            }
            (c.key.to_owned(), v)
        });
        json!({"era": NODE_ERA, "agentbreak_era": AGENTBREAK_ERA, "rounds": cfg.http_rounds, "window_ms": cfg.http_window.as_millis() as u64,
            "warmup_ms": cfg.http_warmup.as_millis() as u64, "in_flight": cfg.http_in_flight,
            "connections": connections.collect::<serde_json::Map<_, _>>(),
            "agentbreak_error": self.agentbreak_error})
    }
}
