//! What `faultlab proxy` costs in front of the real Node reference server `@modelcontextprotocol/server-everything`,
//! measured against the same server direct, in one run. Every figure is a ratio taken within the run, repeated
//! over rounds (min / median / max); one module per figure:
//!
//! 1. and 2. [`rounds`]: sequential `tools/call` `echo` round trips, proxy (no rules) vs direct, as the ratio of
//!    total times per round; pipelined throughput (bursts of N `echo` calls written without waiting, all replies
//!    read), req/s proxy / direct per round. Peer relays run the same workload for scale: a relay on the official
//!    TypeScript SDK (`ts-relay.mjs` in this crate: the SDK's stdio transports forwarding every message unchanged)
//!    and, when it is installed, the Python relay `mcp-drill wrap` (PyPI); so do three reference connections,
//!    reported apart: a floor relay, a parsing floor relay and a spinning relay ([`relays`]: this bench re-run as
//!    `--relay-floor CMD`, `--relay-parse CMD` or `--relay-spin CMD`; the spinning one for figure 1 only, after the others beside direct alone, as its busy
//!    core would disturb them) and the proxy with `--record /dev/null` (what writing the trajectory costs). All
//!    alternate in blocks, so drift on a shared machine hits all alike; each relay's and server's CPU time per
//!    call comes from /proc;
//! 3. [`precision`]: a `{match: {tool: echo}, fault: {type: latency, delay_ms: 50}}` rule; observed delay =
//!    proxied round trip - the upstream's time for that call (from the proxy's trajectory) - the proxy's own legs
//!    (median of unfaulted calls); |observed - 50 ms| at p50 / p99, with the error at the client and Node's own
//!    time after a pause beside it; mode `before` reported beside mode `after`;
//! 4. [`head_of_line`]: a 500 ms latency rule on `get-sum` with a stream of `get-sum` calls in flight; the
//!    latency of concurrent `echo` calls with that rule vs with a proxy without rules under the same stream;
//! 5. [`http`]: the same `echo` calls over Streamable HTTP: `faultlab proxy --listen` in front of the Node server
//!    started with `streamableHttp`, against it direct, in 2025-11-25 sessions (median latency with one request
//!    in flight and requests per second with 16, proxy / direct per round, with goals); and AgentBreak
//!    ([`agentbreak`]; PyPI `agentbreak serve`, no scenarios), a peer that relays MCP over HTTP only, beside the
//!    proxy in the 2024-11-05 sessions AgentBreak speaks upstream.
//!
//! Each peer is also compared with the proxy directly ([`peers`]: "faultlab proxy / peer", per round: median round
//! trip, and requests per second), informational.
//!
//! Inputs: those of [`crate::inputs`], and
//!   --drill PATH      / FAULTLAB_BENCH_DRILL       default: .cache/bench-proxy/drill-venv/bin/mcp-drill if present
//!   FAULTLAB_BENCH_DRILL_SKIP=REASON               why mcp-drill is not there (reported instead of its figures)
//!   --ts-sdk DIR      / FAULTLAB_BENCH_TS_SDK      the @modelcontextprotocol/sdk package the TS relay loads;
//!                                                  default: the one installed beside server-everything
//!   FAULTLAB_BENCH_TS_SKIP=REASON                  why the TS SDK relay is left out
//!   --agentbreak PATH / FAULTLAB_BENCH_AGENTBREAK  its console script, in a virtualenv with `python` beside it;
//!                                                  default: .cache/bench-proxy/agentbreak-venv/bin/agentbreak if
//!                                                  present (never in quick mode unless given)
//!   FAULTLAB_BENCH_AGENTBREAK_SKIP=REASON          why AgentBreak is not there
//!
//! Prints a Markdown table on stdout and writes the same figures as JSON (default `bench/proxy.json` in the target
//! directory); the report says how many processes were left after the run (0).

mod agentbreak;
mod head_of_line;
mod http;
mod peers;
mod precision;
mod relays;
mod rounds;

use crate::inputs::{Inputs, Machine, Tools, write_report};
use crate::procs::{child_of, kill_groups_on_panic, leftover_processes, loadavg, package_version, version_of};
use crate::stdio::Peer;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Newest era the Node reference server (SDK 1.x) accepts.
const NODE_ERA: &str = "2025-11-25";

