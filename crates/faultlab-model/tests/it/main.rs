//! The model endpoint through a real HTTP client on a loopback port: each API shape, streaming and not, a
//! scripted conversation, the recording, and the faults on the model hop.

mod api;
mod chain;
mod faults;
mod gemini;
mod limits;
mod markers;
mod model_faults;
mod models;
mod record;
mod save;
mod shapes;

use faultlab_http::guard::AllowedHosts;
use faultlab_model::script::Script;
use faultlab_model::{Options, rules, serve};
use faultlab_proxy::rules::RulesFile;
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr};
use tokio_util::sync::CancellationToken;

/// Two calls, the first retried once on failure, then a final answer.
pub const SCRIPT: &str = "\
steps:
  - call: echo
    arguments: {text: hello}
    on_error: retry_once
  - call: add
    arguments: {a: 1, b: 2}
answer: the sum is 3
";

/// An endpoint on a free loopback port, recording into a temporary file; ended when dropped.
pub struct Endpoint {
    pub base: String,
    pub client: reqwest::Client,
    dir: tempfile::TempDir,
    shutdown: CancellationToken,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Endpoint {
    pub async fn start(script: &str, rules_yaml: &str) -> Self {
        Self::start_with_budget(script, rules_yaml, faultlab_model::REQUEST_MEMORY_BUDGET).await
    }

    /// An endpoint whose requests being read and parsed may hold at most `request_budget` bytes at once.
    pub async fn start_with_budget(script: &str, rules_yaml: &str, request_budget: usize) -> Self {
        Self::start_full(script, rules_yaml, request_budget, None, None).await
    }

    /// An endpoint answering from a real one (`upstream`) or a recording (`replay`) instead of the script.
    pub async fn start_full(
        script: &str,
        rules_yaml: &str,
        request_budget: usize,
        upstream: Option<faultlab_model::recorded::Upstream>,
        replay: Option<faultlab_model::recorded::Replay>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let record = std::fs::File::create(dir.path().join("model.jsonl")).unwrap();
        let file: RulesFile = yaml_rules(rules_yaml);
        let options = Options {
            script: Script::parse(script, false).unwrap(),
            rules: rules(file).unwrap(),
            record: Some(Box::new(record)),
            allowed: AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            limits: faultlab_http::server::Limits::default(),
            max_request_bytes: faultlab_model::MAX_REQUEST_BYTES,
            request_budget,
            upstream,
            replay,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        tokio::spawn(serve(listener, options, shutdown.clone()));
        let client = faultlab_client::tls::client_builder().build().unwrap();
        Self { base, client, dir, shutdown }
    }

    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client.post(format!("{}{path}", self.base)).json(body).send().await.unwrap()
    }

    /// The recording's path.
    pub fn recording_path(&self) -> std::path::PathBuf {
        self.dir.path().join("model.jsonl")
    }

    /// The recording, one JSON value per request.
    pub fn recording(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("model.jsonl")).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

fn yaml_rules(text: &str) -> RulesFile {
    if text.is_empty() {
        return RulesFile::default();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.yaml");
    std::fs::write(&path, text).unwrap();
    RulesFile::load(&path).unwrap()
}

/// Gemini's path for a request, JSON or streamed.
pub fn gemini_path(stream: bool) -> &'static str {
    if stream { GEMINI_STREAM } else { GEMINI }
}

pub const GEMINI: &str = "/v1beta/models/gemini-2.5-flash:generateContent";
pub const GEMINI_STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

/// A request to `api` carrying back these tool results (none: the conversation's first turn).
pub fn request(path: &str, stream: bool, results: &[(&str, &str)]) -> Value {
    match path {
        "/v1/chat/completions" => {
            let mut messages = vec![json!({"role": "user", "content": "go"})];
            for (id, text) in results {
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "echo", "arguments": "{}"}}]}));
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
            json!({"model": "m", "stream": stream, "messages": messages, "tools": [
                {"type": "function", "function": {"name": "echo", "parameters": {}}},
                {"type": "function", "function": {"name": "add", "parameters": {}}}]})
        }
        "/v1/responses" => {
            let mut input = vec![json!({"role": "user", "content": "go"})];
            for (id, text) in results {
                input.push(json!({"type": "function_call", "call_id": id, "name": "echo", "arguments": "{}"}));
                input.push(json!({"type": "function_call_output", "call_id": id, "output": text}));
            }
            json!({"model": "m", "stream": stream, "input": input, "tools": [
                {"type": "function", "name": "echo", "parameters": {}},
                {"type": "function", "name": "add", "parameters": {}}]})
        }
        path if path.starts_with("/v1beta/") => {
            let mut contents = vec![json!({"role": "user", "parts": [{"text": "go"}]})];
            for (_, text) in results {
                contents.push(json!({"role": "model", "parts": [{"functionCall": {"name": "echo", "args": {}}}]}));
                contents.push(json!({"role": "user", "parts": [
                    {"functionResponse": {"name": "echo", "response": {"result": text}}}]}));
            }
            json!({"contents": contents, "tools": [{"functionDeclarations": [
                {"name": "echo", "parameters": {}}, {"name": "add", "parameters": {}}]}]})
        }
        _ => {
            let mut messages = vec![json!({"role": "user", "content": "go"})];
            for (id, text) in results {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "tool_use", "id": id, "name": "echo", "input": {}}]}));
                messages.push(json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": id, "content": text}]}));
            }
            json!({"model": "m", "max_tokens": 100, "stream": stream, "messages": messages, "tools": [
                {"name": "echo", "input_schema": {}}, {"name": "add", "input_schema": {}}]})
        }
    }
}

/// An SSE body's events: (event name, data).
pub fn sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let field = |name: &str| block.lines().find_map(|l| l.strip_prefix(name)).map(str::to_owned);
            (field("event: "), field("data: ").unwrap_or_default())
        })
        .collect()
}

/// The example files the docs run load as they are.
#[test]
fn the_example_script_and_rules_load() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/model");
    let script = Script::load(&root.join("script.yaml")).unwrap();
    assert_eq!(script.steps.len(), 2);
    rules(RulesFile::load(&root.join("rules.yaml")).unwrap()).unwrap();
    let eval = Script::load(&root.join("../eval/agents/model-script.yaml")).unwrap();
    assert_eq!(eval.steps[0].save.len(), 1, "the framework agent's script saves the nonce");
    // The YAML blocks of docs/frameworks.md: scripts and rules files as shown.
    let doc = std::fs::read_to_string(root.join("../../docs/frameworks.md")).unwrap();
    let blocks: Vec<&str> = doc.split("```yaml\n").skip(1).filter_map(|rest| rest.split("```").next()).collect();
    assert_eq!(blocks.len(), 3);
    for block in blocks {
        if block.contains("rules:") {
            rules(yaml_serde::from_str(block).unwrap()).unwrap();
        } else {
            Script::parse(block, false).unwrap();
        }
    }
}
