//! The workspace server in process: a raw JSON-line client on the stdio wire layer, a tempdir workspace next to
//! an "outside" folder that must never change, and the ledger read back from disk.

use faultlab_engine::{Engine, Recorder};
use faultlab_server::workspace::{OpenError, WorkspaceServer};
use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// How long one reply may take before the test fails (a bound, not a synchronising sleep).
const PATIENCE: Duration = Duration::from_secs(20);

/// `outer/root` is the workspace, `outer/outside` a sibling with one file, `outer/ledger.jsonl` the ledger.
struct Lab {
    dir: tempfile::TempDir,
    writer: WriteHalf<DuplexStream>,
    reader: BufReader<ReadHalf<DuplexStream>>,
    next_id: i64,
}

impl Lab {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "outside\n").unwrap();
        Self::connect(dir).await
    }

    /// A fresh server process's worth: a server on the lab's root and ledger, initialized.
    async fn connect(dir: tempfile::TempDir) -> Self {
        Self::connect_with(dir, false, json!({})).await
    }

    /// As [`Lab::connect`], the server asking before destructive writes when `confirm`, the client declaring
    /// `capabilities`.
    async fn connect_with(dir: tempfile::TempDir, confirm: bool, capabilities: Value) -> Self {
        let mut server =
            WorkspaceServer::open(&dir.path().join("root"), Some(&dir.path().join("ledger.jsonl"))).unwrap();
        if confirm {
            server = server.confirming();
        }
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let engine = Arc::new(Engine::new(Recorder::discard()));
        crate::util::serve_stdio(server, engine, server_io);
        let (reader, writer) = tokio::io::split(client_io);
        let mut lab = Self { dir, writer, reader: BufReader::new(reader), next_id: 1 };
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "workspace-test", "version": "1"}});
        let init = lab.request("initialize", params).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "faultlab-workspace", "{init}");
        lab.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        lab
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    async fn send(&mut self, value: &Value) {
        let mut line = serde_json::to_vec(value).unwrap();
        line.push(b'\n');
        self.writer.write_all(&line).await.unwrap();
    }

    /// Sends a request and returns its reply (skipping anything else the server sends).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(PATIENCE, self.reader.read_line(&mut line)).await.expect("a reply in time");
            assert!(n.unwrap() > 0, "the server closed the connection");
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id {
                return reply;
            }
        }
    }

    /// Calls a tool: (isError, the text of its result).
    async fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": args})).await;
        let result = &reply["result"];
        assert!(result.is_object(), "a tool result, not a JSON-RPC error: {reply}");
        (result["isError"] == true, result["content"][0]["text"].as_str().unwrap_or_default().to_owned())
    }

    /// Calls a tool and answers every `elicitation/create` it sends with `answer` (a result): (isError, the
    /// result's text, the elicitation requests' params).
    async fn call_answering(&mut self, tool: &str, args: Value, answer: &Value) -> (bool, String, Vec<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        let call =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        self.send(&call).await;
        let mut asked = Vec::new();
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(PATIENCE, self.reader.read_line(&mut line)).await.expect("a reply in time");
            assert!(n.unwrap() > 0, "the server closed the connection");
            let frame: Value = serde_json::from_str(&line).unwrap();
            if frame["method"] == "elicitation/create" {
                asked.push(frame["params"].clone());
                self.send(&json!({"jsonrpc": "2.0", "id": frame["id"], "result": answer})).await;
            } else if frame["id"] == id {
                let result = &frame["result"];
                let text = result["content"][0]["text"].as_str().unwrap_or_default().to_owned();
                return (result["isError"] == true, text, asked);
            }
        }
    }

    async fn ok(&mut self, tool: &str, args: Value) -> String {
        let (error, text) = self.call(tool, args).await;
        assert!(!error, "{tool} failed: {text}");
        text
    }

    async fn refused(&mut self, tool: &str, args: Value) -> String {
        let (error, text) = self.call(tool, args).await;
        assert!(error, "{tool} should have failed, got: {text}");
        text
    }

    fn ledger(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("ledger.jsonl")).unwrap_or_default();
        assert!(text.is_empty() || text.ends_with('\n'), "every ledger line is complete: {text:?}");
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// Every path under the lab folder except the workspace's contents, with file contents.
    fn outside_state(&self) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut found = Vec::new();
        walk(self.dir.path(), &self.root(), &mut found);
        found
    }
}

