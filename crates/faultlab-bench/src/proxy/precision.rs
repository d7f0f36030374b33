//! Figure 3: how precisely a latency fault delays a reply, for one rule in mode `after` (the figure) and in mode
//! `before` (informational), against direct calls.
//!
//! What the fault added to a call is its round trip at the client less the time the upstream took to answer it
//! (from the proxy's trajectory: the request forwarded, the reply arriving), less the proxy's own legs (the same
//! difference for unfaulted calls through the same proxy, median). The upstream's time is taken out call by call
//! because Node answers far slower after an idle pause, which every faulted call follows (each waits out the
//! previous call's delay): that is the server's doing, not the fault's, and the direct calls made after the same
//! pause show it. The error at the client against back-to-back direct calls is kept beside it.

use super::{Config, Via, connect};
use crate::stats::{Stats, fmt, met, sfmt};
use crate::stdio::{Peer, Tool};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// One rule's figures, per round.
#[derive(Default)]
struct Mode {
    mode: &'static str,
    /// Signed error (added - delay), ms, all rounds pooled.
    error_ms: Vec<f64>,
    /// Per round: p50 and p99 of |error|, ms.
    round_abs_p50: Vec<f64>,
    round_abs_p99: Vec<f64>,
    /// Signed error at the client (proxied - median direct back-to-back - delay), ms, all rounds pooled.
    client_error_ms: Vec<f64>,
    /// Per round: median direct round trip, calls back to back (µs).
    direct_median_us: Vec<f64>,
    /// Direct round trips each made right after a faulted call, so after the direct server idled for the fault's
    /// delay (µs), all rounds pooled.
    direct_after_pause_us: Vec<f64>,
    /// Per round: the proxy's legs, median (µs).
    legs_median_us: Vec<f64>,
}

pub(super) struct Precision {
    after: Mode,
    before: Mode,
}

/// How long the proxy may take to write the events of frames it relayed unchanged: it writes them in batches, at
/// most 5 ms late (`faultlab_engine::trajectory::FLUSH_WITHIN`); 1 s leaves room for a loaded machine.
const RECORDED_WITHIN: Duration = Duration::from_secs(1);

/// From a proxy's trajectory: per request id in `ids`, the time (µs) between the request going to the upstream
/// and the upstream's reply arriving. The proxy is still running, so the last calls' events may not be written
/// yet: the file is read again each time the proxy writes to it (inotify), for at most [`RECORDED_WITHIN`].
fn upstream_us(record: &Path, ids: std::ops::Range<u64>) -> Result<Vec<f64>, String> {
    use rustix::fs::inotify;
    let watch_error = |e| format!("watching {}: {e}", record.display());
    // Watched before the first read, so a write between that read and the wait still wakes the wait.
    let writes = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).map_err(watch_error)?;
    inotify::add_watch(&writes, record, inotify::WatchFlags::MODIFY).map_err(watch_error)?;
    let deadline = Instant::now() + RECORDED_WITHIN;
    loop {
        let found = upstream_us_now(record, ids.clone());
        let left = deadline.saturating_duration_since(Instant::now());
        if found.is_ok() || left.is_zero() || !crate::procs::readable_within(&writes, left) {
            return found;
        }
        // Drained, so the next wait is for a write after this read.
        let mut events = [0u8; 4096];
        while rustix::io::read(&writes, &mut events).is_ok_and(|n| n > 0) {}
    }
}

fn upstream_us_now(record: &Path, ids: std::ops::Range<u64>) -> Result<Vec<f64>, String> {
    let text = std::fs::read_to_string(record).map_err(|e| format!("reading {}: {e}", record.display()))?;
    let mut sent = BTreeMap::new();
    let mut answered = BTreeMap::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else { continue };
        if event["event"] != "frame" {
            continue;
        }
        let (Some(id), Some(ts)) = (event["id"].as_u64(), event["tsMs"].as_f64()) else { continue };
        match event["direction"].as_str() {
            Some("client_to_server") => sent.insert(id, ts),
            Some("server_to_client") => answered.insert(id, ts),
            _ => None,
        };
    }
    ids.map(|id| match (sent.get(&id), answered.get(&id)) {
        (Some(s), Some(a)) => Ok((a - s) * 1e3),
        _ => Err(format!("{}: no forwarded request and reply for id {id}", record.display())),
    })
    .collect()
}

