//! `faultlab workspace-server` as `faultlab eval` runs it: the real binary over stdio with raw JSON lines, a
//! tempdir workspace next to an outside folder, and the ledger read back by the grader's own parser.

use crate::common::{BIN, Client};
use faultlab_eval::evidence::{self, Op};
use serde_json::{Value, json};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use tokio::io::AsyncWriteExt as _;

/// `dir/root` is the workspace, `dir/outside` a sibling holding one file, `dir/ledger.jsonl` the ledger.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "outside\n").unwrap();
        Self { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    fn ledger(&self) -> PathBuf {
        self.dir.path().join("ledger.jsonl")
    }

    async fn spawn(&self) -> Client {
        let (root, ledger) = (self.root(), self.ledger());
        let mut client = Client::spawn(&[
            "workspace-server",
            "--root",
            root.to_str().unwrap(),
            "--ledger",
            ledger.to_str().unwrap(),
        ]);
        let init: Value = serde_json::from_str(&client.initialize().await).unwrap();
        assert_eq!(init["result"]["serverInfo"]["name"], "faultlab-workspace", "{init}");
        client
    }
}

/// Calls a tool and returns (isError, text); a JSON-RPC error fails the test.
async fn call(client: &mut Client, id: i64, tool: &str, args: Value) -> (bool, String) {
    client.call(id, tool, args).await;
    let reply = reply_to(client, id).await;
    let result = &reply["result"];
    assert!(result.is_object(), "a tool result, not a JSON-RPC error: {reply}");
    (result["isError"] == true, result["content"][0]["text"].as_str().unwrap_or_default().to_owned())
}

/// The reply to request `id`, skipping whatever else the server says first (e.g. errors about garbage lines).
async fn reply_to(client: &mut Client, id: i64) -> Value {
    loop {
        let reply = client.recv().await;
        if reply["id"] == id {
            return reply;
        }
    }
}

fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_default();
            (p, bytes)
        })
        .collect();
    found.sort();
    found
}

#[tokio::test]
async fn writes_land_in_the_folder_and_the_grader_reads_the_ledger() {
    let lab = Lab::new();
    let mut client = lab.spawn().await;
    assert_eq!(
        call(&mut client, 1, "write_file", json!({"path": "output.txt", "content": "hello world\n"})).await,
        (false, "wrote 12 bytes to output.txt".into())
    );
    assert_eq!(call(&mut client, 2, "read_file", json!({"path": "output.txt"})).await.1, "hello world\n");
    call(&mut client, 3, "append_file", json!({"path": "output.txt", "content": "bye\n"})).await;
    call(&mut client, 4, "make_dir", json!({"path": "done"})).await;
    call(&mut client, 5, "move_file", json!({"from": "output.txt", "to": "done/output.txt"})).await;
    let (error, text) = call(&mut client, 6, "write_file", json!({"path": "../x.txt", "content": "x"})).await;
    assert!(error && text == "path escapes the workspace: ../x.txt", "{text}");
    assert_eq!(client.finish().await, Some(0), "exits 0 when the client closes stdin");

    let on_disk = std::fs::read(lab.root().join("done/output.txt")).unwrap();
    assert_eq!(on_disk, b"hello world\nbye\n");
    let text = std::fs::read_to_string(lab.ledger()).unwrap();
    let entries = evidence::ledger(&text).expect("the grader parses every line the server wrote");
    let summary: Vec<_> = entries.iter().map(|e| (e.seq, e.op, e.path.as_str(), e.to.as_deref(), e.ok)).collect();
    assert_eq!(
        summary,
        [
            (1, Op::Write, "output.txt", None, true),
            (2, Op::Append, "output.txt", None, true),
            (3, Op::MakeDir, "done", None, true),
            (4, Op::Move, "output.txt", Some("done/output.txt"), true),
            (5, Op::Write, "../x.txt", None, false),
        ]
    );
    assert_eq!(entries[0].sha256.as_deref(), Some(evidence::sha256_hex(b"hello world\n").as_str()));
    assert_eq!(entries[1].sha256.as_deref(), Some(evidence::sha256_hex(&on_disk).as_str()));
    assert_eq!(entries[4].error.as_deref(), Some("path escapes the workspace: ../x.txt"));
    assert!(entries[4].sha256.is_none());
    assert!(!lab.dir.path().join("x.txt").exists());
}

