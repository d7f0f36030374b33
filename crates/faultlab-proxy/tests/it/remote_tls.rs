//! An https:// upstream through both fronts: a local TLS server on 127.0.0.1 (port 0) with a certificate generated
//! per test. Trusted through the CA file, requests are relayed and the user's headers (one literal, one from the
//! environment) arrive; the upstream echoes the credential back and the trajectory still holds it only redacted.
//! Signed by a CA the proxy does not trust, every request gets a JSON-RPC error naming the cause (502 over HTTP),
//! and the trajectory a transport event saying the same.

use bytes::Bytes;
use faultlab_engine::{Event, Recorder};
use faultlab_proxy::front::http::Backend;
use faultlab_proxy::front::stdio;
use faultlab_proxy::relay::ProxyOptions;
use faultlab_proxy::remote::{Remote, RemoteOptions};
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_proxy::upstream::http::Endpoint;
use faultlab_wire::sync::lock;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::harness;

const TOKEN: &str = "tok-5ecret-6f1d2c";

/// A CA named `ca_name` and a server certificate it signed for 127.0.0.1 and localhost.
struct Pki {
    ca_pem: String,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

fn pki(ca_name: &str) -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, ca_name);
    let ca = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let cert = leaf.signed_by(&key, &ca).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Pki { ca_pem: ca.pem(), cert: cert.der().clone(), key }
}

/// The TLS upstream: its URL and the headers of every request it received.
struct Upstream {
    url: String,
    seen: Arc<Mutex<Vec<http::HeaderMap>>>,
}

/// Answers every request with a result that echoes the `Authorization` it got (an upstream that leaks it back).
async fn answer(
    request: http::Request<Incoming>,
    seen: Arc<Mutex<Vec<http::HeaderMap>>>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    lock(&seen).push(request.headers().clone());
    let auth = request.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("none").to_owned();
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(id) = message.get("id") else {
        return Ok(http::Response::builder().status(202).body(Full::default()).unwrap());
    };
    let result = match message["method"].as_str() {
        Some("initialize") => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "tls-upstream", "version": "0"}}),
        _ => json!({"content": [{"type": "text", "text": format!("pong; you sent {auth}")}]}),
    };
    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    Ok(http::Response::builder().header("content-type", "application/json").body(Full::from(reply)).unwrap())
}

/// What the upstream does once a client has finished the TLS handshake.
#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    Serve,
    /// Closes the connection without reading the request (a server that crashed, a load balancer that gave up).
    Hangup,
}

async fn tls_upstream(pki: &Pki) -> Upstream {
    tls_upstream_that(pki, Behaviour::Serve).await
}

async fn tls_upstream_that(pki: &Pki, behaviour: Behaviour) -> Upstream {
    let config = rustls::ServerConfig::builder_with_provider(faultlab_client::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![pki.cert.clone()], pki.key.clone_key())
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), recorded.clone());
            tokio::spawn(async move {
                // A client that does not trust the certificate aborts the handshake: nothing to serve.
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                if behaviour == Behaviour::Hangup {
                    return;
                }
                let service = service_fn(move |request| answer(request, seen.clone()));
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    Upstream { url, seen }
}

/// The proxy's view of the upstream: the CA file, one literal header and one from the (test's) environment.
fn remote(url: &str, ca_pem: &str, dir: &tempfile::TempDir) -> Remote {
    let ca: PathBuf = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let options = RemoteOptions {
        ca: Some(ca),
        headers: vec!["X-Team: lab".into()],
        header_env: vec!["Authorization: Bearer ${MCP_TOKEN}".into()],
    };
    options.resolve(url, |name| (name == "MCP_TOKEN").then(|| TOKEN.to_owned())).unwrap()
}

/// A trajectory with bodies, redacting `remote`'s secrets, recorded in memory; and a token that stops the front.
fn trajectory(remote: &Remote) -> (Recorder, Arc<Trajectory>, CancellationToken) {
    let recorder = Recorder::memory();
    let trajectory = Trajectory::new(recorder.clone()).with_bodies().redacting(remote.secrets().scrub());
    (recorder, Arc::new(trajectory), CancellationToken::new())
}

fn no_rules() -> faultlab_proxy::rules::SharedRules {
    RuleSet::new(RulesFile::default()).shared()
}

fn call(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "ping", "arguments": {}}})
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}})
}

