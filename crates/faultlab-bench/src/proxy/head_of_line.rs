//! Figure 4: head-of-line blocking. A latency rule holds every `get-sum` reply `hol_delay_ms` while a stream of
//! `get-sum` calls is in flight; the latency of concurrent `echo` calls through that proxy against a proxy without
//! rules under the same stream (and direct, for sanity); connections alternate within each round.

use super::{Config, Via, peer};
use crate::procs::{STALL, kill_group};
use crate::stats::{Stats, fmt, met};
use crate::stdio::{Peer, Tool, call_line, response_id};
use faultlab_wire::sync::lock;
use serde_json::{Value, json};
use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Instant;

/// JSON-RPC ids of the background `get-sum` stream start here; the end-of-stream marker is above them.
const A_IDS: u64 = 1 << 40;
const SENTINEL_ID: u64 = 1 << 41;

/// `echo` latency (µs) under the `get-sum` stream, with the rule and without, per round.
#[derive(Default)]
pub(super) struct HeadOfLine {
    with_fault: Vec<Stats>,
    without: Vec<Stats>,
    direct: Vec<Stats>,
    a_ms_with_fault: Vec<f64>,
    max_in_flight: u64,
}

/// One round on one connection: a `get-sum` every `hol_a_gap` starting `hol_a_lead` before the first of
/// `hol_b_calls` sequential `echo` calls (`hol_b_gap` apart); all `get-sum` replies are awaited at the end. The
/// `get-sum` ids start at `*next_a`, which is moved past them. Returns the `echo` latencies (µs), the `get-sum`
/// latencies (ms) and the most `get-sum` calls seen in flight at once.
fn round(cfg: &Config, peer: &mut Peer, next_a: &mut u64) -> Result<(Vec<f64>, Vec<f64>, u64), String> {
    let b_first = peer.next_id;
    peer.next_id += cfg.hol_b_calls as u64;
    let a_first = *next_a;
    let (label, pgid) = (peer.label.clone(), peer.proc.pgid);
    let stdin = Mutex::new(peer.stdin.as_mut().expect("stdin open"));
    let (stdout, line, watch) = (&mut peer.stdout, &mut peer.line, &peer.watch);
    let a_sent_at: Mutex<Vec<Instant>> = Mutex::new(Vec::new());
    let (stop, a_received, max_in_flight) = (AtomicBool::new(false), AtomicU64::new(0), AtomicU64::new(0));
    let (b_tx, b_rx) = mpsc::channel::<(u64, Instant)>();
    watch.arm();
    let result = std::thread::scope(|s| -> Result<(Vec<f64>, Vec<f64>), String> {
        // Reader: every reply; `echo` replies go to the caller with their arrival time.
        let reader = s.spawn(|| -> Result<Vec<f64>, String> {
            let mut a_ms = Vec::new();
            let mut sentinel = false;
            loop {
                line.clear();
                match stdout.read_line(line) {
                    Ok(0) => return Err("closed stdout (or stalled)".to_owned()),
                    Err(e) => return Err(format!("reading stdout: {e}")),
                    Ok(_) => {}
                }
                let now = Instant::now();
                watch.arm();
                match response_id(line)? {
                    Some(SENTINEL_ID) => sentinel = true,
                    Some(id) if id >= A_IDS => {
                        let sent = lock(&a_sent_at)[(id - a_first) as usize];
                        a_ms.push(now.duration_since(sent).as_secs_f64() * 1e3);
                        a_received.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(id) => {
                        let _ = b_tx.send((id, now));
                    }
                    None => {}
                }
                let a_sent = lock(&a_sent_at).len();
                if sentinel && a_ms.len() == a_sent {
                    return Ok(a_ms);
                }
            }
        });
        // The `get-sum` stream, on a fixed schedule.
        let streamer = s.spawn(|| -> Result<(), String> {
            let start = Instant::now();
            let mut k = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let id = a_first + k as u64;
                // The send time is stored before the write (the reply cannot come first) and the lock is
                // not held across the write (the reader needs it to drain replies).
                let sent = {
                    let mut sent_at = lock(&a_sent_at);
                    sent_at.push(Instant::now());
                    sent_at.len() as u64
                };
                let line = call_line(id, Tool::Sum);
                lock(&stdin).write_all(line.as_bytes()).map_err(|e| format!("stream write: {e}"))?;
                max_in_flight.fetch_max(sent - a_received.load(Ordering::Relaxed), Ordering::Relaxed);
                k += 1;
                let next = start + cfg.hol_a_gap * k;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            Ok(())
        });
        // The measured `echo` calls.
        std::thread::sleep(cfg.hol_a_lead);
        let mut b_us = Vec::with_capacity(cfg.hol_b_calls);
        let mut failure = None;
        for j in 0..cfg.hol_b_calls as u64 {
            let id = b_first + j;
            let start = Instant::now();
            if let Err(e) = lock(&stdin).write_all(call_line(id, Tool::Echo).as_bytes()) {
                failure = Some(format!("echo write: {e}"));
                break;
            }
            match b_rx.recv_timeout(STALL) {
                Ok((got, at)) if got == id => b_us.push(at.duration_since(start).as_secs_f64() * 1e6),
                Ok((got, _)) => {
                    failure = Some(format!("echo reply {got} while waiting for {id}"));
                    break;
                }
                Err(_) => {
                    failure = Some(format!("no echo reply to {id} within {STALL:?}"));
                    break;
                }
            }
            std::thread::sleep(cfg.hol_b_gap);
        }
        stop.store(true, Ordering::Relaxed);
        let streamed = streamer.join().expect("stream thread");
        // The marker goes after the last `get-sum`: once it and every `get-sum` reply are back, the reader ends.
        let marker = format!("{{\"jsonrpc\":\"2.0\",\"id\":{SENTINEL_ID},\"method\":\"ping\"}}\n");
        let marked = lock(&stdin).write_all(marker.as_bytes()).map_err(|e| format!("marker write: {e}"));
        if failure.is_some() || streamed.is_err() || marked.is_err() {
            // Unblock the reader before the scope joins it.
            kill_group(pgid);
        }
        let a_ms = reader.join().expect("reader thread");
        if let Some(f) = failure {
            return Err(f);
        }
        streamed?;
        marked?;
        Ok((b_us, a_ms?))
    });
    watch.idle();
    *next_a = a_first + lock(&a_sent_at).len() as u64;
    let (b_us, a_ms) = result.map_err(|e| format!("{label}: {e}"))?;
    Ok((b_us, a_ms, max_in_flight.load(Ordering::Relaxed)))
}

pub(super) fn measure(cfg: &Config, scratch: &Path) -> HeadOfLine {
    let rule = format!("{{match: {{tool: get-sum}}, fault: {{type: latency, delay_ms: {}}}}}", cfg.hol_delay_ms);
    let mut peers = [
        peer(cfg, Via::Proxy, &[rule], scratch),
        peer(cfg, Via::Proxy, &[], scratch),
        peer(cfg, Via::Direct, &[], scratch),
    ]
    .map(|p| p.unwrap_or_else(|e| panic!("{e}")));
    for p in &mut peers {
        p.calls(Tool::Echo, cfg.seq_warmup).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut next_a = [A_IDS; 3];
    let mut out = HeadOfLine::default();
    for r in 0..cfg.hol_rounds {
        for k in 0..3 {
            let i = (r + k) % 3;
            let (b_us, a_ms, in_flight) = round(cfg, &mut peers[i], &mut next_a[i]).unwrap_or_else(|e| panic!("{e}"));
            let b = Stats::of(&b_us);
            match i {
                0 => {
                    out.with_fault.push(b);
                    out.a_ms_with_fault.extend(a_ms);
                    out.max_in_flight = out.max_in_flight.max(in_flight);
                }
                1 => out.without.push(b),
                _ => out.direct.push(b),
            }
        }
    }
    out
}

/// Over rounds, `f` of each round's stats.
fn pooled(list: &[Stats], f: fn(&Stats) -> f64) -> Stats {
    Stats::of(&list.iter().map(f).collect::<Vec<_>>())
}

impl HeadOfLine {
    /// Per round: with - without (ms) and with / without, at `f` (p50 or p99): (added, ratio).
    fn pair(&self, f: fn(&Stats) -> f64) -> (Stats, Stats) {
        let (added, ratio): (Vec<f64>, Vec<f64>) =
            self.with_fault.iter().zip(&self.without).map(|(w, o)| ((f(w) - f(o)) / 1e3, f(w) / f(o))).unzip();
        (Stats::of(&added), Stats::of(&ratio))
    }

    fn met(&self) -> bool {
        self.pair(|s| s.median).0.median <= 1.0 && self.pair(|s| s.p99).0.median <= 1.0
    }

    /// Row 4 of the main table.
    pub(super) fn print_row(&self, cfg: &Config) {
        let ((added_p50, ratio_p50), (added_p99, ratio_p99)) = (self.pair(|s| s.median), self.pair(|s| s.p99));
        println!(
            "| 4 | `echo` latency while `get-sum` calls are held {} ms by a latency rule (one sent every {:?}, up to {} in flight), {} rounds x {} calls; vs a proxy without rules under the same stream | (proxy without rules) p50 {} µs, p99 {} µs | (rule active) p50 {} µs, p99 {} µs | added p50: {}; added p99: {}; ratio p50: {}; ratio p99: {} | - | added <= 1 ms at p50 and p99 (median round) | {} |",
            cfg.hol_delay_ms,
            cfg.hol_a_gap,
            self.max_in_flight,
            cfg.hol_rounds,
            cfg.hol_b_calls,
            fmt(pooled(&self.without, |s| s.median).median),
            fmt(pooled(&self.without, |s| s.p99).median),
            fmt(pooled(&self.with_fault, |s| s.median).median),
            fmt(pooled(&self.with_fault, |s| s.p99).median),
            added_p50.spread(" ms"),
            added_p99.spread(" ms"),
            ratio_p50.spread("x"),
            ratio_p99.spread("x"),
            met(self.met())
        );
    }

    pub(super) fn print_sanity(&self) {
        let a_ms = Stats::of(&self.a_ms_with_fault);
        println!(
            "\nFigure 4 sanity: the held `get-sum` replies took {} ms median ({} - {} ms); `echo` direct under the same stream: p50 {} µs, p99 {} µs.",
            fmt(a_ms.median),
            fmt(a_ms.min),
            fmt(a_ms.max),
            fmt(pooled(&self.direct, |s| s.median).median),
            fmt(pooled(&self.direct, |s| s.p99).median)
        );
    }

    pub(super) fn json(&self, cfg: &Config) -> Value {
        let ((added_p50, ratio_p50), (added_p99, ratio_p99)) = (self.pair(|s| s.median), self.pair(|s| s.p99));
        json!({"delay_ms": cfg.hol_delay_ms, "stream_gap_ms": cfg.hol_a_gap.as_secs_f64() * 1e3,
            "max_in_flight": self.max_in_flight, "rounds": cfg.hol_rounds, "echo_calls_per_round": cfg.hol_b_calls,
            "echo_us_with_fault": self.with_fault.iter().map(Stats::json).collect::<Vec<_>>(),
            "echo_us_without_fault": self.without.iter().map(Stats::json).collect::<Vec<_>>(),
            "echo_us_direct": self.direct.iter().map(Stats::json).collect::<Vec<_>>(),
            "held_get_sum_ms": Stats::of(&self.a_ms_with_fault).json(),
            "added_p50_ms": added_p50.json(), "added_p99_ms": added_p99.json(),
            "ratio_p50": ratio_p50.json(), "ratio_p99": ratio_p99.json(),
            "goal": "added <= 1 ms at p50 and p99 (median round)", "met": self.met()})
    }
}
