//! `faultlab proxy --listen ... --upstream URL`: the HTTP front in front of `faultlab serve --transport http`,
//! driven by the reference client in both eras.

use crate::common::{BIN, Lab, exits_within, http_client, pidfd, spawn};
use faultlab_client::{Connection, Era, ErrorKind, Outcome, Target};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

const SETUP: Duration = Duration::from_secs(10);
const DEADLINE: Duration = Duration::from_secs(5);

/// Starts `faultlab` with `args` and returns it with the URL it printed on stderr after `marker`.
async fn start(args: &[&str], marker: &str) -> (Lab, String) {
    let lab = Lab::start(args, marker).await;
    let url = lab.after(marker);
    (lab, url)
}

/// An upstream server and a proxy in front of it with `extra` proxy arguments; returns the proxy's target.
async fn proxied(extra: &[&str]) -> (Vec<Lab>, Target) {
    let (server, upstream) = Lab::serve(&[]).await;
    let mut args = vec!["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream];
    args.extend_from_slice(extra);
    let (proxy, url) = start(&args, "faultlab: proxy listening at ").await;
    (vec![server, proxy], Target::Http { url, headers: Default::default() })
}

#[tokio::test]
async fn without_rules_both_eras_pass_through_with_the_upstreams_own_faults() {
    let (_children, target) = proxied(&[]).await;
    for era in [Era::Modern, Era::Legacy] {
        let connection = Connection::open(&target, era, SETUP).await.unwrap();
        assert_eq!(connection.call_tool("ping", json!({}), DEADLINE).await.outcome, Outcome::Success);
        let dup = connection.call_tool("duplicate_response", json!({}), DEADLINE).await;
        connection.settle(&dup.request_id, DEADLINE).await;
        assert_eq!(connection.responses_for(&dup.request_id), 2, "the upstream's duplicate arrives through the proxy");
        let cut = connection.call_tool("disconnect", json!({}), DEADLINE).await;
        assert_eq!(cut.outcome, Outcome::TransportLoss, "an aborted upstream stream reaches the client");
        assert_eq!(connection.call_tool("ping", json!({}), DEADLINE).await.outcome, Outcome::Success);
        connection.close().await;
    }
}

#[tokio::test]
async fn instead_rules_answer_with_a_real_http_status() {
    let rule = "{match: {tool: ping}, mode: instead, fault: {type: http_status, status: 429, retry_after_sec: 2}}";
    let (_children, target) = proxied(&["--fault", rule]).await;
    let connection = Connection::open(&target, Era::Modern, SETUP).await.unwrap();
    let limited = connection.call_tool("ping", json!({}), DEADLINE).await;
    assert_eq!((limited.error_kind, limited.http_status), (Some(ErrorKind::HttpStatus), Some(429)));
    assert_eq!(limited.error.as_ref().unwrap()["retryAfter"], "2");
    let other = connection.call_tool("delay", json!({"delayMs": 1}), DEADLINE).await;
    assert_eq!(other.outcome, Outcome::Success, "other tools pass");
}

#[tokio::test]
async fn after_rules_fault_the_upstreams_reply_and_a_timeout_holds_the_request_open() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let (_children, target) = proxied(&[
        "--record",
        record.to_str().unwrap(),
        "--fault",
        "{match: {tool: delay}, fault: {type: malformed, variant: missing-jsonrpc}}",
        "--fault",
        "{match: {tool: hang_not_used}, fault: {type: duplicate}}",
        "--fault",
        "{match: {tool: ping}, fault: {type: timeout}}",
    ])
    .await;
    for era in [Era::Modern, Era::Legacy] {
        let connection = Connection::open(&target, era, SETUP).await.unwrap();
        let bad = connection.call_tool("delay", json!({"delayMs": 1}), DEADLINE).await;
        assert_eq!(bad.error_kind, Some(ErrorKind::InvalidResponse), "{bad:?}");
        let held = connection.call_tool("ping", json!({}), Duration::from_millis(400)).await;
        assert_eq!(held.outcome, Outcome::Timeout, "the reply is withheld and the request stays open: {held:?}");
        connection.close().await;
    }
    let events: Vec<Value> =
        std::fs::read_to_string(&record).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let swallowed = events
        .iter()
        .filter(|e| e["event"] == "frame" && e["direction"] == "server_to_client" && e["fault"] == "timeout")
        .count();
    assert_eq!(swallowed, 2, "one per era, recorded with its rule");
    assert!(events.iter().any(|e| e["event"] == "frame" && e["rule"] == "cli-1" && e["executed"] == true));
}