/// Every failure here ends the bench.
fn ok<T>(r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn mode(cfg: &Config, direct: &mut Peer, mode: &'static str, scratch: &Path) -> Mode {
    let rule =
        format!("{{match: {{tool: echo}}, mode: {mode}, fault: {{type: latency, delay_ms: {}}}}}", cfg.lat_delay_ms);
    let (mut proxy, record) = ok(connect(cfg, Via::Proxy, &[rule], scratch));
    let record = record.expect("the proxy records");
    // The rule matches `echo` only: warm the path (and Node) with `get-sum`.
    ok(proxy.calls(Tool::Sum, cfg.seq_warmup));
    let delay_ms = cfg.lat_delay_ms as f64;
    let mut out = Mode { mode, ..Mode::default() };
    for _ in 0..cfg.lat_rounds {
        let base = Stats::of(&ok(direct.calls(Tool::Echo, cfg.lat_calls))).median;
        let first = proxy.next_id;
        let rtt = ok(proxy.calls(Tool::Sum, cfg.lat_calls));
        let up = ok(upstream_us(&record, first..proxy.next_id));
        let legs: Vec<f64> = rtt.iter().zip(up).map(|(rtt, up)| rtt - up).collect();
        let legs = Stats::of(&legs).median;
        // Each faulted call leaves the direct server idle for the fault's delay, so the direct call right after it
        // measures Node after the same pause the next faulted call follows, with no pause of the bench's own.
        let first = proxy.next_id;
        let mut rtt = Vec::with_capacity(cfg.lat_calls);
        for _ in 0..cfg.lat_calls {
            rtt.push(ok(proxy.call(Tool::Echo)));
            out.direct_after_pause_us.push(ok(direct.call(Tool::Echo)));
        }
        let up = ok(upstream_us(&record, first..proxy.next_id));
        let errors: Vec<f64> = rtt.iter().zip(up).map(|(rtt, up)| (rtt - up - legs) / 1e3 - delay_ms).collect();
        let abs = Stats::of_abs(&errors);
        out.round_abs_p50.push(abs.median);
        out.round_abs_p99.push(abs.p99);
        out.client_error_ms.extend(rtt.iter().map(|rtt| (rtt - base) / 1e3 - delay_ms));
        out.direct_median_us.push(base);
        out.legs_median_us.push(legs);
        out.error_ms.extend(errors);
    }
    out
}

pub(super) fn measure(cfg: &Config, direct: &mut Peer, scratch: &Path) -> Precision {
    Precision { after: mode(cfg, direct, "after", scratch), before: mode(cfg, direct, "before", scratch) }
}

impl Mode {
    fn json(&self) -> Value {
        json!({"mode": self.mode, "error_ms": Stats::of(&self.error_ms).json(),
            "abs_error_ms": Stats::of_abs(&self.error_ms).json(),
            "round_abs_error_p50_ms": self.round_abs_p50, "round_abs_error_p99_ms": self.round_abs_p99,
            "client_error_ms": Stats::of(&self.client_error_ms).json(),
            "client_abs_error_ms": Stats::of_abs(&self.client_error_ms).json(),
            "direct_median_us": self.direct_median_us,
            "direct_after_pause_us": Stats::of(&self.direct_after_pause_us).json(),
            "legs_median_us": self.legs_median_us})
    }
}

impl Precision {
    fn met(&self) -> bool {
        Stats::of_abs(&self.after.error_ms).p99 <= 1.0
    }

    /// Rows 3 and 3b of the main table.
    pub(super) fn print_rows(&self, cfg: &Config) {
        let (after, before) = (&self.after, &self.before);
        let (abs_after, signed_after) = (Stats::of_abs(&after.error_ms), Stats::of(&after.error_ms));
        let (abs_before, signed_before) = (Stats::of_abs(&before.error_ms), Stats::of(&before.error_ms));
        let (client_after, client_before) =
            (Stats::of_abs(&after.client_error_ms), Stats::of_abs(&before.client_error_ms));
        let pause = Stats::of(&after.direct_after_pause_us);
        println!(
            "| 3 | latency precision: `{{match: {{tool: echo}}, fault: {{type: latency, delay_ms: {}}}}}` (mode after), {} rounds x {} calls; error = round trip - the upstream's time for that call (trajectory) - the proxy's legs - {} ms | direct back to back: median {} µs; direct after a {} ms pause: p50 {} µs, p99 {} µs | error p50 {} ms, p99 {} ms; \\|error\\| p50 {} ms, p99 {} ms (at the client against back-to-back direct: \\|error\\| p50 {} ms, p99 {} ms) | per-round \\|error\\| p99: {} | - | \\|error\\| p99 <= 1 ms | {} |",
            cfg.lat_delay_ms,
            cfg.lat_rounds,
            cfg.lat_calls,
            cfg.lat_delay_ms,
            fmt(Stats::of(&after.direct_median_us).median),
            cfg.lat_delay_ms,
            fmt(pause.median),
            fmt(pause.p99),
            sfmt(signed_after.median),
            sfmt(signed_after.p99),
            fmt(abs_after.median),
            fmt(abs_after.p99),
            fmt(client_after.median),
            fmt(client_after.p99),
            Stats::of(&after.round_abs_p99).spread(" ms"),
            met(self.met())
        );
        println!(
            "| 3b | the same with `mode: before` (the request is held, not the reply), informational | proxy legs median {} µs | error p50 {} ms, p99 {} ms; \\|error\\| p50 {} ms, p99 {} ms (at the client: \\|error\\| p50 {} ms, p99 {} ms) | per-round \\|error\\| p99: {} | - | - | - |",
            fmt(Stats::of(&before.legs_median_us).median),
            sfmt(signed_before.median),
            sfmt(signed_before.p99),
            fmt(abs_before.median),
            fmt(abs_before.p99),
            fmt(client_before.median),
            fmt(client_before.p99),
            Stats::of(&before.round_abs_p99).spread(" ms"),
        );
    }

    pub(super) fn json(&self, cfg: &Config) -> Value {
        json!({"delay_ms": cfg.lat_delay_ms, "rounds": cfg.lat_rounds, "calls_per_round": cfg.lat_calls,
            "after": self.after.json(), "before": self.before.json(),
            "goal": "|observed - delay| p99 <= 1 ms (mode after, all rounds pooled)", "met": self.met()})
    }
}
