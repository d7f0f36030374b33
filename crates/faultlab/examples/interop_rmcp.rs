//! Interop matrix client: rmcp's own client against `faultlab serve` (the same client as tests/it/rmcp_client.rs).
//!
//! For every case in interop/matrix-cases.json and every transport asked for (stdio and HTTP 2025-11-25 via
//! `initialize`, HTTP 2026-07-28 via `server/discover`) it opens a fresh connection (a fresh server process per
//! cell), calls the case's tool with the deadline from the cases file, then calls `ping` on the same connection, and
//! prints one raw JSON record per cell on stdout, the same shape as interop/python/matrix_client.py:
//!   {sdk, sdkVersion, transport, tool, args, outcome, errorType, errorCode, message, text, elapsedMs, nextCallOk}
//!
//!   cargo run -p faultlab --example interop_rmcp -- --bin FAULTLAB --cases interop/matrix-cases.json \
//!       [--transport T]... [--sdk-version V]

// Roots are deprecated by SEP-2577 (2026-07-28), but a 2025-11-25 server may still ask for them.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorData, ListRootsResult, ProtocolVersion, Root, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

const TRANSPORTS: [&str; 3] = ["stdio", "http-2026-07-28", "http-2025-11-25"];
const GRACE: Duration = Duration::from_millis(2500);

type Client = RunningService<RoleClient, Answering>;

/// The client of a cell. For the ask_client and input_rounds cells (`Declares::Asks`) it declares elicitation (form
/// and URL mode) and roots, not sampling (so an undeclared sampling request shows how the SDK refuses what it did not
/// declare), accepts every form with `confirm: true` and every URL (with no content, as URL mode answers) and lists
/// one root; for the task_lifecycle cells (`Declares::Tasks`) it
/// declares the tasks extension, as a client that wants task handles does; for every other cell it is rmcp's
/// default client (nothing declared, every elicitation declined, no roots), as the matrix recorded it before.
struct Answering {
    config: ClientConfig,
    asks: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Declares {
    Nothing,
    Asks,
    Tasks,
}

impl Declares {
    fn of(tool: &str, args: &Value) -> Self {
        match tool {
            "ask_client" | "input_rounds" => Self::Asks,
            "task_work" if args.get("fault").is_some() => Self::Tasks,
            _ => Self::Nothing,
        }
    }
}

impl Answering {
    fn new(config: ClientConfig, declares: Declares) -> Self {
        let mut config = config;
        match declares {
            Declares::Asks => {
                config.capabilities = serde_json::from_value::<ClientCapabilities>(
                    json!({"elicitation": {"form": {}, "url": {}}, "roots": {}}),
                )
                .expect("a valid capabilities object")
            }
            Declares::Tasks => config.capabilities = ClientCapabilities::builder().enable_tasks().build(),
            Declares::Nothing => {}
        }
        Self { config, asks: declares == Declares::Asks }
    }
}

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let action = if self.asks { ElicitationAction::Accept } else { ElicitationAction::Decline };
        let result = ElicitResult::new(action);
        // URL mode's accept carries no content: the user went to the page; the form's confirms.
        let form = !matches!(request, ElicitRequestParams::UrlElicitationParams { .. });
        Ok(if self.asks && form { result.with_content(json!({"confirm": true})) } else { result })
    }

    #[allow(deprecated)]
    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        let roots = if self.asks { vec![Root::new("file:///tmp/faultlab-matrix")] } else { Vec::new() };
        Ok(ListRootsResult::new(roots))
    }
}

struct Args {
    bin: String,
    cases: String,
    transports: Vec<String>,
    sdk_version: String,
}

fn parse_args() -> Args {
    let mut args = Args { bin: String::new(), cases: String::new(), transports: vec![], sdk_version: "unknown".into() };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--bin" => args.bin = v,
            "--cases" => args.cases = v,
            "--transport" => {
                assert!(TRANSPORTS.contains(&v.as_str()), "unknown transport {v}");
                args.transports.push(v)
            }
            "--sdk-version" => args.sdk_version = v,
            _ => panic!("unknown argument {k}"),
        }
    }
    assert!(!args.bin.is_empty() && !args.cases.is_empty(), "--bin and --cases are required");
    if args.transports.is_empty() {
        args.transports = TRANSPORTS.iter().map(|s| s.to_string()).collect();
    }
    args
}

fn legacy() -> ClientConfig {
    ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_11_25)
}

fn call_request(tool: &str, args: &Value) -> ClientRequest {
    let params =
        CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().cloned().unwrap_or_default());
    ClientRequest::CallToolRequest(CallToolRequest::new(params))
}

/// The variant name of an error, e.g. `TransportClosed` or `McpError`.
fn variant(e: &ServiceError) -> String {
    let debug = format!("{e:?}");
    debug.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or("").to_owned()
}

