//! `faultlab proxy --replay`: the README's "test your agent hermetically" commands, run as written (with
//! `faultlab` on the PATH): a session recorded in front of `faultlab serve`, then served from the recording alone
//! with a rule on top.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::{Value, json};
use std::path::Path;

use crate::common::Client;

/// Runs `faultlab ARGS` in `dir` as a stdio MCP server, `faultlab` on the PATH: sends each request and reads the
/// given number of lines for it.
async fn session(dir: &Path, args: &[&str], requests: &[(Value, usize)]) -> Vec<Value> {
    let mut client = Client::spawn_installed(dir, args);
    let mut answers = Vec::new();
    for (request, replies) in requests {
        client.send(request).await;
        for _ in 0..*replies {
            answers.push(serde_json::from_str(&client.recv_raw().await.unwrap()).unwrap());
        }
    }
    assert_eq!(client.finish().await, Some(0), "faultlab {args:?}");
    answers
}

fn requests(ping_replies: usize) -> Vec<(Value, usize)> {
    vec![
        (
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                "capabilities": {}, "clientInfo": {"name": "replay-test", "version": "1"}}}),
            1,
        ),
        (json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), 0),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), 1),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ping", "arguments": {}}}),
            ping_replies,
        ),
    ]
}

#[tokio::test]
async fn a_recorded_session_is_served_again_without_the_server_with_the_rules_on_top() {
    let dir = tempfile::tempdir().unwrap();
    let record = ["proxy", "--record", "recording.jsonl", "--record-bodies", "--", "faultlab", "serve"];
    let recorded = session(dir.path(), &record, &requests(1)).await;
    let text = recorded[2]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""timestamp""#), "{text}");

    let fault = "{match: {tool: ping}, fault: {type: duplicate}}";
    let replayed = session(dir.path(), &["proxy", "--replay", "recording.jsonl", "--fault", fault], &requests(2)).await;
    // The server's own answers, timestamp and all, and the rule's duplicate on top.
    assert_eq!(replayed[..3], recorded[..]);
    assert_eq!(replayed[3], recorded[2]);

    // A call the recording lacks: an error naming it and the closest recorded call.
    let mut other = requests(1);
    other.push((
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ping", "arguments": {"x": 1}}}),
        1,
    ));
    let answers = session(dir.path(), &["proxy", "--replay", "recording.jsonl"], &other).await;
    let error = &answers.last().unwrap()["error"];
    assert_eq!(error["code"], -32001);
    assert_eq!(error["data"]["closest"], "tools/call ping {}");
    assert!(error["message"].as_str().unwrap().contains(r#"no reply for tools/call ping {"x":1}"#), "{error}");
}

#[tokio::test]
async fn the_http_front_answers_posts_from_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let record = ["proxy", "--record", "recording.jsonl", "--record-bodies", "--", "faultlab", "serve"];
    let recorded = session(dir.path(), &record, &requests(1)).await;
    let mut proxy = tokio::process::Command::new(crate::common::BIN)
        .args(["proxy", "--replay", "recording.jsonl", "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(proxy.stderr.take().unwrap());
    let mut line = String::new();
    tokio::time::timeout(crate::common::PATIENCE, tokio::io::AsyncBufReadExt::read_line(&mut stderr, &mut line))
        .await
        .unwrap()
        .unwrap();
    let url = line.trim().strip_prefix("faultlab: proxy listening at ").unwrap().split(' ').next().unwrap().to_owned();
    let post = |body: Value| crate::common::mcp_post(&crate::common::http_client(), &url, body.to_string()).send();
    let ping = post(requests(1)[3].0.clone()).await.unwrap();
    assert_eq!(ping.status(), 200);
    assert_eq!(ping.json::<Value>().await.unwrap(), recorded[2]);
    let note = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.unwrap();
    assert_eq!(note.status(), 202);
    assert_eq!(crate::common::http_client().get(&url).send().await.unwrap().status(), 405);
}

#[test]
fn a_recording_that_cannot_serve_and_a_replay_with_another_upstream_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.jsonl");
    crate::common::bodiless_trajectory(&bare);
    let replay = |extra: &[&str]| {
        let mut command = Command::new(crate::common::BIN);
        command.args(["proxy", "--replay"]).arg(&bare).args(extra);
        command.assert().code(2)
    };
    replay(&[]).stderr(contains("holds no reply bodies")).stderr(contains("--record-bodies"));
    replay(&["--upstream", "http://127.0.0.1:1/mcp"]).stderr(contains("--upstream"));
    // Laid over a server is allowed, but the recording must still hold replies.
    replay(&["--", "cat"]).stderr(contains("holds no reply bodies"));
    let reply = r#"{"tsMs":1,"scope":"stdio","event":"frame","direction":"server_to_client","action":"forwarded","id":1,"bytes":1,"body":{"jsonrpc":"2.0","id":1,"result":{}}}"#;
    let ping = r#"{"tsMs":0,"scope":"stdio","event":"frame","direction":"client_to_server","action":"forwarded","id":1,"method":"ping","bytes":1}"#;
    std::fs::write(&bare, format!("{ping}\n{reply}\n")).unwrap();
    replay(&["--listen", "127.0.0.1:0", "--", "cat"]).stderr(contains("needs the stdio front"));
    std::fs::write(&bare, "{\"tsMs\":0,\"event\":\"frame\"}\n").unwrap();
    replay(&[]).stderr(contains("bare.jsonl: line 1"));
}
