//! What the stdio proxy tests share: a raw line client on `faultlab proxy` (or `faultlab serve` directly).

use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long any single read or exit may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(20);
pub const BIN: &str = env!("CARGO_BIN_EXE_faultlab");

/// An HTTP client for the lab's plain http:// listeners (reqwest's own constructors need a TLS crypto provider).
pub fn http_client() -> reqwest::Client {
    faultlab_client::tls::client_builder().build().unwrap()
}

/// A POST of one JSON-RPC message as a Streamable HTTP client sends it (JSON body, accepting JSON or SSE).
pub fn mcp_post(http: &reqwest::Client, url: &str, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
}

/// The binary under test as an `assert_cmd` command.
pub fn faultlab() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("faultlab").unwrap()
}

/// Runs `faultlab ARGS` and checks that it exits with `code`; what it printed is checked on the returned assert.
pub fn exits<S: AsRef<std::ffi::OsStr>>(code: i32, args: impl IntoIterator<Item = S>) -> assert_cmd::assert::Assert {
    faultlab().args(args).assert().code(code)
}

/// As [`exits`], run in `dir`.
pub fn exits_in<S: AsRef<std::ffi::OsStr>>(
    dir: &std::path::Path,
    code: i32,
    args: impl IntoIterator<Item = S>,
) -> assert_cmd::assert::Assert {
    faultlab().current_dir(dir).args(args).assert().code(code)
}

/// Whether `python3` is on PATH, for the tests whose agent is a Python script (standard library only). Without it
/// (an offline machine with no Python) such a test says so in one line and passes; `scripts/test.sh` checks for
/// python3 before it builds, so its `rust` stage always runs them.
pub fn python3(test: &str) -> bool {
    let found =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|dir| dir.join("python3").is_file());
    if !found {
        eprintln!("skipped {test}: no python3 on PATH; the `rust` stage of scripts/test.sh runs it");
    }
    found
}

/// A file or folder of this repository (`examples/...`), by its path from the root.
pub fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// The `--agent` command that starts the control agent `name` (`good`, `gives-up`...) from the binary under test.
pub fn control_agent(name: &str) -> String {
    format!("{BIN} agent {name}")
}