#[tokio::test]
async fn escapes_are_refused_and_nothing_lands_outside() {
    let lab = Lab::new();
    symlink(lab.outside(), lab.root().join("link-out")).unwrap();
    let before = files_under(&lab.outside());
    let outside_abs = lab.outside().join("abs.txt").display().to_string();
    let mut client = lab.spawn().await;
    let link = "is a symlink, and the workspace follows no symlinks";
    let attempts = [
        ("write_file", json!({"path": "../x.txt", "content": "x"}), "path escapes the workspace: ../x.txt".into()),
        (
            "write_file",
            json!({"path": outside_abs, "content": "x"}),
            format!("path escapes the workspace: {outside_abs}"),
        ),
        (
            "write_file",
            json!({"path": "link-out/x.txt", "content": "x"}),
            format!("refused to write link-out/x.txt: link-out {link}"),
        ),
        (
            "append_file",
            json!({"path": "link-out/secret.txt", "content": "x"}),
            format!("refused to append to link-out/secret.txt: link-out {link}"),
        ),
        (
            "delete_file",
            json!({"path": "link-out/secret.txt"}),
            format!("refused to delete link-out/secret.txt: link-out {link}"),
        ),
        ("read_file", json!({"path": "/etc/passwd"}), "path escapes the workspace: /etc/passwd".into()),
        (
            "read_file",
            json!({"path": "link-out/secret.txt"}),
            format!("refused to read link-out/secret.txt: link-out {link}"),
        ),
    ];
    for (id, (tool, args, expected)) in (1..).zip(attempts) {
        let (error, text) = call(&mut client, id, tool, args).await;
        assert!(error, "{tool} was not refused: {text}");
        assert_eq!(text, expected);
    }
    assert_eq!(client.finish().await, Some(0));
    assert_eq!(files_under(&lab.outside()), before, "the outside folder is untouched");
    assert!(!lab.dir.path().join("x.txt").exists());
    let entries = evidence::ledger(&std::fs::read_to_string(lab.ledger()).unwrap()).unwrap();
    // Reads are not side effects: five refused mutations, five lines.
    assert_eq!(entries.len(), 5);
    assert!(entries.iter().all(|e| !e.ok && e.error.is_some() && e.sha256.is_none()));
}

#[tokio::test]
async fn garbage_on_stdin_does_not_stop_the_server() {
    let lab = Lab::new();
    let mut client = lab.spawn().await;
    let stdin = client.stdin.as_mut().unwrap();
    stdin.write_all(b"not json at all\n{\"jsonrpc\":\"2.0\",\"id\":9}\n").await.unwrap();
    let (error, text) = call(&mut client, 1, "write_file", json!({"path": 5})).await;
    assert!(error, "{text}");
    // An unknown tool is a protocol error (rmcp's), not a crash.
    client.call(2, "nonexistent_tool", json!({})).await;
    let reply = reply_to(&mut client, 2).await;
    assert!(reply["error"].is_object(), "{reply}");
    assert_eq!(call(&mut client, 3, "list_dir", json!({})).await, (false, String::new()));
    assert_eq!(client.finish().await, Some(0));
}

#[tokio::test]
async fn exits_0_at_once_when_stdin_closes_before_any_message() {
    let lab = Lab::new();
    let (root, ledger) = (lab.root(), lab.ledger());
    let client =
        Client::spawn(&["workspace-server", "--root", root.to_str().unwrap(), "--ledger", ledger.to_str().unwrap()]);
    assert_eq!(client.finish().await, Some(0));
}

#[test]
fn a_bad_root_or_ledger_exits_1_naming_it() {
    let lab = Lab::new();
    let missing = lab.dir.path().join("no-such-root");
    let out = Command::new(BIN).args(["workspace-server", "--root"]).arg(&missing).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");

    let ledger = lab.dir.path().join("no-such-dir/ledger.jsonl");
    let out = Command::new(BIN)
        .args(["workspace-server", "--root"])
        .arg(lab.root())
        .arg("--ledger")
        .arg(&ledger)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&ledger.display().to_string()), "{stderr}");
}
