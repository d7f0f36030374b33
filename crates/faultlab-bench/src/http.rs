//! Streamable HTTP: the servers and relays both benches start (`faultlab serve`, server-everything,
//! `faultlab proxy --listen`), sessions, and the load generator that keeps a number of requests in flight.

use crate::inputs::Tools;
use crate::procs::{Proc, STALL, free_port};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The HTTP client of every figure: no proxy from the environment, every request bounded by [`STALL`].
pub fn client() -> reqwest::Client {
    faultlab_client::tls::client_builder().no_proxy().timeout(STALL).build().expect("HTTP client")
}

/// A multi-thread tokio runtime for the load generator.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime")
}

/// A process serving HTTP at `url`, in a process group of its own, killed with it on drop.
pub struct Server {
    pub proc: Proc,
    pub url: String,
}

impl Server {
    /// Starts `cmd` (stderr piped, read for the listening line by `ready`).
    fn start(
        mut cmd: Command,
        what: &str,
        ready: impl Fn(&str) -> Option<String> + Send + 'static,
    ) -> Result<Server, String> {
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut proc = Proc::spawn(&mut cmd, what)?;
        let url = proc.ready_line(what, None, ready)?;
        Ok(Server { proc, url })
    }

    pub fn pid(&self) -> u32 {
        self.proc.pgid
    }
}

/// `faultlab serve --transport http` on a free loopback port.
pub fn start_ours(tools: &Tools) -> Result<Server, String> {
    let mut cmd = Command::new(&tools.faultlab);
    cmd.args(["serve", "--transport", "http", "--port", "0", "--host", "127.0.0.1"]);
    Server::start(cmd, "faultlab serve --transport http", |line| {
        line.strip_prefix("faultlab: listening at ").map(|u| u.trim().to_owned())
    })
}

/// The Node reference server on Streamable HTTP. It takes its port from PORT only (and listens on all
/// interfaces); we pick a free one.
pub fn start_node(tools: &Tools) -> Result<Server, String> {
    let port = free_port();
    let mut cmd = Command::new(&tools.node);
    cmd.arg(&tools.everything).arg("streamableHttp").env("PORT", port.to_string());
    Server::start(cmd, "server-everything streamableHttp", move |line| {
        line.contains("listening on port").then(|| format!("http://127.0.0.1:{port}/mcp"))
    })
}

/// `faultlab proxy --listen` in front of the HTTP server at `upstream`, its trajectory recorded to `record` (as a
/// user of the proxy would keep it).
pub fn start_proxy(tools: &Tools, upstream: &str, record: &Path) -> Result<Server, String> {
    let mut cmd = Command::new(&tools.faultlab);
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--record"]).arg(record);
    Server::start(cmd, "faultlab proxy --listen", |line| {
        let rest = line.strip_prefix("faultlab: proxy listening at ")?;
        Some(rest.split(" for ").next()?.trim().to_owned())
    })
}

/// JSON request headers with `pairs` added.
pub fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert("content-type", HeaderValue::from_static("application/json"));
    map.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    for (k, v) in pairs {
        map.insert(HeaderName::from_static(k), HeaderValue::from_str(v).expect("a header value"));
    }
    map
}

/// `initialize` and `notifications/initialized` at `url` in protocol version `era` (sent as
/// `mcp-protocol-version` on every request); the headers of every later request, with the session id when the
/// server gave one (a relay that answers `initialize` itself may keep no client session).
pub async fn open_session(client: &reqwest::Client, url: &str, era: &str) -> Result<HeaderMap, String> {
    let init = crate::stdio::initialize(0, era).to_string();
    let reply = client.post(url).headers(headers(&[("mcp-protocol-version", era)])).body(init).send().await;
    let reply = reply.map_err(|e| format!("initialize: {e}"))?;
    let status = reply.status();
    let session = reply.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = reply.text().await.map_err(|e| format!("initialize: {e}"))?;
    if !status.is_success() || !body.contains("\"result\"") {
        return Err(format!("initialize: HTTP {status}: {body}"));
    }
    let headers = match &session {
        Some(id) => headers(&[("mcp-protocol-version", era), ("mcp-session-id", id)]),
        None => headers(&[("mcp-protocol-version", era)]),
    };
    let note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    let ack = client.post(url).headers(headers.clone()).body(note).send().await;
    let ack = ack.map_err(|e| format!("notifications/initialized: {e}"))?;
    if !ack.status().is_success() {
        return Err(format!("notifications/initialized: HTTP {}", ack.status()));
    }
    Ok(headers)
}

/// One kind of request to repeat: fixed headers, a body with a fresh JSON-RPC id each time, and what a good
/// answer's body contains.
pub struct Target {
    pub url: String,
    pub headers: HeaderMap,
    /// The request with `{ID}` in place of its id.
    body: String,
    expect: &'static str,
}

impl Target {
    /// `request` is sent with id 0 replaced by a fresh id; an answer is good when its status is a success and its
    /// body contains `expect`.
    pub fn new(url: &str, headers: HeaderMap, request: &Value, expect: &'static str) -> Target {
        let body = request.to_string().replacen("\"id\":0", "\"id\":{ID}", 1);
        Target { url: url.to_owned(), headers, body, expect }
    }

    /// A `tools/call` of `tool` with `arguments`, good when it has a result.
    pub fn tools_call(url: &str, headers: HeaderMap, tool: &str, arguments: Value) -> Target {
        let call = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        Target::new(url, headers, &call, "\"result\":")
    }

    /// One request; its latency in µs.
    pub async fn call(&self, client: &reqwest::Client, id: u64) -> Result<f64, String> {
        let body = self.body.replacen("{ID}", &id.to_string(), 1);
        let sent = Instant::now();
        let response = client.post(&self.url).headers(self.headers.clone()).body(body).send().await;
        let response = response.map_err(|e| format!("{}: {e}", self.url))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| format!("{}: {e}", self.url))?;
        if !status.is_success() || !bytes.windows(self.expect.len()).any(|w| w == self.expect.as_bytes()) {
            return Err(format!("{}: bad response: HTTP {status}: {}", self.url, String::from_utf8_lossy(&bytes)));
        }
        Ok(sent.elapsed().as_secs_f64() * 1e6)
    }
}

/// Keeps `in_flight` requests going for `window`: (requests per second, each request's latency in µs).
pub async fn load(
    client: &reqwest::Client,
    target: &Arc<Target>,
    in_flight: usize,
    window: Duration,
) -> Result<(f64, Vec<f64>), String> {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let start = Instant::now();
    let deadline = start + window;
    let workers: Vec<_> = (0..in_flight)
        .map(|_| {
            let (client, target) = (client.clone(), target.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    latencies.push(target.call(&client, NEXT_ID.fetch_add(1, Ordering::Relaxed)).await?);
                }
                Ok::<_, String>(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.map_err(|e| format!("load worker: {e}"))??);
    }
    Ok((latencies.len() as f64 / start.elapsed().as_secs_f64(), latencies))
}