#[tokio::test]
async fn the_front_checks_host_and_path_like_serve() {
    let (_children, target) = proxied(&[]).await;
    let Target::Http { url, .. } = target else { unreachable!() };
    let client = http_client();
    let wrong_host = client.post(&url).header("host", "evil.example").body("{}").send().await.unwrap();
    assert_eq!(wrong_host.status(), 403);
    let wrong_path = client.post(url.replace("/mcp", "/other")).body("{}").send().await.unwrap();
    assert_eq!(wrong_path.status(), 404);
}

/// A stdio client in front of the proxy, the proxy in front of an HTTP server.
mod stdio_front {
    use super::*;
    use tokio::io::{AsyncWriteExt, BufReader};

    struct Lines {
        stdin: tokio::process::ChildStdin,
        stdout: BufReader<tokio::process::ChildStdout>,
        _upstream: Lab,
        _proxy: tokio::process::Child,
    }

    impl Lines {
        async fn start(extra: &[&str]) -> Self {
            let (server, upstream) = Lab::serve(&[]).await;
            let args = [&["proxy", "--upstream", &upstream], extra].concat();
            let mut proxy = spawn(&args, [Stdio::piped(), Stdio::piped(), Stdio::null()]);
            let stdin = proxy.stdin.take().unwrap();
            let stdout = BufReader::new(proxy.stdout.take().unwrap());
            Self { stdin, stdout, _upstream: server, _proxy: proxy }
        }

        async fn send(&mut self, value: Value) {
            let mut line = serde_json::to_vec(&value).unwrap();
            line.push(b'\n');
            self.stdin.write_all(&line).await.unwrap();
        }

        async fn recv(&mut self) -> Value {
            let mut line = String::new();
            tokio::time::timeout(SETUP, self.stdout.read_line(&mut line)).await.unwrap().unwrap();
            serde_json::from_str(&line).unwrap()
        }
    }

    fn call(id: i64, tool: &str, args: Value) -> Value {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
    }

    #[tokio::test]
    async fn a_legacy_session_and_modern_requests_work_over_a_stdio_front() {
        let rule = "{match: {tool: delay}, mode: instead, fault: {type: http_status, status: 503}}";
        let mut c = Lines::start(&["--fault", rule]).await;
        c.send(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
            "capabilities":{},"clientInfo":{"name":"t","version":"1"}}}))
            .await;
        assert_eq!(c.recv().await["result"]["protocolVersion"], "2025-11-25");
        c.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
        c.send(call(1, "duplicate_response", json!({}))).await;
        let (a, b) = (c.recv().await, c.recv().await);
        assert_eq!((a["id"].clone(), b["id"].clone()), (json!(1), json!(1)), "the upstream's duplicate comes through");
        c.send(call(2, "delay", json!({"delayMs": 1}))).await;
        assert_eq!(c.recv().await["error"]["data"]["httpStatus"], 503, "the rule answered instead");
        c.send(call(3, "disconnect", json!({}))).await;
        let lost = c.recv().await;
        assert_eq!(lost["id"], 3);
        assert!(lost["error"]["message"].as_str().unwrap().contains("lost"), "{lost}");
        let mut modern = call(4, "ping", json!({}));
        modern["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}});
        c.send(modern).await;
        assert_eq!(c.recv().await["result"]["isError"], false);
    }
}

#[tokio::test]
async fn an_http_front_bridges_to_a_stdio_upstream() {
    let rule = "{match: {tool: ping}, fault: {type: duplicate}}";
    let (_proxy, url) = start(
        &["proxy", "--listen", "127.0.0.1:0", "--fault", rule, "--", BIN, "serve"],
        "faultlab: proxy listening at ",
    )
    .await;
    let target = Target::Http { url, headers: Default::default() };
    let connection = Connection::open(&target, Era::Legacy, SETUP).await.unwrap();
    let delay = connection.call_tool("delay", json!({"delayMs": 1}), DEADLINE).await;
    assert_eq!(delay.outcome, Outcome::Success);
    let dup = connection.call_tool("ping", json!({}), DEADLINE).await;
    connection.settle(&dup.request_id, DEADLINE).await;
    assert_eq!(connection.responses_for(&dup.request_id), 2, "the rule's duplicate reaches the HTTP client");
    let modern = Connection::open(&target, Era::Modern, SETUP).await.unwrap();
    assert_eq!(modern.call_tool("delay", json!({"delayMs": 1}), DEADLINE).await.outcome, Outcome::Success);
}