struct Config {
    quick: bool,
    tools: Tools,
    drill: Result<PathBuf, String>,
    /// The TS SDK relay: its script, and the SDK package folder it loads (or why it is left out).
    ts_relay: PathBuf,
    ts_sdk: Result<PathBuf, String>,
    agentbreak: Result<PathBuf, String>,
    json: PathBuf,
    /// Figure 1: calls per connection and round, in blocks of `seq_block`, after `seq_warmup` calls.
    seq_calls: usize,
    seq_block: usize,
    seq_warmup: usize,
    seq_rounds: usize,
    /// Figure 2.
    pipe_count: usize,
    pipe_rounds: usize,
    /// Figure 3.
    lat_delay_ms: u64,
    lat_calls: usize,
    lat_rounds: usize,
    /// Figure 4: the fault on `get-sum`, one `get-sum` sent every `hol_a_gap` from `hol_a_lead` before the first
    /// `echo`, `hol_b_calls` `echo` calls `hol_b_gap` apart.
    hol_delay_ms: u64,
    hol_a_gap: Duration,
    hol_a_lead: Duration,
    hol_b_calls: usize,
    hol_b_gap: Duration,
    hol_rounds: usize,
    /// Figure 5: per round and connection, `http_window` with one request in flight, then `http_window` with
    /// `http_in_flight`; after `http_warmup` per connection.
    http_rounds: usize,
    http_window: Duration,
    http_warmup: Duration,
    http_in_flight: usize,
}

/// An optional peer's path: given (it must exist), else skipped for the reason in `skip_var`, else `default` if it
/// exists (`Err`: why there is no default).
fn optional(
    i: &Inputs,
    (flag, var, skip_var): (&str, &str, &str),
    default: Result<PathBuf, String>,
) -> Result<PathBuf, String> {
    match (i.given(flag, var), std::env::var(skip_var)) {
        (Some(path), _) if path.exists() => Ok(path),
        (Some(path), _) => Err(format!("{} does not exist", path.display())),
        (None, Ok(reason)) if !reason.is_empty() => Err(reason),
        (None, _) => match default? {
            path if path.exists() => Ok(path),
            path => Err(format!("not installed at {} (scripts/bench-proxy.sh installs it)", path.display())),
        },
    }
}