fn classify(e: &ServiceError, rec: &mut Map<String, Value>) {
    let outcome = match e {
        ServiceError::Timeout { .. } => "timeout",
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => "transport_loss",
        _ => "error",
    };
    rec.insert("outcome".into(), json!(outcome));
    rec.insert("errorType".into(), json!(variant(e)));
    let message: String = e.to_string().chars().take(200).collect();
    rec.insert("message".into(), json!(message));
    if let ServiceError::McpError(data) = e {
        rec.insert("errorCode".into(), json!(data.code.0));
    }
}

fn text_of(result: &impl serde::Serialize) -> String {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    let parts = value.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
    let text: String = parts.iter().filter_map(|c| c.get("text").and_then(Value::as_str)).collect();
    text.chars().take(300).collect()
}

/// Sends one request with the SDK's own per-request timeout; `None` when the SDK itself did not return in time.
async fn call(
    client: &Client,
    request: ClientRequest,
    deadline: Duration,
) -> Option<Result<ServerResult, ServiceError>> {
    let fut = async {
        match client.send_cancellable_request(request, PeerRequestOptions::with_timeout(deadline)).await {
            Ok(handle) => handle.await_response().await,
            Err(e) => Err(e),
        }
    };
    tokio::time::timeout(deadline + GRACE, fut).await.ok()
}

/// The input_rounds cells (2026-07-28 multi-round-trip): rmcp's high-level `call_tool`, which drives the
/// `input_required` rounds itself (each form answered by the handler, at most `DEFAULT_MRTR_MAX_ROUNDS`, 10); the
/// single request the other cells send would stop at the first `input_required` reply. It takes no per-request
/// timeout, so the harness's bound (deadline + grace) is the only one.
async fn rounds(
    client: &Client,
    tool: &str,
    args: &Value,
    deadline: Duration,
) -> Option<Result<ServerResult, ServiceError>> {
    let params =
        CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().cloned().unwrap_or_default());
    let result = tokio::time::timeout(deadline + GRACE, client.call_tool(params)).await.ok()?;
    Some(result.map(ServerResult::CallToolResult))
}

/// rmcp's HTTP client on the lab's reqwest builder (reqwest here has no TLS crypto provider of its own).
fn http_client() -> Result<reqwest::Client, String> {
    faultlab_client::tls::client_builder().build().map_err(|e| e.to_string())
}

