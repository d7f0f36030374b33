//! Figures 1 and 2, which share their connections: sequential `echo` round trips (total time per round against
//! direct) and pipelined throughput (req/s per round against direct), on every connection in turn: direct (the
//! reference of every ratio), the proxy, the peer relays and the reference connections.

use super::{Config, Skipped, Via, peer};
use crate::stats::{Stats, fmt, met, ratio_json, row};
use crate::stdio::{Peer, Tool};
use serde_json::{Value, json};
use std::path::Path;

/// Figures 1 and 2 for one connection, all rounds pooled.
#[derive(Default)]
pub(super) struct PerVia {
    via: Via,
    /// Figure 1: per-call round trips (µs); figure 2: requests per second, one per round.
    samples: Vec<f64>,
    /// Per round: this connection's total time / direct's (figure 1), or its req/s / direct's (figure 2).
    ratios: Vec<f64>,
    /// Per round: the median round trip (µs, figure 1) or req/s (figure 2); what the peers are compared on.
    round_figures: Vec<f64>,
    /// CPU time per call (µs) of the relay process (0 when direct) and of the Node server.
    relay_cpu_us: f64,
    server_cpu_us: f64,
}

impl PerVia {
    fn json(&self, figure2: bool) -> Value {
        let samples = Stats::of(&self.samples).json();
        json!({"connection": self.via.name(), if figure2 { "rps" } else { "per_call_us" }: samples,
            "rounds": if figure2 { json!(self.samples) } else { Value::Null },
            "round_median_us": if figure2 { Value::Null } else { json!(self.round_figures) },
            "over_direct": if self.ratios.is_empty() { Value::Null } else { ratio_json(&self.ratios) },
            "relay_cpu_us_per_call": self.relay_cpu_us, "server_cpu_us_per_call": self.server_cpu_us})
    }
}

pub(super) struct Rounds {
    seq: Vec<PerVia>,
    pipe: Vec<PerVia>,
}

/// Runs figure 1 (`pipelined == false`: `seq_calls` sequential calls per connection and round, alternating in
/// blocks) or figure 2 (one pipelined run per connection and round) on every connection; `peers[0]` is direct.
/// A failing peer (`Via::optional`) is dropped, the reason kept in `skipped`; any other failure ends the bench.
fn relay_rounds(cfg: &Config, peers: &mut [(Via, Peer)], pipelined: bool, skipped: &mut Skipped) -> Vec<PerVia> {
    let n = peers.len();
    let mut out: Vec<PerVia> = peers.iter().map(|(via, _)| PerVia { via: *via, ..PerVia::default() }).collect();
    let (mut cpu, mut calls) = (vec![(0.0f64, 0.0f64); n], vec![0usize; n]);
    let mut alive = vec![true; n];
    let mut drop_peer = |via: Via, alive: &mut bool, e: String| {
        assert!(via.optional(), "{e}");
        eprintln!("bench: {} failed, dropped from the run: {e}", via.short());
        skipped.insert(via, e);
        *alive = false;
    };
    let (rounds, blocks) =
        if pipelined { (cfg.pipe_rounds, 1) } else { (cfg.seq_rounds, cfg.seq_calls.div_ceil(cfg.seq_block)) };
    if pipelined {
        // One burst each first, not measured: the sequential warm-up does not exercise a full pipe.
        for (i, (via, peer)) in peers.iter_mut().enumerate() {
            if let Err(e) = peer.pipelined(cfg.pipe_count) {
                drop_peer(*via, &mut alive[i], e);
            }
        }
    }
    for round in 0..rounds {
        // Figure 1: total µs of the round; figure 2: req/s of the round.
        let mut figure = vec![0.0f64; n];
        // Figure 1: every round trip of the round, per connection.
        let mut round_samples: Vec<Vec<f64>> = vec![Vec::new(); n];
        for block in 0..blocks {
            for k in 0..n {
                let i = (round + block + k) % n;
                if !alive[i] {
                    continue;
                }
                let (via, peer) = &mut peers[i];
                let before = peer.cpu_us();
                let result = if pipelined {
                    peer.pipelined(cfg.pipe_count).map(|secs| {
                        figure[i] = cfg.pipe_count as f64 / secs;
                        out[i].samples.push(figure[i]);
                        cfg.pipe_count
                    })
                } else {
                    peer.calls(Tool::Echo, cfg.seq_block).map(|s| {
                        figure[i] += s.iter().sum::<f64>();
                        round_samples[i].extend(&s);
                        out[i].samples.extend(s);
                        cfg.seq_block
                    })
                };
                let after = peer.cpu_us();
                match result {
                    Ok(done) => {
                        cpu[i].0 += after.0 - before.0;
                        cpu[i].1 += after.1 - before.1;
                        calls[i] += done;
                    }
                    Err(e) => drop_peer(*via, &mut alive[i], e),
                }
            }
        }
        for i in 0..n {
            if alive[i] {
                let f = if pipelined { figure[i] } else { Stats::of(&round_samples[i]).median };
                out[i].round_figures.push(f);
            }
        }
        let mut line = Vec::new();
        for i in 1..n {
            if alive[i] {
                let ratio = figure[i] / figure[0];
                out[i].ratios.push(ratio);
                line.push(format!("{}/direct {ratio:.3}x", out[i].via.key()));
            }
        }
        eprintln!("bench:   round {}: {}", round + 1, line.join(", "));
    }
    for i in 0..n {
        if calls[i] > 0 {
            out[i].relay_cpu_us = cpu[i].0 / calls[i] as f64;
            out[i].server_cpu_us = cpu[i].1 / calls[i] as f64;
        }
    }
    out.retain(|r| !r.samples.is_empty() && (r.via == Via::Direct || !r.ratios.is_empty()));
    out
}