#[tokio::test]
async fn the_control_api_changes_rules_while_traffic_flows() {
    let (_server, upstream) = Lab::serve(&[]).await;
    let args = ["proxy", "--control", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--upstream", &upstream];
    let mut proxy = spawn(&args, [Stdio::inherit(), Stdio::inherit(), Stdio::piped()]);
    let mut stderr = tokio::io::BufReader::new(proxy.stderr.take().unwrap());
    let (mut control, mut url) = (String::new(), String::new());
    while control.is_empty() || url.is_empty() {
        let mut line = String::new();
        tokio::time::timeout(SETUP, stderr.read_line(&mut line)).await.unwrap().unwrap();
        if let Some(rest) = line.trim().strip_prefix("faultlab: control API at ") {
            control = rest.to_owned();
        } else if let Some(rest) = line.trim().strip_prefix("faultlab: proxy listening at ") {
            url = rest.split(' ').next().unwrap().to_owned();
        }
    }
    let target = Target::Http { url, headers: Default::default() };
    let connection = Connection::open(&target, Era::Modern, SETUP).await.unwrap();
    assert_eq!(connection.call_tool("ping", json!({}), DEADLINE).await.outcome, Outcome::Success);

    let http = http_client();
    let rule = json!({"name": "outage", "match": {"tool": "ping"}, "mode": "instead",
        "fault": {"type": "http_status", "status": 503}});
    let json_post = || http.post(&control).header("content-type", "application/json");
    let added = json_post().body(rule.to_string()).send().await.unwrap();
    assert_eq!(added.status(), 201);
    let limited = connection.call_tool("ping", json!({}), DEADLINE).await;
    assert_eq!(limited.http_status, Some(503), "the new rule applies at once");
    assert_eq!(json_post().body(rule.to_string()).send().await.unwrap().status(), 409);
    let listed: Value =
        serde_json::from_slice(&http.get(&control).send().await.unwrap().bytes().await.unwrap()).unwrap();
    assert_eq!(listed["rules"][0]["name"], "outage");

    let bad = json_post().body(r#"{"name":"x","fault":{"type":"latency","delay_ms":1},"colour":1}"#).send();
    let bad = bad.await.unwrap();
    assert_eq!(bad.status(), 400);
    assert!(String::from_utf8_lossy(&bad.bytes().await.unwrap()).contains("colour"));
    let forged = http.get(&control).header("host", "evil.example").send().await.unwrap();
    assert_eq!(forged.status(), 403);

    assert_eq!(http.delete(format!("{control}/outage")).send().await.unwrap().status(), 204);
    assert_eq!(connection.call_tool("ping", json!({}), DEADLINE).await.outcome, Outcome::Success);
    assert_eq!(http.delete(format!("{control}/outage")).send().await.unwrap().status(), 404);
    let reset = http.post(control.replace("/rules", "/reset")).header("content-type", "application/json");
    let reset = reset.send().await.unwrap();
    assert_eq!(reset.status(), 204);
}

#[tokio::test]
async fn out_of_order_over_http_releases_the_held_reply_after_the_next_one() {
    let (_children, target) =
        // Matched by argument, not by arrival: the two POSTs may reach the proxy in either order.
        proxied(&["--fault", "{match: {tool: delay, argument: {pointer: /delayMs, equals: 1}}, fault: {type: out_of_order, max_hold_ms: 5000}}"]).await;
    let connection = Connection::open(&target, Era::Legacy, SETUP).await.unwrap();
    // The server answers the first call (1 ms) long before the second (200 ms); held, the first arrives after.
    let first = connection.call_tool("delay", json!({"delayMs": 1}), DEADLINE);
    let second = connection.call_tool("delay", json!({"delayMs": 200}), DEADLINE);
    let (a, b) = tokio::join!(first, second);
    assert_eq!((a.outcome, b.outcome), (Outcome::Success, Outcome::Success));
    // Held until the 200 ms reply had been written (so never sooner), and released by it, not by the 5 s limit.
    // (Which of the two the client files first is a race between its two stream readers, so it is not asserted.)
    assert!(a.duration_ms >= 200.0 && a.duration_ms < 4000.0, "first reply after {} ms", a.duration_ms);
}

/// What a raw upstream received: the request head (lower-cased header names) and the body.
async fn one_raw_exchange(listener: tokio::net::TcpListener, answer: &'static str) -> (String, Vec<u8>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0, "the proxy closed before a whole request head");
        seen.extend_from_slice(&buf[..n]);
        if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8(seen[..head_end].to_vec()).unwrap().to_ascii_lowercase();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
    while seen.len() < head_end + length {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0, "the proxy closed before the whole body");
        seen.extend_from_slice(&buf[..n]);
    }
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-upstream-marker: kept\r\ncontent-length: {}\r\n\r\n{answer}",
        answer.len()
    );
    socket.write_all(response.as_bytes()).await.unwrap();
    (head, seen[head_end..].to_vec())
}

