//! The stdio proxy under stress, through the real binary: bounded shutdowns (client EOF with an upstream that
//! ignores it, SIGTERM with requests open), upstream death, frames over the size limit. Every request with an id
//! is answered or the connection ends cleanly.

use crate::common::{Lab, pidfd};
use rustix::fd::OwnedFd;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Client, PATIENCE, bin};

fn trajectory(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn events<'a>(all: &'a [Value], name: &str) -> Vec<&'a Value> {
    all.iter().filter(|e| e["event"] == name).collect()
}

/// Whether the process behind `fd` has exited (a pidfd is readable once it has).
fn has_exited(fd: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })).expect("poll pidfd") == 1
}

/// An upstream that ignores stdin EOF and SIGTERM, with a helper in its process group that ignores SIGTERM too;
/// it announces the helper's pid as its first line. Only SIGKILL to the group ends both.
const STUBBORN: &str = r#"trap '' TERM; sleep 40 & echo "{\"jsonrpc\":\"2.0\",\"method\":\"helper\",\"params\":{\"pid\":$!}}"; wait; sleep 40"#;

#[tokio::test]
async fn client_eof_with_an_upstream_that_ignores_it_ends_within_twice_the_grace_and_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let record_arg = record.to_str().unwrap();
    let mut proxy =
        Client::spawn_peer(&["proxy", "--shutdown-grace", "0.2", "--record", record_arg, "--", "sh", "-c", STUBBORN]);
    let announced = proxy.recv().await;
    let helper = pidfd(announced["params"]["pid"].as_i64().unwrap() as i32);

    let started = Instant::now();
    let (code, stderr) = proxy.finish_output(Duration::from_secs(5)).await;
    let took = started.elapsed();
    eprintln!("bounded shutdown (grace 0.2 s, stdin close -> SIGTERM -> SIGKILL): {took:?}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < Duration::from_secs(2), "stdin close, 0.2 s, SIGTERM, 0.2 s, SIGKILL: took {took:?}");
    assert!(has_exited(&helper), "the helper in the upstream's process group is gone too");

    let all = trajectory(&record);
    let steps: Vec<&str> = events(&all, "shutdown").iter().map(|e| e["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["stdin_closed", "sigterm", "sigkill", "exited"]);
    assert!(events(&all, "upstream_exit").is_empty(), "the proxy stopped it: not a death");
}

#[tokio::test]
async fn sigterm_with_a_request_open_answers_it_and_stops_the_upstream_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let upstream = bin();
    // `faultlab serve` with a `hang` running takes 5 s to exit on EOF: the grace is cut so SIGTERM comes sooner.
    let record_arg = record.to_str().unwrap();
    let mut proxy =
        Client::spawn_peer(&["proxy", "--shutdown-grace", "0.2", "--record", record_arg, "--", &upstream, "serve"]);
    proxy.initialize().await;
    proxy.call(1, "hang", json!({})).await;
    // A round trip after it: the hang has reached the upstream.
    proxy.send(&json!({"jsonrpc":"2.0","id":2,"method":"ping"})).await;
    assert_eq!(proxy.recv().await["id"], 2);

    let pid = rustix::process::Pid::from_raw(proxy.child.id().unwrap() as i32).unwrap();
    let started = Instant::now();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let reply = proxy.recv().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["code"], -32000, "the open request fails, it does not hang: {reply}");
    let (code, _) = proxy.finish_output(Duration::from_secs(5)).await;
    eprintln!("SIGTERM with one request open -> exit: {:?}", started.elapsed());
    assert_eq!(code, Some(0));
    let all = trajectory(&record);
    let steps: Vec<&str> = events(&all, "shutdown").iter().map(|e| e["step"].as_str().unwrap()).collect();
    assert_eq!(steps.first(), Some(&"stdin_closed"));
    assert_eq!(steps.last(), Some(&"exited"));
}

#[tokio::test]
async fn an_upstream_that_dies_with_a_request_pending_answers_it_with_the_exit_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let mut proxy =
        Client::spawn_peer(&["proxy", "--record", record.to_str().unwrap(), "--", "sh", "-c", "read line; exit 3"]);
    proxy.send(&json!({"jsonrpc":"2.0","id":"a","method":"ping"})).await;
    let reply = proxy.recv().await;
    assert_eq!(reply["id"], "a", "{reply}");
    assert_eq!(reply["error"]["data"]["upstreamExit"]["code"], 3, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("exit code 3"), "{reply}");
    assert_eq!(proxy.recv_raw().await, None, "then the proxy ends");
    let (code, stderr) = proxy.finish_output(PATIENCE).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("exit code 3"), "{stderr}");
    let all = trajectory(&record);
    let exits = events(&all, "upstream_exit");
    assert_eq!(exits.len(), 1, "{all:?}");
    assert_eq!((exits[0]["code"].clone(), exits[0]["pending"].clone()), (json!(3), json!(1)));
}

#[test]
fn an_upstream_that_fails_at_once_is_a_failure_not_a_clean_end() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    // `echo '{...ping...}' | faultlab proxy -- false`
    let mut proxy = std::process::Command::new(bin())
        .args(["proxy", "--record", record.to_str().unwrap(), "--", "false"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    let ping = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
    // The proxy may already have ended (the upstream is gone at once): a broken pipe is fine.
    let _ = proxy.stdin.take().unwrap().write_all(ping);
    let out = proxy.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let all = trajectory(&record);
    assert_eq!(events(&all, "upstream_exit")[0]["status"], "exit code 1");
}

#[tokio::test]
async fn an_upstream_that_exits_on_eof_after_answering_everything_is_a_clean_end() {
    let upstream = bin();
    let mut proxy = Client::spawn_peer(&["proxy", "--", &upstream, "serve"]);
    proxy.initialize().await;
    proxy.send(&json!({"jsonrpc":"2.0","id":1,"method":"ping"})).await;
    assert_eq!(proxy.recv().await["id"], 1);
    let (code, stderr) = proxy.finish_output(PATIENCE).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("upstream_exit"), "{stderr}");
}