/// A connection through `via`, warmed up with `seq_warmup` sequential calls.
fn warm(cfg: &Config, via: Via, scratch: &Path) -> Result<Peer, String> {
    let mut p = peer(cfg, via, &[], scratch)?;
    p.calls(Tool::Echo, cfg.seq_warmup)?;
    Ok(p)
}

/// Figures 1 and 2; the direct connection is handed back for figure 3.
pub(super) fn measure(cfg: &Config, scratch: &Path, skipped: &mut Skipped) -> (Rounds, Peer) {
    let mut peers: Vec<(Via, Peer)> = Vec::new();
    for via in [Via::Direct, Via::Proxy, Via::TsRelay, Via::Drill, Via::Floor, Via::ParseFloor, Via::ProxyNullRecord] {
        if skipped.contains_key(&via) {
            continue;
        }
        match warm(cfg, via, scratch) {
            Ok(p) => peers.push((via, p)),
            Err(e) if via.optional() => {
                eprintln!("bench: {} could not be run: {e}", via.short());
                skipped.insert(via, format!("could not be run: {e}"));
            }
            Err(e) => panic!("{e}"),
        }
    }
    eprintln!(
        "bench: 1. sequential tools/call echo, {} rounds x {} calls per connection (blocks of {}, after {} warm-up)",
        cfg.seq_rounds, cfg.seq_calls, cfg.seq_block, cfg.seq_warmup
    );
    let mut seq = relay_rounds(cfg, &mut peers, false, skipped);
    peers.retain(|(via, _)| !skipped.contains_key(via));
    eprintln!("bench: 2. pipelined tools/call echo, {} rounds x {} requests", cfg.pipe_rounds, cfg.pipe_count);
    let pipe = relay_rounds(cfg, &mut peers, true, skipped);
    let mut direct = peers.remove(0).1;
    drop(peers);
    // The spinning relay keeps a core busy even between calls, which would disturb every other connection: it
    // runs after the others, beside direct only, for figure 1.
    eprintln!("bench: 1 (reference). sequential tools/call echo, spinning relay beside direct");
    match warm(cfg, Via::Spin, scratch) {
        Ok(spin) => {
            let mut pair = [(Via::Direct, direct), (Via::Spin, spin)];
            let spun = relay_rounds(cfg, &mut pair, false, skipped);
            seq.extend(spun.into_iter().filter(|p| p.via == Via::Spin));
            let [(_, d), _] = pair;
            direct = d;
        }
        Err(e) => {
            eprintln!("bench: {} could not be run: {e}", Via::Spin.short());
            skipped.insert(Via::Spin, format!("could not be run: {e}"));
        }
    }
    (Rounds { seq, pipe }, direct)
}

fn of(list: &[PerVia], via: Via) -> Option<&PerVia> {
    list.iter().find(|r| r.via == via)
}

impl Rounds {
    fn proxy_ratios(list: &[PerVia]) -> Stats {
        Stats::of(&of(list, Via::Proxy).expect("proxy measured").ratios)
    }
    fn seq_met(&self) -> bool {
        Self::proxy_ratios(&self.seq).median <= 1.10
    }
    fn pipe_met(&self) -> bool {
        Self::proxy_ratios(&self.pipe).median >= 0.9
    }

    /// Per round, what the peers are compared on: the median round trip (µs, `pipelined == false`) or req/s.
    pub(super) fn round_figures(&self, via: Via, pipelined: bool) -> Vec<f64> {
        let list = if pipelined { &self.pipe } else { &self.seq };
        of(list, via).map_or(Vec::new(), |r| r.round_figures.clone())
    }