/// A stdio front on an in-memory pipe: each message written, its one answer line read.
struct StdioClient {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl StdioClient {
    /// The front to `remote`, with what it records and the token that stops it.
    fn start(remote: Remote) -> (Self, Recorder, CancellationToken) {
        let (recorder, trajectory, stop) = trajectory(&remote);
        let (client, proxy_side) = tokio::io::duplex(1 << 16);
        let (input, output) = tokio::io::split(proxy_side);
        let run_stop = stop.clone();
        tokio::spawn(async move {
            stdio::run(ProxyOptions::default(), Endpoint(remote), no_rules(), trajectory, input, output, run_stop).await
        });
        let (reader, writer) = tokio::io::split(client);
        (Self { lines: BufReader::new(reader).lines(), writer }, recorder, stop)
    }

    async fn exchange(&mut self, message: Value) -> Value {
        self.writer.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line()).await;
        serde_json::from_str(&line.expect("an answer in time").unwrap().expect("the proxy is open")).unwrap()
    }
}

/// An HTTP front to `remote` on a port of its own; returns its URL, what it records and the token that stops it.
async fn http_front(remote: Remote) -> (String, Recorder, CancellationToken) {
    let (recorder, trajectory, stop) = trajectory(&remote);
    let url = harness::http_front(Backend::remote(remote).unwrap(), no_rules(), trajectory, stop.clone()).await.0;
    (url, recorder, stop)
}

async fn post(url: &str, message: &Value) -> (u16, Value) {
    let client = faultlab_client::tls::client_builder().build().unwrap();
    let response = harness::post(&client, url, message.to_string())
        .header("authorization", "Bearer the-client-own-token")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap())
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

/// The trajectory as it would be written, one JSON line per record.
fn written(recorder: &Recorder) -> String {
    recorder.records().iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect()
}

/// The upstream (its certificate signed by `signed`) and the proxy's view of it (trusting `trusted`).
async fn setup(signed: &Pki, trusted: &Pki) -> (Upstream, Remote, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let upstream = tls_upstream(signed).await;
    let remote = remote(&upstream.url, &trusted.ca_pem, &dir);
    (upstream, remote, dir)
}

/// The proxy trusts the CA that signed the upstream's certificate.
async fn trusted() -> (Upstream, Remote, tempfile::TempDir) {
    let pki = pki("faultlab test CA");
    setup(&pki, &pki).await
}

/// The proxy trusts another CA than the one that signed the upstream's certificate.
async fn untrusted() -> (Upstream, Remote, tempfile::TempDir) {
    setup(&pki("the upstream's CA"), &pki("another CA")).await
}

/// The reply came through untouched (the wire is not redacted: the client gets the upstream's echo as sent), the
/// user's headers reached the upstream, and the trajectory holds the credential only redacted.
fn assert_relayed_and_redacted(reply: &Value, upstream: &Upstream, recorder: &Recorder) {
    assert_eq!(text(reply), format!("pong; you sent Bearer {TOKEN}"));
    let seen = lock(&upstream.seen);
    assert!(!seen.is_empty(), "the upstream was reached");
    for headers in seen.iter() {
        assert_eq!(headers["authorization"], format!("Bearer {TOKEN}").as_str(), "the user's header wins");
        assert_eq!(headers["x-team"], "lab");
    }
    let written = written(recorder);
    assert!(!written.contains(TOKEN), "the credential is recorded only redacted: {written}");
    assert!(written.contains("pong; you sent [redacted]"), "{written}");
}