/// A JSON file a command wrote (a report, a trace).
pub fn read_json(path: impl AsRef<std::path::Path>) -> Value {
    let path = path.as_ref();
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A proxy trajectory that holds only its start: no frame bodies, so nothing can be replayed from it.
pub fn bodiless_trajectory(path: &std::path::Path) {
    std::fs::write(path, "{\"tsMs\":0,\"scope\":\"stdio\",\"event\":\"run_started\",\"seed\":0,\"rules\":0}\n")
        .unwrap();
}

/// Starts `faultlab ARGS` with these stdin, stdout and stderr; it is killed when dropped.
pub fn spawn(args: &[&str], stdio: [Stdio; 3]) -> tokio::process::Child {
    spawn_with(tokio::process::Command::new(BIN), args, stdio)
}

/// As [`spawn`], for a command set up by the caller (another program, a folder, an environment).
pub fn spawn_with(
    mut command: tokio::process::Command,
    args: &[&str],
    [stdin, stdout, stderr]: [Stdio; 3],
) -> tokio::process::Child {
    command.args(args).stdin(stdin).stdout(stdout).stderr(stderr).kill_on_drop(true).spawn().unwrap()
}

/// A line client on stdio to one `faultlab` process: the proxy, or the server directly.
pub struct Client {
    pub child: tokio::process::Child,
    pub stdin: Option<tokio::process::ChildStdin>,
    pub stdout: BufReader<tokio::process::ChildStdout>,
}

impl Client {
    pub fn spawn(args: &[&str]) -> Self {
        Self::spawn_command(tokio::process::Command::new(BIN), args, Stdio::null())
    }

    /// [`bin()`] (which may be another build), its stderr kept for [`Client::finish_output`].
    pub fn spawn_peer(args: &[&str]) -> Self {
        Self::spawn_command(tokio::process::Command::new(bin()), args, Stdio::piped())
    }

    /// Also returns the process's stderr (where the proxy writes its trajectory without `--record`), to wait on
    /// its events.
    pub fn spawn_watching(args: &[&str]) -> (Self, tokio::io::Lines<BufReader<tokio::process::ChildStderr>>) {
        let mut client = Self::spawn_command(tokio::process::Command::new(BIN), args, Stdio::piped());
        let stderr = BufReader::new(client.child.stderr.take().unwrap()).lines();
        (client, stderr)
    }

    /// Runs in `dir` with the binary under test first on the PATH, as if installed: a README command runs as
    /// written.
    pub fn spawn_installed(dir: &std::path::Path, args: &[&str]) -> Self {
        let bin_dir = std::path::Path::new(BIN).parent().unwrap().to_owned();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&path))).unwrap();
        let mut command = tokio::process::Command::new(BIN);
        command.current_dir(dir).env("PATH", path);
        Self::spawn_command(command, args, Stdio::null())
    }

    fn spawn_command(command: tokio::process::Command, args: &[&str], stderr: Stdio) -> Self {
        let mut child = spawn_with(command, args, [Stdio::piped(), Stdio::piped(), stderr]);
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout }
    }

    pub fn proxied(extra: &[&str]) -> Self {
        let mut args = vec!["proxy"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", BIN, "serve"]);
        Self::spawn(&args)
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.as_mut().unwrap().write_all(bytes).await.unwrap();
    }

    pub async fn send(&mut self, value: &Value) {
        self.send_raw(format!("{value}\n").as_bytes()).await;
    }

    /// The next line, `None` at EOF; fails the test after `PATIENCE`.
    pub async fn recv_raw(&mut self) -> Option<String> {
        let mut line = String::new();
        let n =
            tokio::time::timeout(PATIENCE, self.stdout.read_line(&mut line)).await.expect("a line in time").unwrap();
        (n > 0).then_some(line)
    }

    pub async fn recv(&mut self) -> Value {
        serde_json::from_str(&self.recv_raw().await.expect("a line, not EOF")).unwrap()
    }

    /// The 2025-11-25 handshake; returns the `initialize` reply's line.
    pub async fn initialize(&mut self) -> String {
        self.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
            "capabilities":{},"clientInfo":{"name":"proxy-test","version":"1"}}}))
            .await;
        let line = self.recv_raw().await.unwrap();
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
        line
    }

    pub async fn call(&mut self, id: i64, tool: &str, args: Value) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}))
            .await;
    }

    /// Sends request 2, a `tools/call` of `tool` whose line is `padding` bytes over, expects the -32600 error for
    /// its id (read from the line's start), then that the connection goes on (ping 3 is answered).
    pub async fn send_oversized_then_ping(&mut self, tool: &str, padding: usize) {
        let start =
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"x":""#);
        let mut long = start.into_bytes();
        long.extend(std::iter::repeat_n(b'x', padding));
        long.extend_from_slice(b"\"}}}\n");
        self.send_raw(&long).await;
        let reply = self.recv().await;
        assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(2), json!(-32600)), "{reply}");
        self.send(&json!({"jsonrpc":"2.0","id":3,"method":"ping"})).await;
        assert_eq!(self.recv().await["id"], 3, "the connection goes on");
    }

    pub async fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        tokio::time::timeout(PATIENCE, self.child.wait()).await.unwrap().unwrap().code()
    }

    /// Closes stdin and waits for the exit of a [`Client::spawn_peer`]: (exit code, stderr).
    pub async fn finish_output(mut self, patience: Duration) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let out = tokio::time::timeout(patience, self.child.wait_with_output()).await.expect("exits in time").unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The binary under test (`FAULTLAB_TEST_BIN` may name another build, to check a test fails without a fix).
pub fn bin() -> String {
    std::env::var("FAULTLAB_TEST_BIN").unwrap_or_else(|_| BIN.to_owned())
}

/// A `faultlab` process started for a test, killed when dropped; what it printed before it was ready is kept.
pub struct Lab {
    pub child: tokio::process::Child,
    /// What the binary printed on stderr before it was ready (addresses, a token).
    pub banner: Vec<String>,
}

impl Lab {
    /// Starts `faultlab args` and reads stderr until a line starting with `ready` (other lines are kept).
    pub async fn start(args: &[&str], ready: &str) -> Self {
        let (lab, mut stderr) = Self::start_reading(args, ready).await;
        tokio::spawn(async move { while stderr.read_line(&mut String::new()).await.is_ok_and(|n| n > 0) {} });
        lab
    }