    /// Rows 1 and 2 of the main table.
    pub(super) fn print_rows(&self, cfg: &Config, skipped: &Skipped) {
        let seq_cell = |via: Via| match of(&self.seq, via) {
            Some(r) => {
                let s = Stats::of(&r.samples);
                format!("{} µs median, {} µs p99 per call", fmt(s.median), fmt(s.p99))
            }
            None => "-".to_owned(),
        };
        let rps_cell = |via: Via| match of(&self.pipe, via) {
            Some(r) => {
                let s = Stats::of(&r.samples);
                format!("{} req/s median ({})", fmt(s.median), s.spread(""))
            }
            None => "-".to_owned(),
        };
        let peers_cell = |list: &[PerVia]| {
            let cells: Vec<String> = [Via::TsRelay, Via::Drill]
                .iter()
                .map(|&via| match of(list, via) {
                    Some(r) => format!("{}: {}", via.short(), Stats::of(&r.ratios).spread("x")),
                    None => {
                        format!("{}: - ({})", via.short(), skipped.get(&via).map_or("not measured", String::as_str))
                    }
                })
                .collect();
            cells.join("; ")
        };
        row(&[
            "1".to_owned(),
            format!(
                "sequential `tools/call` `echo`, {} rounds x {} calls each, no rules",
                cfg.seq_rounds, cfg.seq_calls
            ),
            seq_cell(Via::Direct),
            seq_cell(Via::Proxy),
            format!("proxy/direct total time: {}", Self::proxy_ratios(&self.seq).spread("x")),
            peers_cell(&self.seq),
            "<= 1.10x (median)".to_owned(),
            met(self.seq_met()).to_owned(),
        ]);
        row(&[
            "2".to_owned(),
            format!(
                "pipelined: {} `echo` calls written without waiting, all replies read; {} rounds",
                cfg.pipe_count, cfg.pipe_rounds
            ),
            rps_cell(Via::Direct),
            rps_cell(Via::Proxy),
            format!("proxy/direct req/s: {}", Self::proxy_ratios(&self.pipe).spread("x")),
            peers_cell(&self.pipe),
            ">= 0.9x (median)".to_owned(),
            met(self.pipe_met()).to_owned(),
        ]);
    }

    /// Every connection of figures 1 and 2.
    pub(super) fn print_connections(&self) {
        println!(
            "\nEvery connection of figures 1 and 2 (CPU per call from /proc, relay process and Node server apart):\n"
        );
        println!(
            "| connection | 1: µs per call, median / p99 | 1: / direct (min / median / max) | 1: CPU µs per call, relay + server | 2: req/s median | 2: / direct (min / median / max) | 2: CPU µs per request, relay + server |"
        );
        println!("|---|---|---|---|---|---|---|");
        let ratio = |list: &[f64]| if list.is_empty() { "1".to_owned() } else { Stats::of(list).spread("x") };
        for r in &self.seq {
            let s = Stats::of(&r.samples);
            let (rps, pipe_ratio, pipe_cpu) = match of(&self.pipe, r.via) {
                Some(p) => (
                    fmt(Stats::of(&p.samples).median),
                    ratio(&p.ratios),
                    format!("{} + {}", fmt(p.relay_cpu_us), fmt(p.server_cpu_us)),
                ),
                None => ("-".to_owned(), "-".to_owned(), "-".to_owned()),
            };
            println!(
                "| {} | {} / {} | {} | {} + {} | {rps} | {pipe_ratio} | {pipe_cpu} |",
                r.via.name(),
                fmt(s.median),
                fmt(s.p99),
                ratio(&r.ratios),
                fmt(r.relay_cpu_us),
                fmt(r.server_cpu_us)
            );
        }
    }

    /// The report's "sequential" and "pipelined".
    pub(super) fn json(&self, cfg: &Config) -> (Value, Value) {
        let by_key = |list: &[PerVia], figure2: bool| -> Value {
            list.iter().map(|r| (r.via.key().to_owned(), r.json(figure2))).collect::<serde_json::Map<_, _>>().into()
        };
        (
            json!({"rounds": cfg.seq_rounds, "calls_per_round": cfg.seq_calls, "block": cfg.seq_block,
                "warmup": cfg.seq_warmup, "connections": by_key(&self.seq, false),
                "goal": "proxy/direct total time <= 1.10 (median round)", "met": self.seq_met()}),
            json!({"rounds": cfg.pipe_rounds, "requests": cfg.pipe_count, "connections": by_key(&self.pipe, true),
                "goal": "proxy/direct req/s >= 0.9 (median round)", "met": self.pipe_met()}),
        )
    }
}
