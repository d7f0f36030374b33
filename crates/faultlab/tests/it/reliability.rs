//! The HTTP fronts under hostile or careless clients: slow connections, oversized declared bodies, cross-origin
//! control writes, duplicate headers, session floods, SIGTERM with a request open, and a stdio child behind the
//! bridge that answers oddly. Every front is the real binary on a real socket; timeouts are made small by flags,
//! so each test takes well under 2 s.

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{BIN, Lab, http_client, mcp_post};
use std::process::Stdio;

/// How long a test waits for something that should happen promptly (not a synchronising sleep).
const PATIENCE: Duration = Duration::from_secs(5);

fn authority(url: &str) -> String {
    url.trim_start_matches("http://").split('/').next().unwrap().to_owned()
}

/// Sends raw bytes and reads until the server closes or `PATIENCE` passes; returns what came back.
async fn raw(url: &str, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(authority(url)).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// The status line's code of a raw answer (0 when nothing came).
fn status_of(answer: &str) -> u16 {
    answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "reliability", "version": "1"}})
}

fn ping_body(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "ping", "arguments": {}, "_meta": meta()}})
        .to_string()
}

/// A 2026-07-28 `tools/call` of `tool` (the body must call the same tool: the server refuses a mismatch).
fn modern_post(http: &reqwest::Client, url: &str, tool: &str, body: String) -> reqwest::RequestBuilder {
    mcp_post(http, url, body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
}

fn legacy_post(http: &reqwest::Client, url: &str, body: &Value, session: Option<&str>) -> reqwest::RequestBuilder {
    let request = mcp_post(http, url, body.to_string());
    match session {
        Some(sid) => request.header("mcp-session-id", sid).header("mcp-protocol-version", "2025-11-25"),
        None => request,
    }
}

fn initialize(id: i64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "reliability", "version": "1"}}})
}

/// The JSON-RPC messages of a response body (JSON, or the `data` lines of SSE).
fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str(body) {
        return vec![value];
    }
    body.lines().filter_map(|l| l.strip_prefix("data:")).filter_map(|d| serde_json::from_str(d.trim()).ok()).collect()
}

