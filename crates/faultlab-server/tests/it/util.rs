//! Raw clients for the tests: they write and read bytes, and parse only to look.

use bytes::Bytes;
use faultlab_engine::recorder::Record;
use faultlab_engine::{Engine, Recorder};
use faultlab_proxy::front::stdio::serve_in_process;
use faultlab_proxy::relay::{ProxyEnd, ProxyError};
use faultlab_proxy::upstream::in_process::InProcess;
use faultlab_server::http::guard::AllowedHosts;
use faultlab_server::http::{self, HttpOptions};
use faultlab_server::{FaultServer, Scope, TransportKind, stdio};
use faultlab_wire::{Frame, MAX_LINE_BYTES};
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a test waits for something that should happen promptly before it fails (not a synchronising sleep).
pub const PATIENCE: Duration = Duration::from_secs(20);

pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, fut).await.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

// ---------- stdio ----------

/// `faultlab serve` on stdio, on `pipe`: the lab's stdio front with no rules in front of `service` in process.
pub fn serve_stdio<S: rmcp::ServerHandler>(
    service: S,
    engine: Arc<Engine>,
    pipe: DuplexStream,
) -> JoinHandle<Result<ProxyEnd, ProxyError>> {
    let recorder = engine.recorder().clone();
    let server = InProcess::spawn(move |lines| stdio::serve_lines(service, lines, recorder, MAX_LINE_BYTES));
    let (input, output) = tokio::io::split(pipe);
    tokio::spawn(serve_in_process(engine, server, input, output, MAX_LINE_BYTES))
}

/// A client on an in-process stdio connection.
pub struct StdioClient {
    writer: WriteHalf<DuplexStream>,
    reader: BufReader<ReadHalf<DuplexStream>>,
    pub recorder: Recorder,
    pub server: JoinHandle<Result<ProxyEnd, ProxyError>>,
}

impl StdioClient {
    /// A fault server on a fresh connection, initialized with `protocol_version` (`None`: modern, no handshake).
    pub async fn start(protocol_version: Option<&str>) -> Self {
        let recorder = Recorder::memory().scoped("stdio");
        let engine = Arc::new(Engine::new(recorder.clone()).listing_task_support(faultlab_server::tools::task_support));
        let scope = Scope { engine: engine.clone(), transport: TransportKind::Stdio, session: None };
        Self::start_with(FaultServer::stdio(scope), engine, recorder, protocol_version).await
    }

    /// As [`StdioClient::start`] with a 2025-11-25 handshake that declares `capabilities`.
    pub async fn start_declaring(capabilities: Value) -> Self {
        let mut client = Self::start(None).await;
        let mut init = initialize(1, "2025-11-25");
        init["params"]["capabilities"] = capabilities;
        client.send(&init).await;
        let reply = client.recv().await;
        assert!(reply.value().unwrap().get("result").is_some(), "{reply:?}");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        client
    }

    pub async fn start_with<S: rmcp::ServerHandler>(
        server: S,
        engine: Arc<Engine>,
        recorder: Recorder,
        protocol_version: Option<&str>,
    ) -> Self {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let server = serve_stdio(server, engine, server_io);
        let (reader, writer) = tokio::io::split(client_io);
        let mut client = Self { writer, reader: BufReader::new(reader), recorder, server };
        if let Some(version) = protocol_version {
            client.send(&initialize(1, version)).await;
            let reply = client.recv().await;
            assert_eq!(reply.value().unwrap()["result"]["protocolVersion"], version, "{reply:?}");
            client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        }
        client
    }

    pub async fn send(&mut self, value: &Value) {
        let mut line = serde_json::to_vec(value).unwrap();
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next line from the server, with its line ending, or `None` at EOF.
    pub async fn recv_raw(&mut self) -> Option<Vec<u8>> {
        let mut line = Vec::new();
        let n = within("a line from the server", self.reader.read_until(b'\n', &mut line)).await.unwrap();
        (n > 0).then_some(line)
    }

    /// The next frame (line ending stripped).
    pub async fn recv(&mut self) -> Frame {
        let mut line = self.recv_raw().await.expect("the server closed the connection");
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        Frame::parse(Bytes::from(line))
    }

    pub async fn call(&mut self, id: i64, tool: &str, args: Value) {
        self.send(&call(id, tool, args, None)).await;
    }

    pub fn records(&self) -> Vec<Record> {
        self.recorder.records()
    }
}

pub fn initialize(id: i64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw-test-client", "version": "1"}}})
}

/// A `tools/call`; with `meta`, the request carries 2026-07-28 per-request metadata.
pub fn call(id: i64, tool: &str, args: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test-client", "version": "1"}
    })
}