impl Config {
    fn load() -> Config {
        let i = Inputs::load();
        let tools = i.tools("scripts/bench-proxy.sh");
        let cache = i.root.join(".cache/bench-proxy");
        let drill_args = ("--drill", "FAULTLAB_BENCH_DRILL", "FAULTLAB_BENCH_DRILL_SKIP");
        let drill = optional(&i, drill_args, Ok(cache.join("drill-venv/bin/mcp-drill")));
        // By default the TS relay loads the SDK npm installed beside server-everything (its dependency, resolved
        // with the same pinned date): the very SDK build the server runs on, and nothing new to install.
        let beside = tools.everything.ancestors().nth(3).map(|scope| scope.join("sdk"));
        let beside =
            beside.ok_or_else(|| format!("no @modelcontextprotocol/sdk beside {}", tools.everything.display()));
        let ts_args = ("--ts-sdk", "FAULTLAB_BENCH_TS_SDK", "FAULTLAB_BENCH_TS_SKIP");
        let ts_sdk = optional(&i, ts_args, beside).and_then(|dir| match dir.join("package.json").is_file() {
            true => Ok(dir),
            false => Err(format!("no @modelcontextprotocol/sdk package at {}", dir.display())),
        });
        // The quick run (CI) installs no Python peer and runs none it finds lying around.
        let agentbreak_args = ("--agentbreak", "FAULTLAB_BENCH_AGENTBREAK", "FAULTLAB_BENCH_AGENTBREAK_SKIP");
        let agentbreak_default = match i.quick {
            true => Err("left out of the quick run".to_owned()),
            false => Ok(cache.join("agentbreak-venv/bin/agentbreak")),
        };
        let agentbreak = optional(&i, agentbreak_args, agentbreak_default);
        Config {
            quick: i.quick,
            tools,
            drill,
            ts_relay: Path::new(env!("CARGO_MANIFEST_DIR")).join("ts-relay.mjs"),
            ts_sdk,
            agentbreak,
            json: i.json("proxy"),
            seq_calls: i.q(200, 10_000),
            seq_block: i.q(50, 1_000),
            seq_warmup: i.q(50, 1_000),
            seq_rounds: i.q(2, 5),
            pipe_count: i.q(100, 2_000),
            pipe_rounds: i.q(2, 30),
            lat_delay_ms: 50,
            lat_calls: i.q(5, 200),
            lat_rounds: i.q(1, 3),
            hol_delay_ms: 500,
            hol_a_gap: Duration::from_millis(5),
            hol_a_lead: i.ms(100, 700),
            hol_b_calls: i.q(20, 400),
            hol_b_gap: Duration::from_micros(2_500),
            hol_rounds: i.q(1, 3),
            http_rounds: i.q(1, 5),
            http_window: i.ms(150, 2_000),
            http_warmup: i.ms(100, 500),
            http_in_flight: 16,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
enum Via {
    #[default]
    Direct,
    /// `faultlab proxy --record FILE` (the trajectory kept in a file, as a user would keep it).
    Proxy,
    /// Peers, for scale: a relay on the official TypeScript SDK's stdio transports (`ts-relay.mjs`), and
    /// `mcp-drill wrap`. Either may be missing or fail; it is then left out with the reason, and the bench goes on.
    TsRelay,
    Drill,
    /// Reference points for figures 1 and 2 (informational): the least any relay process costs here (this bench
    /// re-run as `--relay-floor`: two blocking threads copying bytes, no parsing), and the proxy with its
    /// trajectory written to /dev/null (what the trajectory file itself costs).
    Floor,
    /// The floor relay that also parses every line to a `serde_json::Value` before copying it (this bench re-run
    /// as `--relay-parse`): the least a relay that must read frames to fault them costs.
    ParseFloor,
    /// The least a relay process can cost in wake-ups (this bench re-run as `--relay-spin`: one thread that never
    /// sleeps, asking both pipes for bytes in a loop). Informational, figure 1 only, measured after the others
    /// beside direct alone: it keeps a whole core busy.
    Spin,
    ProxyNullRecord,
}

impl Via {
    fn key(self) -> &'static str {
        match self {
            Via::Direct => "direct",
            Via::Proxy => "proxy",
            Via::TsRelay => "ts_sdk_relay",
            Via::Drill => "mcp_drill",
            Via::Floor => "floor_relay",
            Via::ParseFloor => "parse_floor_relay",
            Via::Spin => "spin_relay",
            Via::ProxyNullRecord => "proxy_record_dev_null",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Via::Direct => "direct",
            Via::Proxy => "faultlab proxy --record FILE",
            Via::TsRelay => "TS SDK stdio relay (transports forwarding)",
            Via::Drill => "mcp-drill wrap",
            Via::Floor => "floor relay (2 threads copying bytes)",
            Via::ParseFloor => "parse floor relay (the floor relay parsing each line to a JSON value)",
            Via::Spin => "spinning relay (1 thread polling both pipes, never sleeping)",
            Via::ProxyNullRecord => "faultlab proxy --record /dev/null",
        }
    }
    /// Short name in the tables' peer cells.
    fn short(self) -> &'static str {
        match self {
            Via::TsRelay => "TS SDK relay",
            Via::Drill => "mcp-drill",
            other => other.name(),
        }
    }
    /// A peer: may be absent or fail without ending the bench.
    fn optional(self) -> bool {
        matches!(self, Via::TsRelay | Via::Drill)
    }
}

/// Why each stdio peer has no (or not all) figures: left out, could not start, or failed during the run.
type Skipped = BTreeMap<Via, String>;

/// One stdio connection to the Node server through `via` (the proxy with `faults`), initialized; with the
/// proxy's trajectory file when `via` is the proxy.
fn connect(cfg: &Config, via: Via, faults: &[String], scratch: &Path) -> Result<(Peer, Option<PathBuf>), String> {
    static CONNECTIONS: AtomicUsize = AtomicUsize::new(0);
    let mut record = None;
    let mut cmd = match via {
        Via::Direct => Command::new(&cfg.tools.node),
        Via::Proxy => {
            let mut c = Command::new(&cfg.tools.faultlab);
            // The trajectory goes to a file, as a user of the proxy would keep it (not discarded).
            let path = scratch.join(format!("trajectory-{}.jsonl", CONNECTIONS.fetch_add(1, Ordering::Relaxed)));
            c.arg("proxy").arg("--record").arg(&path);
            record = Some(path);
            for spec in faults {
                c.arg("--fault").arg(spec);
            }
            c.arg("--").arg(&cfg.tools.node);
            c
        }
        Via::TsRelay => {
            // The relay runs on the same Node as the server, and starts it as its child.
            let mut c = Command::new(&cfg.tools.node);
            c.arg(&cfg.ts_relay).arg(cfg.ts_sdk.as_ref().map_err(Clone::clone)?).arg("--").arg(&cfg.tools.node);
            c
        }
        Via::Drill => {
            let mut c = Command::new(cfg.drill.as_ref().map_err(Clone::clone)?);
            c.args(["wrap", "--"]).arg(&cfg.tools.node);
            c
        }
        Via::Floor | Via::ParseFloor | Via::Spin => {
            let mut c = Command::new(std::env::current_exe().map_err(|e| format!("own path: {e}"))?);
            let flag = match via {
                Via::Floor => "--relay-floor",
                Via::ParseFloor => "--relay-parse",
                _ => "--relay-spin",
            };
            c.arg(flag).arg(&cfg.tools.node);
            c
        }
        Via::ProxyNullRecord => {
            let mut c = Command::new(&cfg.tools.faultlab);
            c.args(["proxy", "--record", "/dev/null", "--"]).arg(&cfg.tools.node);
            c
        }
    };
    cmd.arg(&cfg.tools.everything).arg("stdio");
    let label = match via {
        Via::Proxy if !faults.is_empty() => format!("faultlab proxy --fault {}", faults.join(" --fault ")),
        _ => via.name().to_owned(),
    };
    let mut peer = Peer::start(cmd, label)?;
    peer.initialize(NODE_ERA)?;
    if via != Via::Direct {
        // The relay's child is the server (found once it has answered, so it has surely started).
        peer.server_pid =
            child_of(peer.proc.pgid).ok_or_else(|| format!("{}: no server process under it", peer.label))?;
    }
    Ok((peer, record))
}

/// `connect`, when the trajectory file is not needed.
fn peer(cfg: &Config, via: Via, faults: &[String], scratch: &Path) -> Result<Peer, String> {
    connect(cfg, via, faults, scratch).map(|(p, _)| p)
}

/// The versions of everything compared.
fn versions(cfg: &Config) -> serde_json::Value {
    let python = |path: &Path| version_of(&path.with_file_name("python"), &["--version"]);
    let (drill_version, drill_python) = match &cfg.drill {
        Ok(path) => (version_of(path, &["version"]), python(path).trim_start_matches("Python ").to_owned()),
        Err(_) => ("-".to_owned(), "-".to_owned()),
    };
    let (agentbreak_version, agentbreak_python) = match &cfg.agentbreak {
        Ok(path) => (
            // `agentbreak --version` prints "agentbreak 0.4.6".
            version_of(path, &["--version"]).lines().next().unwrap_or("").trim_start_matches("agentbreak ").to_owned(),
            python(path).trim_start_matches("Python ").to_owned(),
        ),
        Err(_) => ("-".to_owned(), "-".to_owned()),
    };
    let mut versions = cfg.tools.versions();
    versions["mcp_drill"] = json!(drill_version);
    versions["mcp_drill_python"] = json!(drill_python);
    versions["modelcontextprotocol_sdk_ts_relay"] =
        json!(cfg.ts_sdk.as_ref().map_or("-".to_owned(), |d| package_version(d)));
    versions["agentbreak"] = json!(agentbreak_version);
    versions["agentbreak_python"] = json!(agentbreak_python);
    versions
}

pub fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--relay-floor") => relays::floor(&args[2..]),
        Some("--relay-parse") => relays::parse(&args[2..]),
        Some("--relay-spin") => relays::spin(&args[2..]),
        _ => {}
    }
    let cfg = Config::load();
    kill_groups_on_panic();
    let scratch = tempfile::Builder::new().prefix("faultlab-bench-proxy").tempdir().expect("scratch directory");
    let Machine { cores, cpu } = Machine::this();
    let versions = versions(&cfg);
    let load_start = loadavg();
    eprintln!(
        "bench: {versions} ({cores} cores, {cpu}; load average {load_start}){}",
        if cfg.quick { ", QUICK mode" } else { "" }
    );
    let mut skipped = Skipped::new();
    for (via, missing) in [(Via::TsRelay, cfg.ts_sdk.as_ref().err()), (Via::Drill, cfg.drill.as_ref().err())] {
        if let Some(reason) = missing {
            eprintln!("bench: {} skipped: {reason}", via.short());
            skipped.insert(via, format!("not run: {reason}"));
        }
    }
    let run_start = Instant::now();

    let (rounds, mut direct) = rounds::measure(&cfg, scratch.path(), &mut skipped);
    eprintln!(
        "bench: 3. latency precision, delay_ms {}, {} rounds x {} calls",
        cfg.lat_delay_ms, cfg.lat_rounds, cfg.lat_calls
    );
    let precision = precision::measure(&cfg, &mut direct, scratch.path());
    drop(direct);
    eprintln!(
        "bench: 4. head-of-line: {} ms on get-sum, one every {:?}; {} rounds x {} echo calls",
        cfg.hol_delay_ms, cfg.hol_a_gap, cfg.hol_rounds, cfg.hol_b_calls
    );
    let hol = head_of_line::measure(&cfg, scratch.path());
    let http = http::measure(&cfg, scratch.path());
    let run_secs = run_start.elapsed().as_secs_f64();
    let load_end = loadavg();
    let leftover = leftover_processes(Duration::from_secs(5));

    let v = |k: &str| versions[k].as_str().unwrap_or("unknown").to_owned();
    println!(
        "\n### faultlab proxy vs direct, in front of @modelcontextprotocol/server-everything {}",
        v("server_everything")
    );
    println!(
        "\n{cores} cores, {cpu}; load average {load_start} at start, {load_end} at end; faultlab {}, Node {}, @modelcontextprotocol/sdk {} (TS relay), mcp-drill {} (Python {}), AgentBreak {} (Python {}){}\n",
        v("faultlab"),
        v("node"),
        v("modelcontextprotocol_sdk_ts_relay"),
        v("mcp_drill"),
        v("mcp_drill_python"),
        v("agentbreak"),
        v("agentbreak_python"),
        if cfg.quick { "; QUICK mode (tiny counts, figures not meaningful)" } else { "" }
    );
    println!(
        "| # | measurement | direct | faultlab proxy | figure (min / median / max over rounds) | peer relays / direct, total time or req/s (scale) | goal | met |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    rounds.print_rows(&cfg, &skipped);
    precision.print_rows(&cfg);
    hol.print_row(&cfg);
    http.print_rows(&cfg);
    rounds.print_connections();
    hol.print_sanity();
    http.print_connections(&cfg);
    let peers = peers::json(&cfg, &rounds, &http, &skipped);
    peers::print(&peers);
    println!(
        "\nRatios are taken within each round (connections alternate), so drift on a shared machine hits all alike. Run took {run_secs:.1} s; processes left after the run: {leftover}."
    );

    let (sequential, pipelined) = rounds.json(&cfg);
    let report = json!({
        "quick": cfg.quick,
        "machine": {"cores": cores, "cpu": cpu, "loadavg_start": load_start, "loadavg_end": load_end},
        "versions": versions,
        "run_seconds": run_secs,
        "leftover_processes": leftover,
        "mcp_drill_error": skipped.get(&Via::Drill),
        "ts_sdk_relay_error": skipped.get(&Via::TsRelay),
        "agentbreak_error": http.agentbreak_error,
        "sequential": sequential,
        "pipelined": pipelined,
        "latency_precision": precision.json(&cfg),
        "head_of_line": hol.json(&cfg),
        "http": http.json(&cfg),
        "peers": peers,
    });
    write_report(&cfg.json, &report);
}
