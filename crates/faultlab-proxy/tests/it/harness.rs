//! The proxy's stdio front in process, in front of the real server (`faultlab serve`'s rmcp server behind its own
//! stdio front) as an in-process upstream: a line client, no child process.

use faultlab_engine::recorder::Record;
use faultlab_engine::{Engine, Recorder};
use faultlab_http::guard::AllowedHosts;
use faultlab_proxy::front::http::{Backend, HttpProxyOptions};
use faultlab_proxy::front::stdio;
use faultlab_proxy::relay::{Connect, ProxyEnd, ProxyError, ProxyOptions};
use faultlab_proxy::rules::{RuleSet, RulesFile, SharedRules};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_proxy::upstream::in_process::InProcess;
use faultlab_server::{FaultServer, Scope, TransportKind};
use faultlab_wire::MAX_LINE_BYTES;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// `faultlab serve` on stdio, in process: the fault server behind its own stdio wire layer.
pub fn lab_server() -> InProcess {
    InProcess::spawn(|pipe| async move {
        let scope = Scope {
            engine: Arc::new(Engine::new(Recorder::discard())),
            transport: TransportKind::Stdio,
            session: None,
        };
        let engine = scope.engine.clone();
        let recorder = engine.recorder().clone();
        let service = FaultServer::stdio(scope);
        let server = InProcess::spawn(move |lines| {
            faultlab_server::stdio::serve_lines(service, lines, recorder, MAX_LINE_BYTES)
        });
        let (read, write) = tokio::io::split(pipe);
        let _ = stdio::serve_in_process(engine, server, read, write, MAX_LINE_BYTES).await;
    })
}

/// A Streamable HTTP upstream written for a test: `route` answers `/mcp` on a free loopback port. Its URL
/// (`http://ADDRESS/mcp`) and its task.
pub async fn upstream_at(route: axum::routing::MethodRouter) -> (String, JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = axum::Router::new().route("/mcp", route);
    (url, tokio::spawn(async move { axum::serve(listener, router).await }))
}

/// The proxy's HTTP front on a free loopback port, in front of `upstream` with `rules` until `stop`: its URL
/// (`http://ADDRESS/mcp`) and its task.
pub async fn http_front(
    upstream: Backend,
    rules: SharedRules,
    trajectory: Arc<Trajectory>,
    stop: CancellationToken,
) -> (String, JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let allowed_hosts = AllowedHosts::for_bind(address.ip());
    let options = HttpProxyOptions { path: "/mcp".into(), allowed_hosts, limits: Default::default(), wrap: None };
    let task = tokio::spawn(faultlab_proxy::front::http::serve(listener, options, upstream, rules, trajectory, stop));
    (format!("http://{address}/mcp"), task)
}

/// A POST of one JSON-RPC message to `url`, with the headers a Streamable HTTP client sends.
pub fn post(client: &reqwest::Client, url: &str, message: String) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(message)
}

/// A client on the stdio front, in front of the in-process server.
pub struct Client {
    read: BufReader<ReadHalf<DuplexStream>>,
    pub write: WriteHalf<DuplexStream>,
    pub proxy: JoinHandle<Result<ProxyEnd, ProxyError>>,
    recorder: Recorder,
}

impl Client {
    /// A proxy with the rules file `rules` (YAML).
    pub fn start(rules: &str) -> Self {
        Self::with_rules(yaml_serde::from_str(rules).unwrap())
    }

    /// A proxy with one rule per `--fault` spec.
    pub fn with_faults(specs: &[&str]) -> Self {
        let mut file = RulesFile::default();
        for (i, spec) in specs.iter().enumerate() {
            file.rules.push(RulesFile::parse_spec(spec, i + 1).unwrap());
        }
        Self::with_rules(file)
    }

    pub fn with_rules(file: RulesFile) -> Self {
        Self::with_upstream(file, lab_server())
    }

    /// A proxy with the rules `file` in front of `upstream`.
    pub fn with_upstream<C: Connect + Send + 'static>(file: RulesFile, upstream: C) -> Self {
        let (client, proxy_side) = tokio::io::duplex(1 << 16);
        let (input, output) = tokio::io::split(proxy_side);
        let recorder = Recorder::memory();
        let trajectory = Arc::new(Trajectory::new(recorder.clone()));
        let (rules, stop) = (RuleSet::new(file).shared(), CancellationToken::new());
        let proxy = tokio::spawn(stdio::run(ProxyOptions::default(), upstream, rules, trajectory, input, output, stop));
        let (read, write) = tokio::io::split(client);
        Self { read: BufReader::new(read), write, proxy, recorder }
    }

    pub async fn send(&mut self, message: &Value) {
        self.write.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The next line, with its newline, exactly as it arrived.
    pub async fn recv_line(&mut self) -> String {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), self.read.read_line(&mut line)).await;
        assert!(read.expect("a line in time").unwrap() > 0, "a line, not the end");
        line
    }

    /// The next line without its newline, or `None` once the proxy has closed the client's side.
    pub async fn recv_raw(&mut self) -> Option<String> {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), self.read.read_line(&mut line)).await;
        (read.expect("a line or the end in time").unwrap() > 0).then(|| line.trim_end_matches('\n').to_owned())
    }

    pub async fn recv(&mut self) -> Value {
        serde_json::from_str(&self.recv_line().await).unwrap()
    }

    pub async fn ask(&mut self, message: &Value) -> Value {
        self.send(message).await;
        self.recv().await
    }

    pub async fn initialize(&mut self) {
        let reply = self
            .ask(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
                "capabilities":{},"clientInfo":{"name":"proxy-test","version":"1"}}}))
            .await;
        assert!(reply["result"]["serverInfo"]["name"].is_string(), "{reply}");
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    }

    /// Closes the client's side and waits for the run to end; returns how it ended and the trajectory.
    pub async fn finish(mut self) -> (ProxyEnd, Vec<Record>) {
        self.write.shutdown().await.unwrap();
        let mut rest = String::new();
        let _ = self.read.read_to_string(&mut rest).await;
        let end = tokio::time::timeout(Duration::from_secs(10), self.proxy).await;
        (end.expect("the run ends").expect("no panic").expect("no error"), self.recorder.records())
    }

    /// Ends the session: nothing else may have been written, and the run ends as finished.
    pub async fn finish_clean(mut self) {
        self.write.shutdown().await.unwrap();
        let mut rest = String::new();
        tokio::time::timeout(Duration::from_secs(10), self.read.read_to_string(&mut rest)).await.unwrap().unwrap();
        assert_eq!(rest, "", "no stray frames");
        let end = tokio::time::timeout(Duration::from_secs(10), self.proxy).await;
        assert_eq!(end.expect("the run ends").expect("no panic").expect("no error"), ProxyEnd::Finished);
    }

    /// Closes the client's side (its EOF), keeping the reading side open.
    pub async fn close(&mut self) {
        self.write.shutdown().await.unwrap();
    }

    pub async fn call(&mut self, id: i64, tool: &str, arguments: Value) {
        self.send(&call(id, tool, arguments)).await;
    }
}

/// A `tools/call` request.
pub fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}