fn walk(dir: &Path, skip: &Path, found: &mut Vec<(PathBuf, Option<Vec<u8>>)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path == skip || path.ends_with("ledger.jsonl") {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            found.push((path.clone(), None));
            walk(&path, skip, found);
        } else {
            found.push((path.clone(), std::fs::read(&path).ok()));
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn every_tool_does_what_it_says_on_the_disk() {
    let mut lab = Lab::start().await;
    let root = lab.root();
    assert_eq!(
        lab.ok("write_file", json!({"path": "sub/output.txt", "content": "hello world\n"})).await,
        "wrote 12 bytes to sub/output.txt"
    );
    assert_eq!(std::fs::read_to_string(root.join("sub/output.txt")).unwrap(), "hello world\n");
    assert_eq!(
        lab.ok("append_file", json!({"path": "./sub/output.txt", "content": "more"})).await,
        "appended 4 bytes to sub/output.txt"
    );
    assert_eq!(lab.ok("read_file", json!({"path": "sub/output.txt"})).await, "hello world\nmore");

    let info: Value = serde_json::from_str(&lab.ok("file_info", json!({"path": "sub/output.txt"})).await).unwrap();
    assert_eq!(info, json!({"path": "sub/output.txt", "bytes": 16, "sha256": sha256_hex(b"hello world\nmore")}));

    assert_eq!(lab.ok("make_dir", json!({"path": "a/b"})).await, "made folder a/b");
    assert!(root.join("a/b").is_dir());
    std::fs::write(root.join("z.txt"), "z").unwrap();
    assert_eq!(lab.ok("list_dir", json!({})).await, "a/\nsub/\nz.txt");
    assert_eq!(lab.ok("list_dir", json!({"path": "a"})).await, "b/");
    assert_eq!(lab.ok("list_dir", json!({"path": null})).await, "a/\nsub/\nz.txt");

    assert_eq!(
        lab.ok("move_file", json!({"from": "z.txt", "to": "a/b/c/z2.txt"})).await,
        "moved z.txt to a/b/c/z2.txt"
    );
    assert!(!root.join("z.txt").exists());
    assert_eq!(std::fs::read_to_string(root.join("a/b/c/z2.txt")).unwrap(), "z");
    // A move never overwrites: the destination stays as it was.
    let clash = lab.refused("move_file", json!({"from": "sub/output.txt", "to": "a/b/c/z2.txt"})).await;
    assert!(clash.contains("destination already exists"), "{clash}");
    assert_eq!(std::fs::read_to_string(root.join("a/b/c/z2.txt")).unwrap(), "z");

    assert_eq!(lab.ok("delete_file", json!({"path": "a/b/c/z2.txt"})).await, "deleted a/b/c/z2.txt");
    assert!(!root.join("a/b/c/z2.txt").exists());
    let folder = lab.refused("delete_file", json!({"path": "a"})).await;
    assert!(folder.contains("cannot delete a: it is a folder"), "{folder}");
    assert!(root.join("a/b/c").is_dir());
}

#[tokio::test]
async fn failures_are_tool_errors_that_name_the_path() {
    let mut lab = Lab::start().await;
    for (tool, args, expected) in [
        ("read_file", json!({"path": "missing.txt"}), "cannot read missing.txt: "),
        ("file_info", json!({"path": "nope/missing.txt"}), "cannot read nope/missing.txt: "),
        ("delete_file", json!({"path": "gone.txt"}), "cannot delete gone.txt: "),
        ("move_file", json!({"from": "gone.txt", "to": "x.txt"}), "cannot move gone.txt: "),
        ("list_dir", json!({"path": "no-such-dir"}), "cannot list no-such-dir: "),
    ] {
        let text = lab.refused(tool, args).await;
        assert!(text.starts_with(expected), "{tool}: {text}");
    }
    std::fs::create_dir(lab.root().join("folder")).unwrap();
    assert!(lab.refused("read_file", json!({"path": "folder"})).await.contains("cannot read folder: it is a folder"));
    assert!(lab.refused("file_info", json!({"path": "folder"})).await.contains("it is a folder"));
    std::fs::write(lab.root().join("binary.bin"), [0xff, 0xfe, 0x00]).unwrap();
    assert!(lab.refused("read_file", json!({"path": "binary.bin"})).await.contains("not UTF-8"));
    std::fs::write(lab.root().join("big.txt"), vec![b'a'; 1024 * 1024 + 1]).unwrap();
    assert!(lab.refused("read_file", json!({"path": "big.txt"})).await.contains("more than 1048576"));
    // Bad arguments are tool errors too, and the server keeps serving.
    let missing = lab.refused("write_file", json!({"path": "x.txt"})).await;
    assert!(missing.contains("content"), "{missing}");
    lab.refused("read_file", json!({"path": 7})).await;
    assert_eq!(lab.ok("write_file", json!({"path": "x.txt", "content": ""})).await, "wrote 0 bytes to x.txt");
}

#[tokio::test]
async fn escapes_are_refused_and_nothing_outside_changes() {
    let mut lab = Lab::start().await;
    let (root, outside) = (lab.root(), lab.outside());
    symlink(&outside, root.join("out")).unwrap();
    symlink(outside.join("secret.txt"), root.join("secret-link")).unwrap();
    symlink(outside.join("new.txt"), root.join("dangling")).unwrap();
    std::fs::create_dir(root.join("inner")).unwrap();
    let before = lab.outside_state();
    let abs = outside.join("abs.txt").display().to_string();

    let escapes = [
        ("write_file", json!({"path": "../x.txt", "content": "x"}), "../x.txt"),
        ("write_file", json!({"path": "inner/../../outside/x.txt", "content": "x"}), "inner/../../outside/x.txt"),
        ("write_file", json!({"path": abs, "content": "x"}), abs.as_str()),
        ("read_file", json!({"path": "/etc/passwd"}), "/etc/passwd"),
        ("file_info", json!({"path": "../outside/secret.txt"}), "../outside/secret.txt"),
        ("list_dir", json!({"path": ".."}), ".."),
    ];
    for (tool, args, path) in escapes {
        assert_eq!(lab.refused(tool, args).await, format!("path escapes the workspace: {path}"), "{tool}");
    }
    // Through a symlink: refused whichever step it is at, naming the path and the link.
    let links = [
        ("write_file", json!({"path": "out/x.txt", "content": "x"}), "write out/x.txt: out"),
        ("write_file", json!({"path": "secret-link", "content": "x"}), "write secret-link: secret-link"),
        ("write_file", json!({"path": "dangling", "content": "x"}), "write dangling: dangling"),
        ("append_file", json!({"path": "out/secret.txt", "content": "x"}), "append to out/secret.txt: out"),
        ("make_dir", json!({"path": "out/newdir"}), "make folder out/newdir: out"),
        ("delete_file", json!({"path": "out/secret.txt"}), "delete out/secret.txt: out"),
        ("move_file", json!({"from": "out/secret.txt", "to": "stolen.txt"}), "move out/secret.txt: out"),
        ("read_file", json!({"path": "secret-link"}), "read secret-link: secret-link"),
        ("read_file", json!({"path": "out/secret.txt"}), "read out/secret.txt: out"),
        ("file_info", json!({"path": "out/secret.txt"}), "read out/secret.txt: out"),
        ("list_dir", json!({"path": "out"}), "list out: out"),
    ];
    for (tool, args, what) in links {
        let text = lab.refused(tool, args).await;
        assert_eq!(text, format!("refused to {what} is a symlink, and the workspace follows no symlinks"), "{tool}");
    }
    // A move into the outside is refused on its destination, and the source stays.
    std::fs::write(root.join("keep.txt"), "keep").unwrap();
    let text = lab.refused("move_file", json!({"from": "keep.txt", "to": "out/keep.txt"})).await;
    assert_eq!(text, "refused to move out/keep.txt: out is a symlink, and the workspace follows no symlinks");
    assert!(root.join("keep.txt").exists());

    assert_eq!(lab.outside_state(), before, "nothing outside the workspace changed");
    assert!(!root.join("stolen.txt").exists());
    // Even a symlink that stays inside is not followed: whether it leads out could change after any check.
    symlink(root.join("inner"), root.join("inner-link")).unwrap();
    let text = lab.refused("write_file", json!({"path": "inner-link/y.txt", "content": "y"})).await;
    assert!(text.contains("inner-link is a symlink"), "{text}");
    assert!(!root.join("inner/y.txt").exists());
    // The link itself is an ordinary name: it can be moved or deleted without touching what it points to.
    assert_eq!(lab.ok("delete_file", json!({"path": "secret-link"})).await, "deleted secret-link");
    assert_eq!(lab.outside_state(), before);
}

#[tokio::test]
async fn a_hard_link_to_an_outside_file_is_never_changed() {
    let mut lab = Lab::start().await;
    let (root, outside) = (lab.root(), lab.outside());
    std::fs::hard_link(outside.join("secret.txt"), root.join("linked.txt")).unwrap();
    let before = lab.outside_state();
    for (tool, args, verb) in [
        ("write_file", json!({"path": "linked.txt", "content": "x"}), "write"),
        ("append_file", json!({"path": "linked.txt", "content": "x"}), "append to"),
        ("delete_file", json!({"path": "linked.txt"}), "delete"),
        ("move_file", json!({"from": "linked.txt", "to": "moved.txt"}), "move"),
    ] {
        let text = lab.refused(tool, args).await;
        assert_eq!(
            text,
            format!("refused to {verb} linked.txt: it has 2 hard links, and one may lead outside the workspace"),
            "{tool}"
        );
    }
    assert_eq!(lab.outside_state(), before, "the outside file is unchanged");
    assert_eq!(std::fs::read_to_string(root.join("linked.txt")).unwrap(), "outside\n");
    assert!(lab.ledger().iter().all(|entry| entry["ok"] == false));
}

/// An agent (or anything sharing the machine) flips a folder the server writes into between a real folder and a
/// symlink to the outside, as fast as it can, while the server writes through it: no write may land outside, and
/// every write the ledger calls done is inside the workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_flipped_to_a_symlink_mid_write_never_leads_outside() {
    use std::sync::atomic::{AtomicBool, Ordering};
    const WRITES: usize = 200;
    let mut lab = Lab::start().await;
    let (root, outside) = (lab.root(), lab.outside());
    std::fs::create_dir(root.join("flip")).unwrap();
    symlink(&outside, root.join("flip-link")).unwrap();
    let before = lab.outside_state();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, root) = (stop.clone(), root.clone());
        std::thread::spawn(move || {
            let (flip, link) = (root.join("flip"), root.join("flip-link"));
            let mut flips = 0u64;
            // One atomic swap per step: `flip` is the real folder half of the time and the symlink the other half.
            while !stop.load(Ordering::Relaxed) {
                let swapped = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &flip,
                    rustix::fs::CWD,
                    &link,
                    rustix::fs::RenameFlags::EXCHANGE,
                );
                flips += u64::from(swapped.is_ok());
            }
            flips
        })
    };
    for i in 0..WRITES {
        lab.call("write_file", json!({"path": format!("flip/w{i}.txt"), "content": "w"})).await;
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 0, "the folder was flipped");
    // The real folder ends under one of the two names; the symlink under the other.
    let (link, real) = if root.join("flip").is_symlink() { ("flip", "flip-link") } else { ("flip-link", "flip") };
    std::fs::remove_file(root.join(link)).unwrap();
    let outside_now = lab.outside_state();
    let leaked = outside_now.iter().filter(|entry| !before.contains(entry)).count();
    assert_eq!(leaked, 0, "{leaked} of {WRITES} writes landed outside the workspace");
    assert_eq!(outside_now, before, "nothing outside the workspace changed");
    // Every write the ledger calls done is a file in the real folder, with the hash the ledger gives.
    let done: Vec<Value> = lab.ledger().into_iter().filter(|entry| entry["ok"] == true).collect();
    assert!(!done.is_empty(), "some writes went through while the folder was real");
    for entry in &done {
        let name = entry["path"].as_str().unwrap().strip_prefix("flip/").unwrap();
        let bytes = std::fs::read(root.join(real).join(name)).unwrap();
        assert_eq!(entry["sha256"], sha256_hex(&bytes), "{entry}");
    }
    assert_eq!(done.len(), count_files(&root), "every file inside is one logged write");
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() { count_files(&entry.path()) } else { usize::from(kind.is_file()) }
        })
        .sum()
}