#[tokio::test]
async fn a_trusted_https_upstream_is_relayed_by_the_stdio_front_with_the_headers_and_no_secret_recorded() {
    let (upstream, remote, _dir) = trusted().await;
    let (mut client, recorder, stop) = StdioClient::start(remote);

    assert_eq!(client.exchange(initialize()).await["result"]["serverInfo"]["name"], "tls-upstream");
    let reply = client.exchange(call(1)).await;
    stop.cancel();
    assert_relayed_and_redacted(&reply, &upstream, &recorder);
}

#[tokio::test]
async fn a_trusted_https_upstream_is_relayed_by_the_http_front_with_the_headers_and_no_secret_recorded() {
    let (upstream, remote, _dir) = trusted().await;
    let (front, recorder, stop) = http_front(remote).await;

    let (status, reply) = post(&front, &call(1)).await;
    stop.cancel();
    assert_eq!(status, 200);
    assert_relayed_and_redacted(&reply, &upstream, &recorder);
}

/// The transport event the failed request left in the trajectory.
fn failure_event(recorder: &Recorder) -> String {
    let records = recorder.records();
    let detail = records.iter().find_map(|r| match &r.event {
        Event::Transport { request_id: Some(id), detail: Some(detail), .. } if *id == json!(1) => Some(detail.clone()),
        _ => None,
    });
    detail.unwrap_or_else(|| panic!("a transport event for request 1: {}", written(recorder)))
}

fn assert_names_the_cause(message: &str) {
    assert!(message.contains("UnknownIssuer") && message.contains("--upstream-ca"), "{message}");
    assert!(message.contains("https://127.0.0.1:"), "names the upstream: {message}");
    assert!(!message.contains(TOKEN), "{message}");
}

/// An untrusted upstream: the error `reply` and the trajectory's transport event name the cause, and no request
/// crossed the connection.
fn assert_refused(reply: &Value, recorder: &Recorder, upstream: &Upstream) {
    assert_names_the_cause(reply["error"]["message"].as_str().unwrap());
    assert_names_the_cause(&failure_event(recorder));
    assert!(lock(&upstream.seen).is_empty(), "no request crossed an untrusted connection");
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_json_rpc_error_naming_the_cause_on_the_stdio_front() {
    let (upstream, remote, _dir) = untrusted().await;
    let (mut client, recorder, stop) = StdioClient::start(remote);

    let reply = client.exchange(call(1)).await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["error"]["code"], -32603);
    assert_refused(&reply, &recorder, &upstream);
    stop.cancel();
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_502_naming_the_cause_on_the_http_front() {
    let (upstream, remote, _dir) = untrusted().await;
    let (front, recorder, stop) = http_front(remote).await;

    let (status, reply) = post(&front, &call(1)).await;
    assert_eq!(status, 502);
    assert_eq!(reply["id"], 1, "the error answers the request it is for");
    assert_refused(&reply, &recorder, &upstream);
    stop.cancel();
}

#[tokio::test]
async fn an_upstream_that_hangs_up_after_the_handshake_is_a_broken_answer_and_a_transport_event_on_the_http_front() {
    let pki = pki("faultlab test CA");
    let dir = tempfile::tempdir().unwrap();
    let upstream = tls_upstream_that(&pki, Behaviour::Hangup).await;
    let remote = remote(&upstream.url, &pki.ca_pem, &dir);
    let (front, recorder, stop) = http_front(remote).await;

    // The client sees what it would see from the upstream directly: the answer breaks off.
    let client = faultlab_client::tls::client_builder().build().unwrap();
    let sent = harness::post(&client, &front, call(1).to_string()).timeout(Duration::from_secs(10)).send().await;
    let body = match sent {
        Ok(response) => response.bytes().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(body.is_err(), "the answer breaks off");
    let detail = failure_event(&recorder);
    assert!(detail.contains("broke the connection") && detail.contains("https://127.0.0.1:"), "{detail}");
    stop.cancel();
}