pub fn text_of(frame: &Frame) -> String {
    frame
        .value()
        .and_then(|v| v.pointer("/result/content/0/text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

// ---------- HTTP ----------

pub struct HttpServer {
    pub url: String,
    pub addr: SocketAddr,
    pub recorder: Recorder,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<std::io::Result<()>>,
    pub http: reqwest::Client,
}

impl HttpServer {
    pub async fn start() -> Self {
        Self::start_with(|o| o).await
    }

    pub async fn start_with(tune: impl FnOnce(HttpOptions) -> HttpOptions) -> Self {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let options = tune(HttpOptions::new("/mcp".into(), AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST))));
        let recorder = Recorder::memory();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(http::serve(listener, options, FaultServer::http, recorder.clone(), shutdown.clone()));
        let http = faultlab_client::tls::client_builder().pool_max_idle_per_host(0).build().unwrap();
        Self { url: format!("http://{addr}/mcp"), addr, recorder, shutdown, task, http }
    }

    /// A POST with the MCP headers; `session` adds `Mcp-Session-Id` and the legacy version header.
    pub fn post(&self, body: &Value, session: Option<&str>) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(sid) = session {
            req = req.header("mcp-session-id", sid).header("mcp-protocol-version", "2025-11-25");
        }
        req
    }

    /// A modern (2026-07-28) tool call with its required headers.
    pub fn post_modern_call(&self, id: i64, tool: &str, args: Value) -> reqwest::RequestBuilder {
        self.post(&call(id, tool, args, Some(modern_meta())), None)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
    }

    /// Opens a 2025-11-25 session and returns its id.
    pub async fn open_session(&self) -> String {
        let response = within("initialize", self.post(&initialize(1, "2025-11-25"), None).send()).await.unwrap();
        assert_eq!(response.status(), 200);
        let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = response.bytes().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = self.post(&initialized, Some(&sid)).send().await.unwrap();
        assert_eq!(ack.status(), 202);
        sid
    }

    pub fn records(&self) -> Vec<Record> {
        self.recorder.records()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The JSON-RPC messages in an HTTP response body: one for a JSON body, each `data` of an SSE body.
pub fn messages(content_type: &str, body: &[u8]) -> Vec<Frame> {
    if content_type.starts_with("application/json") {
        return vec![Frame::parse(Bytes::copy_from_slice(body))];
    }
    sse_data(body).into_iter().filter(|d| !d.is_empty()).map(|d| Frame::parse(Bytes::from(d))).collect()
}

/// The `data` of every SSE event in `body`, in order.
pub fn sse_data(body: &[u8]) -> Vec<String> {
    use tokio_util::codec::Decoder;
    let mut decoder = faultlab_wire::SseDecoder::default();
    let mut buf = bytes::BytesMut::from(body);
    let mut out = Vec::new();
    while let Ok(Some(event)) = decoder.decode_eof(&mut buf) {
        if let Some(data) = event.data {
            out.push(data);
        }
    }
    out
}

/// Sends and reads a whole response: status, content type, body bytes, or the error if the connection broke
/// (status 0 when it broke before the response head).
pub async fn exchange(req: reqwest::RequestBuilder) -> (u16, String, Result<Bytes, reqwest::Error>) {
    let response = match within("a response", req.send()).await {
        Ok(response) => response,
        Err(e) => return (0, String::new(), Err(e)),
    };
    let status = response.status().as_u16();
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = within("a response body", response.bytes()).await;
    (status, content_type, body)
}

/// Reads JSON-RPC messages from an SSE response as they arrive.
pub struct EventReader {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    decoder: faultlab_wire::SseDecoder,
    buf: bytes::BytesMut,
}

impl EventReader {
    pub fn new(response: reqwest::Response) -> Self {
        Self { stream: Box::pin(response.bytes_stream()), decoder: Default::default(), buf: Default::default() }
    }

    /// The next message, skipping priming and keep-alive events; `None` when the stream ends cleanly, `Some(Err)`
    /// when it breaks off.
    pub async fn next(&mut self) -> Option<Result<Frame, reqwest::Error>> {
        use futures::StreamExt;
        use tokio_util::codec::Decoder;
        loop {
            while let Ok(Some(event)) = self.decoder.decode(&mut self.buf) {
                if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                    return Some(Ok(Frame::parse(Bytes::from(data))));
                }
            }
            match within("an SSE chunk", self.stream.next()).await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(e)) => return Some(Err(e)),
                None => return None,
            }
        }
    }
}