// ---------- slow clients ----------

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_within_the_header_timeout() {
    let (_upstream, upstream) = Lab::serve(&[]).await;
    for front in ["serve", "bridge", "proxy", "control"] {
        let (_lab, url) = match front {
            "serve" => Lab::serve(&["--header-timeout", "0.3"]).await,
            "bridge" => Lab::bridge(&["--header-timeout", "0.3"], &[BIN, "serve"]).await,
            "proxy" => {
                let args = ["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream, "--header-timeout", "0.3"];
                let lab = Lab::start(&args, "faultlab: proxy listening at ").await;
                let url = lab.after("faultlab: proxy listening at ");
                (lab, url)
            }
            _ => control(&["--header-timeout", "0.3"]).await,
        };
        let started = Instant::now();
        let answer = raw(&url, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
        let held = started.elapsed();
        assert!(held < Duration::from_millis(1500), "{front}: a slow client held its connection for {held:?}");
        assert!(!answer.contains("200 OK"), "{front}: {answer}");
    }
}

#[tokio::test]
async fn many_slow_clients_do_not_lock_out_a_legitimate_one() {
    let (_lab, url) = Lab::serve(&["--max-connections", "16"]).await;
    let mut slow = Vec::new();
    for _ in 0..64 {
        let mut stream = TcpStream::connect(authority(&url)).await.unwrap();
        stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
        slow.push(stream);
    }
    let http = http_client();
    let started = Instant::now();
    let answer = tokio::time::timeout(PATIENCE, modern_post(&http, &url, "ping", ping_body(1)).send()).await;
    let response = answer.expect("the legitimate client got no answer").unwrap();
    assert_eq!(response.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_stalled_body_gets_408() {
    let (_lab, url) = Lab::serve(&["--body-timeout", "0.3"]).await;
    let started = Instant::now();
    let answer = raw(
        &url,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .await;
    assert_eq!(status_of(&answer), 408, "{answer}");
    assert!(started.elapsed() < Duration::from_millis(1500));
}

#[tokio::test]
async fn a_declared_over_limit_body_is_refused_before_it_arrives() {
    let (_server, upstream) = Lab::serve(&[]).await;
    let proxy = Lab::start(&["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream], "faultlab: proxy").await;
    let proxied = proxy.after("faultlab: proxy listening at ");
    let (_control, rules) = control(&[]).await;
    for url in [upstream, proxied, rules] {
        let path = url.trim_start_matches("http://").split_once('/').unwrap().1.to_owned();
        let head = format!(
            "POST /{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
Content-Length: 100000000\r\n\r\n"
        );
        let answer = raw(&url, head.as_bytes()).await;
        assert_eq!(status_of(&answer), 413, "{url}: {answer}");
    }
}

// ---------- shutdown ----------

#[tokio::test]
async fn sigterm_with_a_hang_open_ends_within_the_grace() {
    let (_server, upstream) = Lab::serve(&[]).await;
    let proxy = Lab::start(
        &["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream, "--shutdown-grace", "0.3"],
        "faultlab: proxy",
    )
    .await;
    let url = proxy.after("faultlab: proxy listening at ");
    let http = http_client();
    let hang = ping_body(1).replace("\"ping\"", "\"hang\"");
    let open = tokio::spawn(modern_post(&http, &url, "hang", hang).send());
    // The request is open once the upstream has it: wait for the proxy to be holding it.
    let probe = modern_post(&http, &url, "ping", ping_body(2)).send().await.unwrap();
    assert_eq!(probe.status(), 200, "the proxy answers other requests while the hang is held");
    ends_within_the_grace(proxy, open).await;
}

#[tokio::test]
async fn serve_with_a_hang_open_ends_within_the_grace() {
    let (lab, url) = Lab::serve(&["--shutdown-grace", "0.3"]).await;
    let http = http_client();
    let sid = {
        let response = legacy_post(&http, &url, &initialize(1, "2025-11-25"), None).send().await.unwrap();
        response.headers()["mcp-session-id"].to_str().unwrap().to_owned()
    };
    let hang = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang", "arguments": {}}});
    // The answer's stream opens (its priming event) and its message never comes: the request stays open.
    let open = tokio::spawn(legacy_post(&http, &url, &hang, Some(&sid)).send());
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let pong = legacy_post(&http, &url, &ping, Some(&sid)).send().await.unwrap();
    assert_eq!(pong.status(), 200);
    ends_within_the_grace(lab, open).await;
}

/// Sends SIGTERM to `lab` (started with `--shutdown-grace 0.3`) while the request `open` hangs: it must exit
/// within 1.5 s, the grace and some slack, not wait on the hang; and the hang must have been open until then,
/// its connection closed with no JSON-RPC answer (an answer would mean the request was refused, not held; a
/// 2025-11-25 stream may have opened with its priming event).
async fn ends_within_the_grace(mut lab: Lab, open: tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>) {
    lab.terminate();
    let took = lab.exit_time().await;
    assert!(took < Duration::from_millis(1500), "faultlab {:?} took {took:?} to exit with a hang open", lab.banner);
    if let Ok(answer) = open.await.unwrap() {
        let status = answer.status();
        let body = answer.text().await.unwrap_or_default();
        assert!(!body.contains("jsonrpc"), "the hang was answered instead of held: {status} {body}");
    }
}

// ---------- headers ----------

#[tokio::test]
async fn duplicate_host_or_origin_and_foreign_absolute_targets_are_refused() {
    let (_lab, url) = Lab::serve(&[]).await;
    let body = ping_body(1);
    let tail = format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: ping\r\nConnection: close\r\n\
Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let ok = raw(&url, format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{tail}").as_bytes()).await;
    assert_eq!(status_of(&ok), 200, "{ok}");
    for head in [
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n",
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://localhost\r\nOrigin: http://evil.example\r\n",
        "POST http://evil.example/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",
    ] {
        let answer = raw(&url, format!("{head}{tail}").as_bytes()).await;
        assert!(matches!(status_of(&answer), 400 | 403), "{head:?} was answered: {answer}");
    }
}

#[tokio::test]
async fn a_non_ascii_session_id_is_malformed() {
    let (_lab, url) = Lab::serve(&[]).await;
    let http = http_client();
    let garbled = reqwest::header::HeaderValue::from_bytes(b"caf\xe9").unwrap();
    let response =
        modern_post(&http, &url, "ping", ping_body(1)).header("mcp-session-id", garbled).send().await.unwrap();
    assert_eq!(response.status(), 400);
}

// ---------- sessions ----------

#[tokio::test]
async fn a_second_initialize_on_a_session_is_refused_and_the_version_kept() {
    let (_lab, url) = Lab::serve(&[]).await;
    let http = http_client();
    let response = legacy_post(&http, &url, &initialize(1, "2025-11-25"), None).send().await.unwrap();
    let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let again = legacy_post(&http, &url, &initialize(2, "2025-03-26"), Some(&sid)).send().await.unwrap();
    let text = again.text().await.unwrap();
    let reply = messages(&text).into_iter().next().unwrap_or_default();
    assert!(reply["error"].is_object(), "a second initialize must be refused: {text}");
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let pong = legacy_post(&http, &url, &ping, Some(&sid)).send().await.unwrap().text().await.unwrap();
    assert!(messages(&pong)[0]["result"].is_object(), "the session still speaks its version: {pong}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_sessions_do_not_block_new_clients() {
    let (_lab, url) = Lab::serve(&["--session-idle-timeout", "0.5"]).await;
    let http = http_client();
    let flood = (0..128).map(|i| {
        let request = legacy_post(&http, &url, &initialize(i, "2025-11-25"), None);
        async move { request.send().await.unwrap().status().as_u16() }
    });
    let statuses = futures::future::join_all(flood).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let deadline = Instant::now() + Duration::from_millis(1500);
    loop {
        let status = legacy_post(&http, &url, &initialize(501, "2025-11-25"), None).send().await.unwrap().status();
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "abandoned sessions still block new clients");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------- the control API ----------

pub(crate) async fn control(extra: &[&str]) -> (Lab, String) {
    let mut args = vec!["proxy", "--control", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--listen", "127.0.0.1:0", "--", "sh", "-c", "cat > /dev/null"]);
    let lab = Lab::start(&args, "faultlab: proxy listening at ").await;
    let url = lab.after("faultlab: control API at ");
    (lab, url)
}

const RULE: &str = r#"{"name": "r1", "match": {"tool": "ping"}, "fault": {"type": "timeout"}}"#;

#[tokio::test]
async fn the_control_api_refuses_cross_origin_and_non_json_writes() {
    let (_lab, rules) = control(&[]).await;
    let reset = rules.replace("/rules", "/reset");
    let http = http_client();
    let cross = http.post(&rules).header("origin", "http://evil.example").header("content-type", "text/plain");
    assert_eq!(cross.body(RULE).send().await.unwrap().status(), 403);
    let cross_reset = http.post(&reset).header("origin", "http://evil.example").send().await.unwrap();
    assert_eq!(cross_reset.status(), 403);
    let plain = http.post(&rules).header("content-type", "text/plain").body(RULE).send().await.unwrap();
    assert_eq!(plain.status(), 415);
    let json = http.post(&rules).header("content-type", "application/json").body(RULE).send().await.unwrap();
    assert_eq!(json.status(), 201);
    let listed: Value = http.get(&rules).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["rules"].as_array().unwrap().len(), 1, "only the same-origin JSON write took effect");
}

#[tokio::test]
async fn a_control_token_is_required_when_set() {
    let (_lab, rules) = control(&["--control-token", "s3cret-token-0123456789"]).await;
    let http = http_client();
    assert_eq!(http.get(&rules).send().await.unwrap().status(), 401);
    let wrong = http.get(&rules).bearer_auth("guess").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let add =
        http.post(&rules).bearer_auth("s3cret-token-0123456789").header("content-type", "application/json").body(RULE);
    assert_eq!(add.send().await.unwrap().status(), 201);

    let (lab, rules) = control(&["--control-token", "auto"]).await;
    let token = lab.after("faultlab: control token ");
    assert!(token.len() >= 32, "{token}");
    assert_eq!(http.get(&rules).send().await.unwrap().status(), 401);
    assert_eq!(http.get(&rules).bearer_auth(&token).send().await.unwrap().status(), 200);
}

// ---------- the bridge ----------

#[tokio::test]
async fn the_bridge_answers_an_id_less_error_and_times_out_a_silent_child() {
    let idless =
        r#"while read -r line; do echo '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}'; done"#;
    let (_lab, url) = Lab::bridge(&[], &["sh", "-c", idless]).await;
    let http = http_client();
    let response = tokio::time::timeout(PATIENCE, mcp_post(&http, &url, ping_body(1)).send()).await;
    let text = response.expect("the POST hung").unwrap().text().await.unwrap();
    assert_eq!(messages(&text)[0]["error"]["code"], -32600, "{text}");

    let (_lab, url) = Lab::bridge(&["--request-timeout", "0.3"], &["sh", "-c", "cat > /dev/null"]).await;
    let started = Instant::now();
    let response = tokio::time::timeout(PATIENCE, mcp_post(&http, &url, ping_body(7)).send()).await;
    let text = response.expect("the POST hung").unwrap().text().await.unwrap();
    let reply = &messages(&text)[0];
    assert_eq!(reply["id"], 7, "{text}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("timed out"), "{text}");
    assert!(started.elapsed() < Duration::from_millis(1500));
}

#[tokio::test]
async fn the_bridge_answers_concurrent_requests_with_equal_ids() {
    let (_lab, url) = Lab::bridge(&[], &[BIN, "serve"]).await;
    let http = http_client();
    let delayed = |ms: u64| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "delay", "arguments": {"delayMs": ms}, "_meta": meta()}});
        mcp_post(&http, &url, body.to_string()).send()
    };
    let (a, b) = tokio::join!(delayed(200), delayed(100));
    for response in [a.unwrap(), b.unwrap()] {
        assert_eq!(response.status(), 200);
        let reply = messages(&response.text().await.unwrap()).remove(0);
        assert_eq!(reply["id"], 1, "the client's own id comes back");
        assert!(reply["result"].is_object(), "{reply}");
    }
}

#[tokio::test]
async fn the_bridge_checks_headers_like_serve() {
    let (_lab, url) = Lab::bridge(&[], &["sh", "-c", "cat > /dev/null"]).await;
    let http = http_client();
    let plain =
        http.post(&url).header("content-type", "text/plain").header("accept", "application/json, text/event-stream");
    assert_eq!(plain.body(ping_body(1)).send().await.unwrap().status(), 415);
    let no_accept = http.post(&url).header("content-type", "application/json").header("accept", "text/html");
    assert_eq!(no_accept.body(ping_body(1)).send().await.unwrap().status(), 406);
    let origin = mcp_post(&http, &url, ping_body(1)).header("origin", "http://evil.example");
    assert_eq!(origin.send().await.unwrap().status(), 403);
}

// ---------- bad input ----------

#[test]
fn bad_bounds_are_refused_naming_the_flag() {
    for (args, flag) in [
        (&["serve", "--transport", "http", "--shutdown-grace=-1"][..], "--shutdown-grace"),
        (&["serve", "--transport", "http", "--header-timeout", "soon"][..], "--header-timeout"),
        (&["serve", "--session-idle-timeout", "5"][..], "--session-idle-timeout"),
        (&["proxy", "--control", "127.0.0.1:0", "--control-token", "short", "--", "true"][..], "--control-token"),
        (&["proxy", "--request-timeout", "0", "--", "true"][..], "--request-timeout"),
    ] {
        let output = std::process::Command::new(BIN).args(args).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}