#[tokio::test]
async fn a_reply_over_the_frame_limit_becomes_an_error_for_its_id_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let upstream = bin();
    let args = ["proxy", "--max-frame-bytes", "4096", "--record", record.to_str().unwrap(), "--", &upstream, "serve"];
    let mut proxy = Client::spawn_peer(&args);
    proxy.initialize().await;
    proxy.call(1, "oversized_response", json!({"bytes": 10_000})).await;
    let reply = proxy.recv().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("--max-frame-bytes"), "{reply}");

    // A request over the limit: its id is read from its start.
    proxy.send_oversized_then_ping("ping", 5000).await;
    let (code, _) = proxy.finish_output(PATIENCE).await;
    assert_eq!(code, Some(0));
    let all = trajectory(&record);
    let dropped = events(&all, "dropped");
    let ids: Vec<&Value> = dropped.iter().map(|e| &e["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)]);
    assert!(dropped.iter().all(|e| e["answered"] == true && e["bytes"].as_u64().unwrap() > 4096));
    let ledger = events(&all, "ledger")[0];
    let n = |k: &str| ledger[k].as_u64().unwrap();
    assert_eq!(n("framesIn"), n("framesOut") + n("consumed") - n("injected"), "{ledger}");
}

#[tokio::test]
async fn by_default_the_proxy_carries_a_reply_over_16_mib() {
    let upstream = bin();
    let mut proxy = Client::spawn_peer(&["proxy", "--", &upstream, "serve"]);
    proxy.initialize().await;
    proxy.call(1, "oversized_response", json!({"bytes": 17 << 20})).await;
    let line = proxy.recv_raw().await.unwrap();
    assert!(line.len() > 17 << 20, "the whole reply arrives ({} bytes)", line.len());
    assert!(line.starts_with(r#"{"jsonrpc":"2.0","id":1,"#), "{}", &line[..100]);
}

#[tokio::test]
async fn sigterm_to_the_proxy_ends_a_stubborn_upstream_and_its_helper_within_twice_the_grace() {
    let mut proxy = Client::spawn_peer(&["proxy", "--shutdown-grace", "0.2", "--", "sh", "-c", STUBBORN]);
    let announced = proxy.recv().await;
    let helper = pidfd(announced["params"]["pid"].as_i64().unwrap() as i32);
    let pid = rustix::process::Pid::from_raw(proxy.child.id().unwrap() as i32).unwrap();
    let started = Instant::now();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), proxy.child.wait()).await.expect("exits in time");
    let took = started.elapsed();
    eprintln!("SIGTERM to the proxy, stubborn upstream (grace 0.2 s) -> exit: {took:?}");
    assert_eq!(status.unwrap().code(), Some(0));
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(has_exited(&helper), "the helper in the upstream's process group is gone too");
}

#[tokio::test]
async fn with_an_http_upstream_a_client_line_over_the_limit_gets_an_error_for_its_id() {
    let (_server, url) = Lab::serve(&[]).await;

    let mut proxy = Client::spawn_peer(&["proxy", "--max-frame-bytes", "4096", "--upstream", &url]);
    proxy.initialize().await;
    let mut long = br#"{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":""#.to_vec();
    long.extend(std::iter::repeat_n(b'x', 5000));
    long.extend_from_slice(b"\"}}\n");
    proxy.send_raw(&long).await;
    let reply = proxy.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!("big"), json!(-32600)), "{reply}");
    proxy.send(&json!({"jsonrpc":"2.0","id":1,"method":"ping"})).await;
    assert_eq!(proxy.recv().await["id"], 1, "the session goes on");
}

/// Both stdio fronts with a client that closed its end of stdout: one clear error, exit 1, no panic.
#[test]
fn a_closed_stdout_is_one_clear_error_not_a_panic() {
    let upstream = bin();
    for args in [vec!["serve"], vec!["proxy", "--", &upstream, "serve"]] {
        let mut front = std::process::Command::new(bin())
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(front.stdout.take());
        let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
            "capabilities":{},"clientInfo":{"name":"closed","version":"1"}}});
        use std::io::Write as _;
        let mut stdin = front.stdin.take().unwrap();
        let _ = writeln!(stdin, "{initialize}");
        let out = front.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.matches("cannot write to the client on stdout").count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[tokio::test]
async fn a_client_that_leaves_with_a_request_pending_is_a_clean_end_when_the_upstream_exits_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    // An upstream that never answers and exits 0 once its stdin closes, as the spec asks of a stdio server.
    let upstream = ["sh", "-c", "cat > /dev/null"];
    let mut args = vec!["proxy", "--shutdown-grace", "2", "--record", record.to_str().unwrap(), "--"];
    args.extend(upstream);
    let mut proxy = Client::spawn_peer(&args);
    proxy.send(&json!({"jsonrpc":"2.0","id":"a","method":"ping"})).await;
    drop(proxy.stdin.take());
    let reply = proxy.recv().await;
    assert_eq!(reply["id"], "a", "the pending request still gets its error: {reply}");
    assert_eq!(reply["error"]["data"]["upstream"], "stopped", "{reply}");
    let (code, stderr) = proxy.finish_output(PATIENCE).await;
    assert_eq!(code, Some(0), "the client left: exit 0 as the exit-code table says; {stderr}");
    assert!(!stderr.contains("exited on its own"), "{stderr}");
    assert!(events(&trajectory(&record), "upstream_exit").is_empty(), "the upstream did not die on its own");
}
