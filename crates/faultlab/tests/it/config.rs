//! `faultlab config --client NAME`: each host's entry, in the host's shape, runs as written: the proxy with the
//! rules in front of the server, its upstream given without `--`.

use super::common::{BIN, faultlab};
use serde_json::{Value, json};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The entry `faultlab config` prints for `client`, and the key the host lists servers under.
fn entry(dir: &std::path::Path, client: &str, extra: &[&str]) -> (String, Value) {
    let output = faultlab().current_dir(dir).args(["config", "--client", client]).args(extra).output().unwrap();
    assert!(output.status.success(), "{client}: {}", String::from_utf8_lossy(&output.stderr));
    let snippet: Value = serde_json::from_slice(&output.stdout).unwrap();
    let key = snippet.as_object().unwrap().keys().next().unwrap().clone();
    let hint = String::from_utf8(output.stderr).unwrap();
    assert!(hint.starts_with("faultlab: ") && hint.lines().count() == 1, "{client}: {hint}");
    let server = snippet[&key]["faultlab"].clone();
    (key, server)
}

#[test]
fn every_host_gets_its_shape() {
    let dir = tempfile::tempdir().unwrap();
    for (client, key, typed) in [
        ("claude-desktop", "mcpServers", false),
        ("claude-code", "mcpServers", true),
        ("cursor", "mcpServers", false),
        ("vscode", "servers", true),
        ("windsurf", "mcpServers", false),
        ("inspector", "mcpServers", true),
    ] {
        let (listed_under, server) = entry(dir.path(), client, &[]);
        assert_eq!(listed_under, key, "{client}");
        assert_eq!(server["type"] == "stdio", typed, "{client}: {server}");
        assert_eq!(server["command"], BIN, "{client}: this faultlab, by its absolute path");
        assert_eq!(server["args"], json!(["serve"]), "{client}");
    }
}

#[test]
fn a_missing_rules_file_is_refused_naming_it() {
    let output = faultlab().args(["config", "--client", "cursor", "--rules", "nope.yaml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "bad input exits 1 (the exit-code table)");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("nope.yaml") && stderr.lines().count() == 1, "{stderr}");
}

#[tokio::test]
async fn the_proxy_entry_runs_as_written_with_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    let rules = "rules:\n  - name: twice\n    match: { tool: ping }\n    fault: { type: duplicate }\n";
    std::fs::write(dir.path().join("faults.yaml"), rules).unwrap();
    let extra = ["--rules", "faults.yaml", "--record", "trajectory.jsonl", "--", BIN, "serve", "--transport=stdio"];
    let (_, server) = entry(dir.path(), "vscode", &extra);
    let args: Vec<String> = serde_json::from_value(server["args"].clone()).unwrap();
    assert!(!args.contains(&"--".to_owned()), "no `--` for a host to swallow: {args:?}");
    assert!(args.contains(&dir.path().join("faults.yaml").display().to_string()), "absolute: {args:?}");

    // Started the way a host starts it: from another folder.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(server["command"].as_str().unwrap())
        .args(&args)
        .current_dir(elsewhere.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    stdin.write_all(format!("{call}\n").as_bytes()).await.unwrap();
    for _ in 0..2 {
        let line = tokio::time::timeout(super::common::PATIENCE, lines.next_line()).await.unwrap().unwrap().unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reply["id"], 1, "the rule duplicated the reply: {line}");
    }
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
    let trajectory = std::fs::read_to_string(dir.path().join("trajectory.jsonl")).unwrap();
    assert!(trajectory.contains("\"twice\""), "recorded where the entry says");
}
