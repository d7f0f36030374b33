//! `faultlab run` with the reference client's auth mode: every built-in auth scenario passes with its auth events
//! in the report, and no token or code the client handled reaches anything the run wrote.

use crate::common::faultlab;
use axum::extract::Request;
use axum::http::header;
use faultlab_auth::{Auth, AuthConfig, AuthFault};
use faultlab_engine::Recorder;
use faultlab_http::Wrap;
use faultlab_http::guard::AllowedHosts;
use faultlab_server::FaultServer;
use faultlab_server::http::{self, HttpOptions};
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

fn auth_examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("auth-"))
        .collect();
    files.sort();
    files
}

#[test]
fn there_is_an_auth_scenario_per_auth_fault_and_each_passes_with_its_events_reported() {
    let files = auth_examples();
    let text: String = files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    for (name, _) in faultlab_auth::faults::DOCS {
        assert!(text.contains(&format!("type: {name}")), "no auth scenario plays {name}");
    }
    let output = faultlab().arg("run").args(&files).args(["--format", "json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let scenarios = report["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), files.len());
    for scenario in scenarios {
        assert_eq!(scenario["passed"], true, "{scenario:#}");
        let first = &scenario["steps"][0]["seen"]["auth"];
        assert!(first["events"].is_array(), "the first call reports its auth events: {scenario:#}");
    }
    assert_eq!(output.status.code(), Some(0));
}

/// The lab's server behind the authorization server playing `fault`, with a layer in front that keeps every
/// secret crossing the wire: bearer tokens, the tokens of token responses, codes in authorization redirects.
async fn watched_lab(fault: &str) -> (String, Arc<Mutex<Vec<String>>>, CancellationToken) {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let allowed = AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let config = AuthConfig { fault: Some(AuthFault::parse(fault).unwrap()), ..AuthConfig::default() };
    let auth = Auth::new(config, &format!("http://{addr}"), "/mcp", allowed.clone()).unwrap();
    let secrets = Arc::new(Mutex::new(Vec::new()));
    let seen = secrets.clone();
    let mut options = HttpOptions::new("/mcp".into(), allowed);
    options.wrap = Some(Wrap(Arc::new(move |app| {
        let authorized = auth.clone().wrap(app);
        let seen = seen.clone();
        axum::Router::new().fallback(move |request: Request| {
            let (authorized, seen) = (authorized.clone(), seen.clone());
            async move { watch(authorized, seen, request).await }
        })
    })));
    let shutdown = CancellationToken::new();
    tokio::spawn(http::serve(listener, options, FaultServer::http, Recorder::discard(), shutdown.clone()));
    (format!("http://{addr}/mcp"), secrets, shutdown)
}

async fn watch(app: axum::Router, seen: Arc<Mutex<Vec<String>>>, request: Request) -> axum::response::Response {
    let keep = |secret: &str| seen.lock().unwrap().push(secret.to_owned());
    if let Some(bearer) = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        keep(bearer.trim_start_matches("Bearer "));
    }
    let path = request.uri().path().to_owned();
    let response = app.oneshot(request).await.unwrap();
    if let Some(location) = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()) {
        let url = reqwest::Url::parse(location).unwrap();
        url.query_pairs().filter(|(k, _)| k == "code").for_each(|(_, code)| keep(&code));
    }
    if path != "/oauth/token" {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let value: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    for key in ["access_token", "refresh_token"] {
        if let Some(token) = value.get(key).and_then(Value::as_str) {
            keep(token);
        }
    }
    axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
}

#[tokio::test]
async fn no_token_or_code_reaches_any_output_of_an_auth_run() {
    // Every access token lasts one request: the run refreshes, rotates and handles many secrets.
    let (url, secrets, shutdown) = watched_lab(r#"{"type": "refresh_rotation"}"#).await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("auth.yaml");
    std::fs::write(
        &scenario,
        "name: an authorized external target\nprotocolVersion: \"2025-11-25\"\nauth: {}\nsteps:\n\
         - call: {tool: ping, args: {}}\n  repeat: 3\n  expect: {outcome: success}\n",
    )
    .unwrap();
    let target = dir.path().join("http.yaml");
    std::fs::write(&target, format!("adapter: mcp\nconfig:\n  http:\n    url: {url}\n")).unwrap();
    let out = dir.path().join("out");
    let args: Vec<String> = [&scenario, &target, &out].iter().map(|p| p.to_str().unwrap().to_owned()).collect();
    let output = tokio::task::spawn_blocking(move || {
        faultlab()
            .args(["run", &args[0], "--target", &args[1], "--out", &args[2], "--format", "json"])
            .env("FAULTLAB_LOG", "debug")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    shutdown.cancel();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["scenarios"][0]["passed"], true, "{report:#}");
    let mut written = vec![output.stdout.clone(), output.stderr.clone()];
    for entry in walk(&out) {
        written.push(std::fs::read(entry).unwrap());
    }
    assert!(written.len() >= 5, "stdout, stderr, report.json, junit.xml and a trace");
    let secrets = secrets.lock().unwrap().clone();
    // Initialize, the initialized notification and three calls, each with its own access token.
    assert!(secrets.len() >= 10, "the run handled access, refresh tokens and a code: {}", secrets.len());
    for secret in &secrets {
        for bytes in &written {
            assert!(!String::from_utf8_lossy(bytes).contains(secret.as_str()), "a secret was written out");
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}
