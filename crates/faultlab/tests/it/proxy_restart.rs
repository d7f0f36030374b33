//! `server_outage` with `restart: true` through `faultlab proxy -- faultlab serve`: the upstream child is really
//! killed when the window starts and replaced when it ends, and the client carries on without initialising again.
//! The proxy is the real binary; processes are observed through `/proc` and pidfds.

use assert_cmd::Command;
use predicates::str::contains;
use rustix::fd::OwnedFd;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

use crate::common::{BIN, Client, PATIENCE};

/// The process ids of `pid`'s children, whichever of its threads started them.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut children: Vec<u32> = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| list.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
        .collect();
    children.sort_unstable();
    children
}

/// The proxy's one upstream child.
fn upstream_of(proxy: u32) -> u32 {
    let children = children_of(proxy);
    assert_eq!(children.len(), 1, "the proxy runs one upstream child: {children:?}");
    children[0]
}

/// A handle on process `pid` that stays about that process even if its id is reused later.
fn pidfd(pid: u32) -> OwnedFd {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a process id");
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).expect("pidfd_open")
}

/// Waits, up to `patience` (zero: only looks), for the process behind `fd` to exit: a pidfd turns readable when
/// it does (an event, not a sleep-and-look loop).
async fn exits_within(fd: OwnedFd, patience: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let timeout = Timespec { tv_sec: patience.as_secs() as _, tv_nsec: patience.subsec_nanos() as _ };
    let ready = move || poll(&mut [PollFd::new(&fd, PollFlags::IN)], Some(&timeout));
    tokio::task::spawn_blocking(ready).await.expect("poll task").expect("poll pidfd") == 1
}

/// The outage's 503, as the proxy writes it on stdio.
fn is_outage(reply: &Value) -> bool {
    reply["error"]["data"]["httpStatus"] == 503 && reply["error"]["data"]["fault"] == "server_outage"
}