    /// As [`Lab::start`], keeping everything it writes on stderr after the ready line: the task ends, with it, when
    /// the process closes stderr.
    pub async fn start_capturing(args: &[&str], ready: &str) -> (Self, tokio::task::JoinHandle<String>) {
        let (lab, mut stderr) = Self::start_reading(args, ready).await;
        let rest = tokio::spawn(async move {
            let mut all = String::new();
            while stderr.read_line(&mut all).await.is_ok_and(|n| n > 0) {}
            all
        });
        (lab, rest)
    }

    /// As [`Lab::start`], then closes the only reader of its stderr: what it writes there from then on fails
    /// (EPIPE), as when the program that started it has gone.
    pub async fn start_deaf(args: &[&str], ready: &str) -> Self {
        Self::start_reading(args, ready).await.0
    }

    /// As [`Lab::start`], with these environment variables set.
    pub async fn start_env(args: &[&str], vars: &[(&str, &str)], ready: &str) -> Self {
        let mut command = tokio::process::Command::new(BIN);
        command.envs(vars.iter().copied());
        let (lab, mut stderr) = Self::start_command(command, args, ready).await;
        tokio::spawn(async move { while stderr.read_line(&mut String::new()).await.is_ok_and(|n| n > 0) {} });
        lab
    }

    async fn start_reading(args: &[&str], ready: &str) -> (Self, BufReader<tokio::process::ChildStderr>) {
        Self::start_command(tokio::process::Command::new(BIN), args, ready).await
    }

    async fn start_command(
        command: tokio::process::Command,
        args: &[&str],
        ready: &str,
    ) -> (Self, BufReader<tokio::process::ChildStderr>) {
        let mut child = spawn_with(command, args, [Stdio::null(), Stdio::null(), Stdio::piped()]);
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut banner = Vec::new();
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(PATIENCE, stderr.read_line(&mut line)).await.unwrap().unwrap();
            assert!(n > 0, "faultlab exited before it was ready: {banner:?}");
            let done = line.starts_with(ready);
            banner.push(line.trim().to_owned());
            if done {
                break;
            }
        }
        (Self { child, banner }, stderr)
    }

    /// The first word after `marker` in the banner (a URL).
    pub fn after(&self, marker: &str) -> String {
        let line = self.banner.iter().find_map(|l| l.strip_prefix(marker)).unwrap_or_else(|| panic!("{marker}"));
        line.split(' ').next().unwrap().to_owned()
    }

    pub async fn serve(extra: &[&str]) -> (Self, String) {
        let mut args = vec!["serve", "--transport", "http", "--port", "0"];
        args.extend_from_slice(extra);
        let lab = Self::start(&args, "faultlab: listening at ").await;
        let url = lab.after("faultlab: listening at ");
        (lab, url)
    }

    /// A bridge (`proxy --listen`) to the stdio child `command`.
    pub async fn bridge(extra: &[&str], command: &[&str]) -> (Self, String) {
        let mut args = vec!["proxy", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        args.push("--");
        args.extend_from_slice(command);
        let lab = Self::start(&args, "faultlab: proxy listening at ").await;
        let url = lab.after("faultlab: proxy listening at ");
        (lab, url)
    }

    pub fn terminate(&self) {
        let pid = rustix::process::Pid::from_raw(self.child.id().unwrap() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    }

    /// How long the process takes to exit (panics after PATIENCE).
    pub async fn exit_time(&mut self) -> Duration {
        let start = Instant::now();
        tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("faultlab did not exit").unwrap();
        start.elapsed()
    }
}

/// A pidfd for `pid`: it turns readable when that process exits, whoever its parent is.
pub fn pidfd(pid: i32) -> std::os::fd::OwnedFd {
    let pid = rustix::process::Pid::from_raw(pid).expect("a process id");
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).expect("pidfd_open")
}

/// Whether the process behind `fd` (see [`pidfd`]) exits within `patience`: one poll on the pidfd, on a blocking
/// thread, woken by the exit.
pub async fn exits_within(fd: std::os::fd::OwnedFd, patience: Duration) -> bool {
    tokio::task::spawn_blocking(move || {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let timeout = Timespec::try_from(patience).expect("a patience in range");
        poll(&mut [PollFd::new(&fd, PollFlags::IN)], Some(&timeout)).expect("poll pidfd") == 1
    })
    .await
    .unwrap()
}