async fn http_server(bin: &str) -> Result<(tokio::process::Child, String), String> {
    let mut child = tokio::process::Command::new(bin)
        .args(["serve", "--transport", "http", "--port", "0"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap());
    let mut url = None;
    let started = Instant::now();
    while url.is_none() && started.elapsed() < Duration::from_secs(15) {
        let mut line = String::new();
        match tokio::time::timeout(Duration::from_secs(15), stderr.read_line(&mut line)).await {
            Ok(Ok(n)) if n > 0 => {
                if let Some(rest) = line.trim().split("listening at ").nth(1) {
                    url = Some(rest.to_owned());
                }
            }
            _ => break,
        }
    }
    // Keep draining stderr so diagnostics never fill the pipe and block the server.
    tokio::spawn(async move { while stderr.read_line(&mut String::new()).await.is_ok_and(|n| n > 0) {} });
    url.map(|u| (child, u)).ok_or_else(|| "server printed no 'listening at' URL".to_owned())
}

async fn connect(
    bin: &str,
    transport: &str,
    deadline: Duration,
    declares: Declares,
) -> Result<(Client, Option<tokio::process::Child>), String> {
    let bound = deadline + GRACE;
    let legacy = || Answering::new(legacy(), declares);
    match transport {
        "stdio" => {
            let mut command = tokio::process::Command::new(bin);
            command.arg("serve").kill_on_drop(true);
            let (t, _) =
                TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().map_err(|e| e.to_string())?;
            let client = tokio::time::timeout(bound, legacy().serve(t)).await.map_err(|_| "connect timed out")?;
            Ok((client.map_err(|e| e.to_string())?, None))
        }
        "http-2025-11-25" => {
            let (child, url) = http_server(bin).await?;
            let config = StreamableHttpClientTransportConfig::with_uri(url).reinit_on_expired_session(false);
            let t = StreamableHttpClientTransport::with_client(http_client()?, config);
            let client = tokio::time::timeout(bound, legacy().serve(t)).await.map_err(|_| "connect timed out")?;
            Ok((client.map_err(|e| e.to_string())?, Some(child)))
        }
        _ => {
            let (child, url) = http_server(bin).await?;
            let config = StreamableHttpClientTransportConfig::with_uri(url);
            let t = StreamableHttpClientTransport::with_client(http_client()?, config);
            let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
            let client = tokio::time::timeout(
                bound,
                Answering::new(ClientConfig::default(), declares).serve_with_lifecycle(t, lifecycle),
            )
            .await
            .map_err(|_| "connect timed out")?;
            Ok((client.map_err(|e| e.to_string())?, Some(child)))
        }
    }
}

async fn run_cell(
    bin: &str,
    transport: &str,
    tool: &str,
    args: &Value,
    deadline: Duration,
    rec: &mut Map<String, Value>,
) {
    let (client, server) = match connect(bin, transport, deadline, Declares::of(tool, args)).await {
        Ok(pair) => pair,
        Err(e) => {
            rec.insert("outcome".into(), json!("error"));
            rec.insert("errorType".into(), json!("ConnectFailed"));
            rec.insert("message".into(), json!(format!("connect failed: {e}")));
            rec.insert("elapsedMs".into(), json!(0));
            rec.insert("nextCallOk".into(), Value::Null);
            return;
        }
    };
    let started = Instant::now();
    let outcome = if tool == "input_rounds" && transport == "http-2026-07-28" {
        rounds(&client, tool, args, deadline).await
    } else {
        call(&client, call_request(tool, args), deadline).await
    };
    rec.insert("elapsedMs".into(), json!(started.elapsed().as_millis() as u64));
    match outcome {
        None => {
            rec.insert("outcome".into(), json!("hang"));
            rec.insert("errorType".into(), json!("HarnessDeadline"));
            rec.insert("message".into(), json!(format!("no answer within {:?}", deadline + GRACE)));
        }
        Some(Ok(ServerResult::CallToolResult(r))) => {
            let outcome = if r.is_error == Some(true) { "tool_error" } else { "result" };
            rec.insert("outcome".into(), json!(outcome));
            rec.insert("text".into(), json!(text_of(&r)));
        }
        Some(Ok(other)) => {
            // Which result it was (a task handle, an input_required round), by its wire resultType.
            let kind = serde_json::to_value(&other).ok().and_then(|v| v.get("resultType").cloned());
            let kind = kind.as_ref().and_then(Value::as_str).unwrap_or("none");
            rec.insert("outcome".into(), json!("error"));
            rec.insert("errorType".into(), json!("UnexpectedResponse"));
            rec.insert(
                "message".into(),
                json!(format!("a response that is not a tools/call result (resultType {kind})")),
            );
        }
        Some(Err(e)) => classify(&e, rec),
    }
    let next = call(&client, call_request("ping", &json!({})), deadline).await;
    let next_ok = matches!(&next, Some(Ok(ServerResult::CallToolResult(r))) if r.is_error != Some(true) && text_of(r).contains("\"ok\""));
    rec.insert("nextCallOk".into(), json!(next_ok));
    if !next_ok {
        let why = match &next {
            None => "HarnessDeadline".to_owned(),
            Some(Err(e)) => variant(e),
            Some(Ok(_)) => "NotOk".to_owned(),
        };
        rec.insert("nextDetail".into(), json!(why));
    }
    let _ = tokio::time::timeout(Duration::from_secs(3), client.cancel()).await;
    drop(server); // kill_on_drop
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(&args.cases).expect("read cases")).expect("cases JSON");
    let deadline = Duration::from_millis(spec["deadlineMs"].as_u64().expect("deadlineMs"));
    let default_transports = spec["transports"].clone();
    for transport in &args.transports {
        for case in spec["cases"].as_array().expect("cases") {
            let allowed = case.get("transports").unwrap_or(&default_transports);
            if !allowed.as_array().is_some_and(|a| a.iter().any(|t| t == transport.as_str())) {
                continue;
            }
            let tool = case["tool"].as_str().expect("tool");
            let mut rec = Map::new();
            rec.insert("sdk".into(), json!("rmcp"));
            rec.insert("sdkVersion".into(), json!(format!("rmcp {}", args.sdk_version)));
            rec.insert("transport".into(), json!(transport));
            rec.insert("tool".into(), json!(tool));
            rec.insert("args".into(), case["args"].clone());
            let bound = 2 * (deadline + GRACE) + Duration::from_secs(10);
            let cell = run_cell(&args.bin, transport, tool, &case["args"], deadline, &mut rec);
            if tokio::time::timeout(bound, cell).await.is_err() {
                rec.insert("outcome".into(), json!("hang"));
                rec.insert("errorType".into(), json!("HarnessDeadline"));
                rec.insert("message".into(), json!("the cell did not finish"));
                rec.entry("nextCallOk").or_insert(Value::Null);
            }
            println!("{}", Value::Object(rec));
        }
    }
    // Tasks left behind by abandoned requests must not keep the process alive.
    std::process::exit(0);
}