#[tokio::test]
async fn headers_query_and_bodies_pass_unchanged_and_host_becomes_the_upstreams() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = format!("http://{}/mcp", listener.local_addr().unwrap());
    let answer = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"extra":{"b":1,"a":2}}}"#;
    let exchange = tokio::spawn(one_raw_exchange(listener, answer));
    let (_proxy, url) =
        start(&["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream], "faultlab: proxy listening at ").await;
    // Unusual spacing and key order: the body must arrive byte for byte.
    let body = r#"{"jsonrpc":"2.0", "id":7,"method":"tools/call","params":{"name":"echo","arguments":{"z":1,"a":2}}}"#;
    let response = http_client()
        .post(format!("{url}?probe=1"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", "session-42")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(body)
        .send()
        .await
        .unwrap();
    let (head, received) = tokio::time::timeout(SETUP, exchange).await.unwrap().unwrap();
    assert!(head.starts_with("post /mcp?probe=1 http/1.1\r\n"), "{head}");
    let upstream_host = upstream.trim_start_matches("http://").trim_end_matches("/mcp");
    assert!(head.contains(&format!("\r\nhost: {upstream_host}\r\n")), "Host is the upstream's: {head}");
    for header in
        ["mcp-protocol-version: 2025-11-25", "mcp-session-id: session-42", "mcp-method: tools/call", "mcp-name: echo"]
    {
        assert!(head.contains(&format!("\r\n{header}\r\n")), "{header} forwarded: {head}");
    }
    assert_eq!(received, body.as_bytes(), "the request body arrives byte for byte");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-upstream-marker"], "kept");
    assert_eq!(response.text().await.unwrap(), answer, "the reply arrives byte for byte");
}

/// A stdio server that never reads stdin and ignores SIGTERM, with a helper in its group that ignores it too;
/// it writes both pids to named pipes once they run. Only SIGKILL to the group ends both.
const STUBBORN_BRIDGED: &str =
    r#"trap '' TERM; sleep 40 & echo $! > "$0/helper"; echo $$ > "$0/leader"; while :; do sleep 0.05; done"#;

/// A named pipe at `path` for a child to announce a pid on. Opened read-write, so that reading it waits for the
/// child's line instead of seeing EOF before the child has opened it.
fn announcement(path: &Path) -> BufReader<tokio::net::unix::pipe::Receiver> {
    use rustix::fs::{CWD, FileType, Mode, mknodat};
    mknodat(CWD, path, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).expect("mkfifo");
    BufReader::new(tokio::net::unix::pipe::OpenOptions::new().read_write(true).open_receiver(path).unwrap())
}

/// The pid a child announces on its named pipe (see [`announcement`]).
async fn announced(pipe: &mut BufReader<tokio::net::unix::pipe::Receiver>) -> i32 {
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(20), pipe.read_line(&mut line)).await.expect("a pid in time").unwrap();
    line.trim().parse().expect("a pid")
}

/// The HTTP front's bridge to a stdio server, stopped: its child and the helpers in its process group end with
/// the proxy, in the spec's order, within twice the shutdown grace.
#[tokio::test]
async fn sigterm_to_the_http_proxy_stops_a_stubborn_stdio_child_and_its_helper() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().to_str().unwrap();
    let args =
        ["proxy", "--listen", "127.0.0.1:0", "--shutdown-grace", "0.2", "--", "sh", "-c", STUBBORN_BRIDGED, folder];
    let (mut helper_pipe, mut leader_pipe) =
        (announcement(&dir.path().join("helper")), announcement(&dir.path().join("leader")));
    let (mut proxy, _url) = start(&args, "faultlab: proxy listening at ").await;
    let helper = announced(&mut helper_pipe).await;
    let leader = announced(&mut leader_pipe).await;
    // Opened while both run, so each wait below is for these very processes.
    let (helper_fd, leader_fd) = (pidfd(helper), pidfd(leader));

    let started = Instant::now();
    let pid = rustix::process::Pid::from_raw(proxy.child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status =
        tokio::time::timeout(Duration::from_secs(10), proxy.child.wait()).await.expect("exits in time").unwrap();
    let took = started.elapsed();
    assert_eq!(status.code(), Some(0));
    assert!(
        took < Duration::from_secs(5),
        "listener grace, then stdin close, 0.2 s, SIGTERM, 0.2 s, SIGKILL: {took:?}"
    );
    // A SIGKILL takes effect when the kernel next schedules the process: waited for, bounded by 2 s.
    assert!(exits_within(leader_fd, Duration::from_secs(2)).await, "the stdio child {leader} is gone");
    assert!(exits_within(helper_fd, Duration::from_secs(2)).await, "the helper {helper} in its process group is gone");
}

/// One POST of `message` (with `session` as `Mcp-Session-Id`, if any): the status, the session id the answer
/// gives out, and the JSON-RPC reply.
async fn exchange(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: Value,
) -> (u16, Option<String>, Value) {
    let mut post = crate::common::mcp_post(http, url, message.to_string());
    if let Some(session) = session {
        post = post.header("mcp-session-id", session);
    }
    let response = tokio::time::timeout(DEADLINE, post.send()).await.expect("answered in time").unwrap();
    let status = response.status().as_u16();
    let given = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let reply = serde_json::from_str(&text).unwrap_or_else(|_| {
        let data = text.lines().find_map(|l| l.strip_prefix("data:")).unwrap_or_else(|| panic!("{text}"));
        serde_json::from_str(data.trim()).unwrap()
    });
    (status, given, reply)
}

fn legacy_initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "sessions", "version": "1"}}})
}