#[tokio::test]
async fn the_ledger_has_one_line_per_side_effect_with_the_hash_after() {
    let mut lab = Lab::start().await;
    lab.ok("write_file", json!({"path": "./output.txt", "content": "one"})).await;
    lab.ok("read_file", json!({"path": "output.txt"})).await;
    lab.ok("append_file", json!({"path": "output.txt", "content": "+two"})).await;
    lab.ok("list_dir", json!({})).await;
    lab.ok("file_info", json!({"path": "output.txt"})).await;
    lab.ok("make_dir", json!({"path": "d"})).await;
    lab.ok("move_file", json!({"from": "output.txt", "to": "d/final.txt"})).await;
    lab.refused("write_file", json!({"path": "../escape.txt", "content": "x"})).await;
    lab.refused("delete_file", json!({"path": "./missing.txt"})).await;
    lab.ok("delete_file", json!({"path": "d/final.txt"})).await;

    let ledger = lab.ledger();
    let missing = ledger.get(5).map(|entry| entry["error"].clone()).unwrap_or_default();
    assert!(missing.as_str().unwrap_or_default().starts_with("cannot delete ./missing.txt: "), "{missing}");
    let expected = [
        json!({"seq": 1, "tool": "write_file", "op": "write", "path": "output.txt", "ok": true,
            "sha256": sha256_hex(b"one")}),
        json!({"seq": 2, "tool": "append_file", "op": "append", "path": "output.txt", "ok": true,
            "sha256": sha256_hex(b"one+two")}),
        json!({"seq": 3, "tool": "make_dir", "op": "make_dir", "path": "d", "ok": true}),
        json!({"seq": 4, "tool": "move_file", "op": "move", "path": "output.txt", "to": "d/final.txt", "ok": true}),
        json!({"seq": 5, "tool": "write_file", "op": "write", "path": "../escape.txt", "ok": false,
            "error": "path escapes the workspace: ../escape.txt"}),
        json!({"seq": 6, "tool": "delete_file", "op": "delete", "path": "./missing.txt", "ok": false,
            "error": missing}),
        json!({"seq": 7, "tool": "delete_file", "op": "delete", "path": "d/final.txt", "ok": true}),
    ];
    assert_eq!(ledger, expected);
    // Key order too: the line reads like the documented shape.
    let first = std::fs::read_to_string(lab.dir.path().join("ledger.jsonl")).unwrap();
    assert!(first.starts_with(r#"{"seq":1,"tool":"write_file","op":"write","path":"output.txt","ok":true,"sha256":""#));
}

#[tokio::test]
async fn tools_list_offers_the_eight_tools_with_input_schemas() {
    let mut lab = Lab::start().await;
    let reply = lab.request("tools/list", json!({})).await;
    let tools = reply["result"]["tools"].as_array().unwrap();
    let names: BTreeSet<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let expected =
        ["append_file", "delete_file", "file_info", "list_dir", "make_dir", "move_file", "read_file", "write_file"];
    assert_eq!(names, expected.into_iter().collect());
    for tool in tools {
        assert!(tool["description"].as_str().is_some_and(|d| d.len() > 20), "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let write = tools.iter().find(|t| t["name"] == "write_file").unwrap();
    assert_eq!(write["inputSchema"]["required"], json!(["path", "content"]));
    let list = tools.iter().find(|t| t["name"] == "list_dir").unwrap();
    let path = &list["inputSchema"]["properties"]["path"];
    assert_eq!((&path["type"], &path["default"]), (&json!("string"), &json!(".")), "{path}");
    assert!(list["inputSchema"]["required"].as_array().is_none_or(|r| r.is_empty()));
    let moved = tools.iter().find(|t| t["name"] == "move_file").unwrap();
    assert_eq!(moved["inputSchema"]["required"], json!(["from", "to"]));
    assert_eq!(tools.iter().find(|t| t["name"] == "file_info").unwrap()["annotations"]["readOnlyHint"], true);
}

#[test]
fn open_refuses_a_bad_root_or_ledger_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = WorkspaceServer::open(&missing, None).err().unwrap();
    assert!(matches!(err, OpenError::Root { .. }) && err.to_string().contains(&missing.display().to_string()));
    std::fs::write(dir.path().join("file"), "").unwrap();
    assert!(matches!(WorkspaceServer::open(&dir.path().join("file"), None), Err(OpenError::Root { .. })));

    let ledger = dir.path().join("no-such-dir/ledger.jsonl");
    let err = WorkspaceServer::open(dir.path(), Some(&ledger)).err().unwrap();
    assert!(matches!(err, OpenError::Ledger { .. }) && err.to_string().contains(&ledger.display().to_string()));
    // The agent must not be able to rewrite its own evidence.
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let inside = dir.path().join("ws/ledger.jsonl");
    let err = WorkspaceServer::open(&dir.path().join("ws"), Some(&inside)).err().unwrap();
    assert!(err.to_string().contains("inside the workspace"), "{err}");
    assert!(!inside.exists());
}

#[tokio::test]
async fn a_reopened_ledger_continues_its_numbering() {
    let mut first = Lab::start().await;
    first.ok("make_dir", json!({"path": "a"})).await;
    first.ok("make_dir", json!({"path": "b"})).await;
    let mut second = Lab::connect(first.dir).await;
    second.ok("make_dir", json!({"path": "c"})).await;
    let seqs: Vec<Value> = second.ledger().iter().map(|entry| entry["seq"].clone()).collect();
    assert_eq!(seqs, [1, 2, 3]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever path an agent invents, a write either lands inside the workspace or is a tool error; the outside
    /// never changes and the server never panics (it answers every call).
    #[test]
    fn no_path_writes_outside(paths in prop::collection::vec(invented_path(), 1..6)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let mut lab = Lab::start().await;
            symlink(lab.outside(), lab.root().join("out")).unwrap();
            std::fs::create_dir(lab.root().join("inner")).unwrap();
            let before = lab.outside_state();
            for path in &paths {
                lab.call("write_file", json!({"path": path, "content": "p"})).await;
                lab.call("make_dir", json!({"path": path})).await;
                lab.call("move_file", json!({"from": "inner", "to": path})).await;
                lab.call("delete_file", json!({"path": path})).await;
            }
            assert_eq!(lab.outside_state(), before);
            assert_eq!(lab.ledger().len(), paths.len() * 4);
        });
    }
}

/// Paths made of the parts that matter: climbing, the link to the outside, a real folder, odd names, and
/// sometimes a leading `/`.
fn invented_path() -> impl Strategy<Value = String> {
    let part = prop::sample::select(vec!["..", ".", "out", "inner", "a", "", "~", "\\..", "nul\0", "é", "secret.txt"]);
    (any::<bool>(), prop::collection::vec(part, 0..6))
        .prop_map(|(absolute, parts)| format!("{}{}", if absolute { "/" } else { "" }, parts.join("/")))
}

#[tokio::test]
async fn a_destructive_write_happens_only_once_the_user_confirms_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    std::fs::write(dir.path().join("root/report.txt"), "old\n").unwrap();
    let capabilities = json!({"elicitation": {"form": {}}});
    let mut lab = Lab::connect_with(dir, true, capabilities).await;
    let report = lab.root().join("report.txt");
    let write = json!({"path": "report.txt", "content": "new"});

    // Declined, accepted without confirm, cancelled: asked each time, the file untouched, each refusal in the ledger.
    for (answer, why) in [
        (json!({"action": "decline"}), "the user declined"),
        (json!({"action": "accept", "content": {"confirm": false}}), "without confirming"),
        (json!({"action": "cancel"}), "the user cancelled"),
    ] {
        let (error, text, asked) = lab.call_answering("write_file", write.clone(), &answer).await;
        assert!(error && text.contains(why) && text.contains("nothing was changed"), "{text}");
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0]["mode"], "form");
        assert_eq!(asked[0]["requestedSchema"]["properties"]["confirm"]["type"], "boolean");
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "old\n");
    }
    let ledger = lab.ledger();
    assert_eq!(ledger.len(), 3, "{ledger:?}");
    assert!(ledger.iter().all(|e| e["ok"] == false && e["path"] == "report.txt"), "{ledger:?}");

    // A new file is no overwrite: written without asking.
    let (error, _, asked) =
        lab.call_answering("write_file", json!({"path": "new.txt", "content": "x"}), &json!({})).await;
    assert!(!error && asked.is_empty(), "{asked:?}");

    // Confirmed: written, once.
    let yes = json!({"action": "accept", "content": {"confirm": true}});
    let (error, text, asked) = lab.call_answering("write_file", write, &yes).await;
    assert!(!error && asked.len() == 1, "{text}");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "new");

    // delete_file asks too.
    let (error, text, asked) =
        lab.call_answering("delete_file", json!({"path": "report.txt"}), &json!({"action": "decline"})).await;
    assert!(error && asked.len() == 1 && report.exists(), "{text}");
    let (error, _, _) = lab.call_answering("delete_file", json!({"path": "report.txt"}), &yes).await;
    assert!(!error && !report.exists());
}

#[tokio::test]
async fn a_client_without_elicitation_cannot_overwrite_when_confirmation_is_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    std::fs::write(dir.path().join("root/report.txt"), "old\n").unwrap();
    let mut lab = Lab::connect_with(dir, true, json!({})).await;
    let (error, text, asked) =
        lab.call_answering("write_file", json!({"path": "report.txt", "content": "new"}), &json!({})).await;
    assert!(error && asked.is_empty(), "{asked:?}");
    assert!(text.contains("did not declare the elicitation capability"), "{text}");
    assert_eq!(std::fs::read_to_string(lab.root().join("report.txt")).unwrap(), "old\n");
    assert_eq!(lab.ledger()[0]["ok"], false);
}
