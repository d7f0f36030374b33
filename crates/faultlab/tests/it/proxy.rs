//! `faultlab proxy` in front of a real MCP server (`faultlab serve` as the upstream child), through the real
//! binary: transparency without rules, the trajectory and its ledger, bad rules, signals and orphans. Each rule
//! mode on the wire is tested in process (`faultlab-proxy/tests/rule_modes.rs`).

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

use crate::common::{Client, PATIENCE};

/// The same conversation, straight to the server and through a proxy without rules, gives identical bytes.
#[tokio::test]
async fn without_rules_the_proxy_is_byte_for_byte_transparent() {
    async fn conversation(mut client: Client) -> Vec<String> {
        let mut lines = vec![client.initialize().await];
        client.send(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})).await;
        lines.push(client.recv_raw().await.unwrap());
        for (id, tool, args, replies) in [
            (2, "delay", json!({"delayMs": 5}), 1),
            (3, "duplicate_response", json!({}), 2),
            (4, "framing", json!({"style": "crlf"}), 1),
            (5, "malformed_message", json!({"variant": "missing-jsonrpc"}), 1),
        ] {
            client.call(id, tool, args).await;
            for _ in 0..replies {
                lines.push(client.recv_raw().await.unwrap());
            }
        }
        client.finish().await;
        lines
    }
    let direct = conversation(Client::spawn(&["serve"])).await;
    let proxied = conversation(Client::proxied(&[])).await;
    assert_eq!(direct, proxied);
}

fn trajectory(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test]
async fn after_mode_timeout_lets_the_upstream_execute_and_swallows_the_reply() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, "seed: 7\nrules:\n  - name: first-delay-times-out\n    match: { tool: \"del*\", nth: 1 }\n    mode: after\n    fault: { type: timeout }\n").unwrap();
    let mut client = Client::proxied(&["--rules", rules.to_str().unwrap(), "--record", record.to_str().unwrap()]);
    client.initialize().await;
    client.call(1, "delay", json!({"delayMs": 1})).await;
    // Answered well after the first, so the first reply has crossed the proxy (and been swallowed) by then.
    client.call(2, "delay", json!({"delayMs": 300})).await;
    assert_eq!(client.recv().await["id"], 2, "the first reply never comes; the second is untouched");
    assert_eq!(client.finish().await, Some(0));

    let events = trajectory(&record);
    assert_eq!(events[0]["event"], "run_started");
    assert_eq!(events[0]["seed"], 7);
    let swallowed =
        events.iter().find(|e| e["event"] == "frame" && e["direction"] == "server_to_client" && e["id"] == 1).unwrap();
    assert_eq!((swallowed["action"].clone(), swallowed["executed"].clone()), (json!("consumed"), json!(true)));
    assert_eq!(swallowed["rule"], "first-delay-times-out");
    let ledger = events.iter().find(|e| e["event"] == "ledger").unwrap();
    let n = |k: &str| ledger[k].as_u64().unwrap();
    assert_eq!(n("framesIn"), n("framesOut") + n("consumed") - n("injected"), "{ledger}");
    assert_eq!(n("consumed"), 1);
}

#[test]
fn bad_rules_exit_2_naming_file_line_and_key_and_a_missing_upstream_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, "rules:\n  - name: r\n    match: { toool: echo }\n    fault: { type: timeout }\n").unwrap();
    Command::cargo_bin("faultlab")
        .unwrap()
        .args(["proxy", "--rules", rules.to_str().unwrap(), "--", "true"])
        .assert()
        .code(2)
        .stderr(contains("rules.yaml"))
        .stderr(contains("toool"))
        .stderr(contains("line 3"));
    Command::cargo_bin("faultlab")
        .unwrap()
        .args(["proxy", "--", "/no/such/server"])
        .write_stdin("")
        .assert()
        .code(1)
        .stderr(contains("/no/such/server"));
}

/// The process ids of `pid`'s children.
fn children_of(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

#[tokio::test]
async fn sigterm_shuts_the_upstream_down_and_leaves_no_orphan() {
    let mut client = Client::proxied(&[]);
    client.initialize().await;
    let proxy = client.child.id().unwrap();
    let upstream = children_of(proxy);
    assert_eq!(upstream.len(), 1, "the proxy runs one upstream child");
    std::process::Command::new("kill").args(["-TERM", &proxy.to_string()]).status().unwrap();
    let status = tokio::time::timeout(PATIENCE, client.child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(!Path::new(&format!("/proc/{}", upstream[0])).exists(), "the upstream is gone, not orphaned");
}

/// True while `pid` is a live process (a zombie waiting to be reaped counts as gone).
/// Waits, up to `patience`, for process `pid` to exit: its pidfd turns readable when it does (an event, not a
/// sleep-and-look loop). True once it has exited (or was already gone).
async fn exits_within(pid: u32, patience: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let Some(pid) = Pid::from_raw(pid as i32) else { return true };
    let fd = match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => return true,
        Err(e) => panic!("pidfd_open({pid:?}): {e}"),
    };
    let timeout = Timespec { tv_sec: patience.as_secs() as _, tv_nsec: patience.subsec_nanos() as _ };
    let ready = move || poll(&mut [PollFd::new(&fd, PollFlags::IN)], Some(&timeout));
    tokio::task::spawn_blocking(ready).await.expect("poll task").expect("poll pidfd") == 1
}

#[tokio::test]
async fn a_killed_proxy_takes_its_upstream_with_it() {
    let mut client = Client::proxied(&[]);
    client.initialize().await;
    let proxy = client.child.id().unwrap();
    let upstream = children_of(proxy)[0];
    std::process::Command::new("kill").args(["-KILL", &proxy.to_string()]).status().unwrap();
    let _ = client.child.wait().await;
    // The kernel signals the upstream when the proxy dies (bounded by PATIENCE).
    assert!(exits_within(upstream, PATIENCE).await, "the upstream outlived a SIGKILLed proxy");
}

/// `--listen-fd` adopts only a socket the proxy really inherited; the Unix-socket front needs an upstream to
/// start per connection. Both are bad input (exit 2), named.
#[test]
fn the_unix_socket_front_names_what_is_missing() {
    crate::common::exits(2, ["proxy", "--listen-fd", "9", "--", "true"])
        .stderr(contains("--listen-fd 9: not a listening Unix socket"));
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    crate::common::exits(2, ["proxy", "--listen-unix", socket.to_str().unwrap()]).stderr(contains("name it after --"));
}