fn tool_call(id: i64, tool: &str) -> Value {
    let arguments = if tool == "delay" { json!({"delayMs": 1}) } else { json!({}) };
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// A stdio server behind the HTTP front is a stateful Streamable HTTP server: each `initialize` gets a session id
/// and a server of its own (a stdio server accepts one `initialize`: two clients sharing one, the second was
/// refused), an id the front never gave out is 404, and a session `session_lifecycle` forgets is refused as the
/// variant says while a re-initialize gets a fresh, working server.
#[tokio::test]
async fn a_bridged_stdio_upstream_gives_each_initialize_a_session_and_a_server_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let forget = "{name: forget, match: {tool: delay, nth: 1}, fault: {type: session_lifecycle, variant: unknown_400}}";
    let restart = "{name: restart, match: {tool: delay, nth: 2}, fault: {type: session_lifecycle, variant: restart}}";
    let args = ["proxy", "--listen", "127.0.0.1:0", "--record", record.to_str().unwrap(), "--fault", forget];
    let mut args = args.to_vec();
    args.extend(["--fault", restart, "--", BIN, "serve"]);
    let (_proxy, url) = start(&args, "faultlab: proxy listening at ").await;
    let http = http_client();

    let (status, first, reply) = exchange(&http, &url, None, legacy_initialize(1)).await;
    assert_eq!(status, 200, "{reply}");
    let first = first.expect("the initialize's answer gives out a session id");
    assert!(reply["result"]["protocolVersion"].is_string(), "{reply}");
    let (status, second, reply) = exchange(&http, &url, None, legacy_initialize(1)).await;
    assert_eq!(status, 200, "a second client's initialize meets a server of its own: {reply}");
    let second = second.expect("a session id");
    assert_ne!(first, second);
    assert!(first.len() >= 32 && first.bytes().all(|b| b.is_ascii_graphic()), "{first}");
    let (_, _, again) = exchange(&http, &url, Some(&first), legacy_initialize(2)).await;
    assert!(again["error"].is_object(), "a session's own server was initialized once: {again}");

    let (status, _, reply) = exchange(&http, &url, Some(&first), tool_call(3, "ping")).await;
    assert_eq!((status, reply["id"].clone()), (200, json!(3)), "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let (status, _, reply) = exchange(&http, &url, Some("no-such-session"), tool_call(4, "ping")).await;
    assert_eq!((status, reply["error"]["code"].clone()), (404, json!(-32001)), "{reply}");

    // The first delay's reply arrives; then the session is forgotten (unknown_400) and its server stopped.
    let (status, _, reply) = exchange(&http, &url, Some(&first), tool_call(5, "delay")).await;
    assert_eq!(status, 200, "the faulted call itself is answered: {reply}");
    let (status, _, reply) = exchange(&http, &url, Some(&first), tool_call(6, "ping")).await;
    assert_eq!(status, 400, "a forgotten session, as unknown_400 says: {reply}");
    let (_, second_still, reply) = exchange(&http, &url, Some(&second), tool_call(7, "ping")).await;
    assert_eq!((second_still, reply["result"]["isError"].clone()), (None, json!(false)), "other sessions stay");

    let (status, third, reply) = exchange(&http, &url, None, legacy_initialize(8)).await;
    assert_eq!(status, 200, "a re-initialize gets a fresh server: {reply}");
    let third = third.expect("a new session id");
    let (status, _, reply) = exchange(&http, &url, Some(&third), tool_call(9, "ping")).await;
    assert_eq!((status, reply["result"]["isError"].clone()), (200, json!(false)), "{reply}");

    // A restart forgets every session the front gave out: 404 for each, and again a re-initialize works.
    let (status, _, _) = exchange(&http, &url, Some(&third), tool_call(10, "delay")).await;
    assert_eq!(status, 200);
    for session in [&second, &third] {
        let (status, _, reply) = exchange(&http, &url, Some(session), tool_call(11, "ping")).await;
        assert_eq!((status, reply["error"]["code"].clone()), (404, json!(-32001)), "{reply}");
    }
    let (status, fourth, _) = exchange(&http, &url, None, legacy_initialize(12)).await;
    assert_eq!(status, 200);
    let (status, _, reply) = exchange(&http, &url, fourth.as_deref(), tool_call(13, "ping")).await;
    assert_eq!((status, reply["result"]["isError"].clone()), (200, json!(false)), "{reply}");

    // A DELETE ends a session: its id is unknown from then on.
    let fourth = fourth.unwrap();
    let deleted = http.delete(&url).header("mcp-session-id", &fourth).send().await.unwrap();
    assert!(deleted.status().is_success(), "{deleted:?}");
    let (status, _, _) = exchange(&http, &url, Some(&fourth), tool_call(14, "ping")).await;
    assert_eq!(status, 404);

    let trajectory = std::fs::read_to_string(&record).unwrap();
    let ended = trajectory.lines().filter(|l| l.contains("a bridged session ended")).count();
    // first (forgotten), second and third (the restart), fourth (DELETE): each session's end is recorded.
    assert_eq!(ended, 4, "{trajectory}");
    // Every refused request has the error the client got in the trajectory: nothing it saw is missing from the
    // record. An unknown session's (4) is the bridged server's answer; a session a lifecycle rule forgot (6:
    // unknown_400; 11: restart) the proxy answers in the upstream's place (`injected`). (The last exchanges'
    // unchanged frames may still be in the writer's 5 ms batch: only earlier ones are looked at.)
    let events: Vec<Value> = trajectory.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (id, action) in [(4, "forwarded"), (6, "injected"), (11, "injected")] {
        let reply = events.iter().find(|e| e["direction"] == "server_to_client" && e["id"] == id);
        let reply = reply.unwrap_or_else(|| panic!("no reply to request {id} recorded: {trajectory}"));
        assert_eq!((&reply["action"], &reply["error"]), (&json!(action), &json!(true)), "{id}: {reply}");
    }
}

/// A 404 for a request made in a session, any request, tells a client the session is gone: it MUST start a new one
/// (2025-11-25, Session Management). The reference client did so after a `tools/call` only; a `tools/list`
/// answered 404 left it on the lost session, so every later listing failed too.
#[tokio::test]
async fn a_listing_answered_404_for_its_session_makes_the_reference_client_start_a_new_one() {
    let expire = "{match: {method: tools/list, nth: 1}, fault: {type: session_expired_in_flight}}";
    let (_proxy, url) = start(
        &["proxy", "--listen", "127.0.0.1:0", "--fault", expire, "--", BIN, "serve"],
        "faultlab: proxy listening at ",
    )
    .await;
    let target = Target::Http { url, headers: Default::default() };
    let connection = Connection::open(&target, Era::Legacy, SETUP).await.unwrap();
    let lost = connection.request_result("tools/list", json!({}), DEADLINE).await;
    assert!(lost.as_ref().is_err_and(|why| why.contains("404")), "{lost:?}");
    let listed = connection.request_result("tools/list", json!({}), DEADLINE).await.expect("listed on a new session");
    assert!(listed["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{listed}");
    assert_eq!(connection.call_tool("ping", json!({}), DEADLINE).await.outcome, Outcome::Success);
}

/// A rule timed at a resume, on the binary's HTTP front with a bridged stdio server: the call's stream is cut, its
/// first resume finds the session lost (404), as does every later request of it (the session's server stopped),
/// a new session is served, and the trajectory names the resume, the rule and the call.
#[tokio::test]
async fn a_session_lost_while_a_cut_stream_resumes_is_404_from_then_on_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let cut = "{name: cut, match: {tool: ping, nth: 1}, fault: {type: stream_cut, retry_ms: 0}}";
    let lost = "{name: lost, match: {tool: ping, nth: 1, at: resume}, fault: {type: session_expired_in_flight}}";
    let args = ["proxy", "--listen", "127.0.0.1:0", "--record", record.to_str().unwrap(), "--fault", cut];
    let mut args = args.to_vec();
    args.extend(["--fault", lost, "--", BIN, "serve"]);
    let (proxy, url) = start(&args, "faultlab: proxy listening at ").await;
    let http = http_client();
    let (_, session, _) = exchange(&http, &url, None, legacy_initialize(1)).await;
    let session = session.expect("a session id");
    let post =
        crate::common::mcp_post(&http, &url, tool_call(2, "ping").to_string()).header("mcp-session-id", &session);
    let cut = post.send().await.unwrap().text().await.unwrap();
    assert_eq!(cut, "id: 0-0\nretry: 0\ndata: \n\n", "primed, then cut before the reply");
    let resume = || {
        let get = http.get(&url).header("accept", "text/event-stream").header("mcp-session-id", &session);
        get.header("last-event-id", "0-0").send()
    };
    for attempt in ["the resume", "the resume again"] {
        let answer = resume().await.unwrap();
        assert_eq!(answer.status().as_u16(), 404, "{attempt}");
    }
    let (status, _, reply) = exchange(&http, &url, Some(&session), tool_call(3, "ping")).await;
    assert_eq!((status, reply["error"]["code"].clone()), (404, json!(-32001)), "{reply}");
    let (status, fresh, _) = exchange(&http, &url, None, legacy_initialize(4)).await;
    let (_, _, reply) = exchange(&http, &url, fresh.as_deref(), tool_call(5, "ping")).await;
    assert_eq!((status, reply["result"]["isError"].clone()), (200, json!(false)), "a new session is served");
    drop(proxy);
    let trajectory = std::fs::read_to_string(&record).unwrap();
    let faulted: Vec<Value> = trajectory
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["event"] == "resume_faulted")
        .collect();
    assert_eq!(faulted.len(), 1, "{trajectory}");
    let e = &faulted[0];
    assert_eq!(
        (&e["rule"], &e["fault"], &e["requestId"], &e["tool"], &e["lastEventId"]),
        (&json!("lost"), &json!("session_expired_in_flight"), &json!(2), &json!("ping"), &json!("0-0"))
    );
    assert_eq!(e["answer"], json!({"kind": "status", "status": 404, "sessionLost": true}));
    assert!(trajectory.contains("forgotten at a resume by rule lost"), "its server stopped: {trajectory}");
}