#[tokio::test]
async fn a_restarting_outage_replaces_the_upstream_and_the_client_carries_on_without_initialising() {
    let rule =
        "{name: crash, match: {tool: ping, nth: 1}, fault: {type: server_outage, duration_ms: 300, restart: true}}";
    // Without --record the trajectory goes to stderr, where the test waits for the restart event.
    let (mut client, mut stderr) = Client::spawn_watching(&["proxy", "--fault", rule, "--", BIN, "serve"]);
    let mut events: Vec<Value> = Vec::new();
    client.initialize().await;
    let proxy = client.child.id().unwrap();
    let first = upstream_of(proxy);
    let first_fd = pidfd(first);

    // `hang` never answers: the request is still in flight when the upstream is killed. The proxy reads the
    // client's lines in order, so it has forwarded this call before it sees the ping that starts the outage.
    client.call(1, "hang", json!({})).await;
    client.call(2, "ping", json!({})).await;
    let (a, b) = (client.recv().await, client.recv().await);
    let mut ids = [a["id"].as_i64().unwrap(), b["id"].as_i64().unwrap()];
    ids.sort_unstable();
    assert_eq!(ids, [1, 2], "the pending call and the triggering call are both answered: {a} {b}");
    assert!(is_outage(&a) && is_outage(&b), "both fail with the outage: {a} {b}");
    // The proxy kills and reaps the upstream before it answers, so the process is gone already (no waiting).
    assert!(exits_within(first_fd, Duration::ZERO).await, "the upstream was killed when the window started");
    assert!(!Path::new(&format!("/proc/{first}")).exists(), "and reaped, not left a zombie");

    client.call(3, "ping", json!({})).await;
    let during = client.recv().await;
    assert_eq!(during["id"], 3);
    assert!(is_outage(&during), "a call inside the 300 ms window fails too: {during}");

    // The window is the proxy's own clock: wait for its event that the fresh upstream is in place, then call.
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            let Ok(event) = serde_json::from_str::<Value>(&line) else { continue };
            let restarted = event["event"] == "transport" && event["outcome"] == "retained";
            events.push(event);
            if restarted {
                return;
            }
        }
        panic!("the proxy ended without restarting its upstream");
    })
    .await
    .expect("the upstream is restarted once the window has ended");
    client.call(4, "ping", json!({})).await;
    let recovered = client.recv().await;
    assert_eq!(recovered["id"], 4);
    assert_eq!(recovered["result"]["isError"], false, "{recovered}");
    let status: Value = serde_json::from_str(recovered["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(status["status"], "ok", "the fresh upstream answered the ping");

    let second = upstream_of(proxy);
    assert_ne!(second, first, "a fresh upstream process");
    let second_fd = pidfd(second);
    assert_eq!(client.finish().await, Some(0));
    assert!(exits_within(second_fd, PATIENCE).await, "the fresh upstream ends with the proxy, no orphan");

    while let Some(line) = stderr.next_line().await.unwrap() {
        events.extend(serde_json::from_str::<Value>(&line).ok());
    }
    let transport: Vec<&Value> = events.iter().filter(|e| e["event"] == "transport").collect();
    let stopped = transport.iter().find(|e| e["outcome"] == "closed").expect("a stop event");
    let detail = stopped["detail"].as_str().unwrap();
    assert!(detail.starts_with("upstream stopped") && detail.contains("\"crash\""), "{detail}");
    assert!(detail.contains(&format!("pid {first}")) && detail.contains("1 request(s) in flight"), "{detail}");
    assert_eq!(stopped["requestId"], 2, "the request that started the outage");
    let restarted = transport.iter().find(|e| e["outcome"] == "retained").expect("a restart event");
    let detail = restarted["detail"].as_str().unwrap();
    assert!(detail.starts_with("upstream restarted") && detail.contains("\"crash\""), "{detail}");
    assert!(detail.contains(&format!("pid {second}")), "{detail}");

    let frames = |direction: &str, action: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["event"] == "frame" && e["direction"] == direction && e["action"] == action)
            .collect()
    };
    let initialize_from_client =
        events.iter().filter(|e| e["direction"] == "client_to_server" && e["method"] == "initialize").count();
    assert_eq!(initialize_from_client, 2, "the client's initialize, then the proxy's replay of it");
    let replayed: Vec<&str> =
        frames("client_to_server", "injected").iter().filter_map(|e| e["method"].as_str()).collect();
    assert_eq!(replayed, ["initialize", "notifications/initialized"]);
    assert!(frames("client_to_server", "injected").iter().all(|e| e["rule"] == "crash"));
    let swallowed = frames("server_to_client", "consumed");
    assert_eq!(swallowed.len(), 1, "only the fresh upstream's initialize reply is swallowed");
    assert_eq!((swallowed[0]["id"].clone(), swallowed[0]["rule"].clone()), (json!(0), json!("crash")));
    let pending = frames("server_to_client", "injected").into_iter().find(|e| e["id"] == 1).expect("call 1 answered");
    assert_eq!((pending["fault"].clone(), pending["executed"].clone()), (json!("server_outage"), Value::Null));
    let ledger = events.iter().find(|e| e["event"] == "ledger").unwrap();
    let n = |k: &str| ledger[k].as_u64().unwrap();
    assert_eq!(n("framesIn"), n("framesOut") + n("consumed") - n("injected"), "{ledger}");
}

#[tokio::test]
async fn a_client_that_leaves_while_the_upstream_is_down_ends_the_proxy_at_once() {
    // A one-minute window: the proxy must not wait for it to end.
    let rule = "{match: {tool: ping}, fault: {type: server_outage, duration_ms: 60000, restart: true}}";
    let mut client = Client::proxied(&["--fault", rule]);
    client.initialize().await;
    let proxy = client.child.id().unwrap();
    let first = pidfd(upstream_of(proxy));
    client.call(1, "ping", json!({})).await;
    assert!(is_outage(&client.recv().await));
    assert!(exits_within(first, Duration::ZERO).await, "killed before the answer");
    // `finish` closes stdin and waits at most PATIENCE (20 s), a third of the window.
    assert_eq!(client.finish().await, Some(0));
    assert!(children_of(proxy).is_empty(), "no upstream was started again");
}

#[test]
fn restart_is_refused_where_the_proxy_cannot_restart_its_upstream() {
    let rule = "{match: {tool: ping}, fault: {type: server_outage, duration_ms: 300, restart: true}}";
    // An HTTP front (even bridging to a stdio child), and a stdio front with an HTTP upstream.
    for topology in [vec!["--listen", "127.0.0.1:0", "--", BIN, "serve"], vec!["--upstream", "http://127.0.0.1:9/mcp"]]
    {
        let mut args = vec!["proxy", "--fault", rule];
        args.extend(topology);
        Command::cargo_bin("faultlab")
            .unwrap()
            .args(&args)
            .write_stdin("")
            .assert()
            .code(2)
            .stderr(contains("\"cli-1\""))
            .stderr(contains("restart applies only to the stdio front"));
    }
}
