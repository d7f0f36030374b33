//! The run's proxy in eval's own process, for a task over stdio: the proxy's Unix front
//! ([`faultlab_proxy::front::unix`]) on the run's socket, each connection in front of the built-in workspace
//! server as an in-process upstream (`faultlab-server`, rmcp over an in-memory pipe), instead of a
//! `faultlab proxy --listen-fd` process starting a `faultlab workspace-server` process per connection. What the
//! run leaves is the same: one trajectory with a scope per connection, the ledger the workspace server writes, the
//! rule state shared by the connections, a `connected` notice per connection, and `proxy.log` (what the proxy and
//! the servers would have written on stderr).
//!
//! A server the task names by command, and the workspace server when a rule crashes and restarts it
//! (`server_outage` with `restart`: only a process can be crashed), stay child processes behind the in-process
//! proxy, started and stopped in order as the proxy process does. Every run's proxy is a task of one runtime with
//! threads of its own, so eval's own blocking work never delays a frame. A panic anywhere in the proxy is caught at
//! its task and becomes the run's set-up error.

use faultlab_engine::Recorder;
use faultlab_engine::recording::Recording;
use faultlab_engine::rules::{RulesFile, Schedule};
use faultlab_engine::trajectory::Trajectory;
use faultlab_proxy::front::unix::{self, Record, Served};
use faultlab_proxy::recording::SharedRecording;
use faultlab_proxy::relay::{Connect, ProxyOptions};
use faultlab_proxy::rules::{RuleSet, SharedRules};
use faultlab_proxy::upstream::child::Child;
use faultlab_proxy::upstream::in_process::InProcess;
use faultlab_server::workspace::WorkspaceServer;
use faultlab_wire::MAX_LINE_BYTES;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Where a run's proxy runs (`FAULTLAB_EVAL_PROXY=process` or `in-process`; the other one is kept for comparison:
/// the bench's "before" column).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProxyPlace {
    /// In eval's process, for every task over stdio (see this module).
    #[default]
    InProcess,
    /// A `faultlab proxy` process per run, which starts a server process per connection.
    Process,
}

/// The variable that chooses where the proxy runs: `process` or `in-process` (unset, or any other value: the
/// default).
pub const PLACE_VAR: &str = "FAULTLAB_EVAL_PROXY";

impl ProxyPlace {
    /// As `FAULTLAB_EVAL_PROXY` says, else the default.
    pub fn from_env() -> Self {
        match std::env::var(PLACE_VAR).as_deref() {
            Ok("process") => Self::Process,
            Ok("in-process") => Self::InProcess,
            _ => Self::default(),
        }
    }
}

/// The server behind each connection.
#[derive(Debug, Clone)]
pub enum Server {
    /// The built-in workspace server on `root`, writing `ledger`.
    Workspace { root: PathBuf, ledger: PathBuf, confirm_destructive: bool },
    /// A program started per connection (the task's own server, or `faultlab workspace-server` when a rule restarts
    /// it), with these variables besides eval's environment; its stderr goes to the run's `proxy.log`.
    Command { command: Vec<String>, env: BTreeMap<String, String> },
}

/// What the run's proxy is given: the task's rules, the server, where it records, and the recording laid over the
/// server when replaying.
pub struct Plan {
    pub rules: RulesFile,
    pub server: Server,
    pub trajectory: PathBuf,
    pub log: PathBuf,
    /// Replay: the recording and the file its log goes to.
    pub replay: Option<(PathBuf, PathBuf)>,
}

/// Whether any rule crashes and restarts the server (`server_outage` with `restart`).
pub fn restarts(rules: &RulesFile) -> bool {
    rules.rules.iter().any(|rule| rule.schedule().is_some_and(Schedule::restarts))
}

/// The run's proxy, serving on its task.
pub struct Proxy {
    task: JoinHandle<Served>,
    stop: CancellationToken,
    log: PathBuf,
    recorder: Recorder,
}

/// The longest the proxy gets to end every connection once asked (7 s): each connection's upstream gets its stop
/// order (its stdin closed, a grace, SIGTERM, a grace: 2 × 2 s at most), then its reader's drain (2 s). Past it, the
/// proxy's task is aborted and the run says so.
const STOP_LIMIT: Duration = Duration::from_secs(7);

impl Proxy {
    /// Starts serving `listener` (bound and listening) on a task of the proxies' runtime ([`runtime`]); `connected` is
    /// notified at each accepted connection. Fails, saying why, when the rules or the recording cannot be used or the
    /// trajectory cannot be created, as the proxy process would have before serving.
    pub fn start(
        listener: std::os::unix::net::UnixListener,
        plan: Plan,
        connected: Arc<tokio::sync::Notify>,
    ) -> Result<Self, String> {
        let restarts = matches!(plan.server, Server::Command { .. });
        let rules = RuleSet::for_front(plan.rules, restarts).map_err(|e| format!("the task's rules: {e}"))?.shared();
        let overlay = match &plan.replay {
            Some((recording, log)) => Some(overlay(recording, log)?),
            None => None,
        };
        listener.set_nonblocking(true).map_err(|e| format!("the run's socket: {e}"))?;
        let runtime = runtime()?;
        // Registered with the proxies' runtime, whose reactor serves it.
        let listener = {
            let _entered = runtime.enter();
            tokio::net::UnixListener::from_std(listener).map_err(|e| format!("the run's socket: {e}"))?
        };
        let recorder = Recorder::file(&plan.trajectory)
            .map_err(|e| format!("cannot open the trajectory file {}: {e}", plan.trajectory.display()))?;
        let record = Record { recorder: recorder.clone(), bodies: true, scrub: None };
        let stop = CancellationToken::new();
        let serving = Serving { runtime, listener, rules, record, connected, stop: stop.clone(), overlay };
        let task = match plan.server {
            Server::Workspace { root, ledger, confirm_destructive } => {
                // What the server process would have written on stderr (a reply too long even to cut).
                let log = Recorder::file(&plan.log).map_err(|e| format!("cannot open {}: {e}", plan.log.display()))?;
                let log = log.scoped("workspace");
                let workspace =
                    Workspace { root, ledger, confirm: confirm_destructive, log, log_path: plan.log.clone() };
                serving.spawn(move || workspace.start())
            }
            Server::Command { command, env } => {
                let Some((program, args)) = command.split_first() else {
                    return Err("the task's server command is empty".into());
                };
                let (program, args, log) = (program.clone(), args.to_vec(), plan.log.clone());
                serving.spawn(move || {
                    let mut command = tokio::process::Command::new(&program);
                    command.args(&args).envs(&env);
                    // Its stderr is the run's proxy.log, as it was the proxy process's.
                    if let Ok(file) = std::fs::OpenOptions::new().create(true).append(true).open(&log) {
                        command.stderr(file);
                    }
                    Child(command)
                })
            }
        };
        Ok(Self { task, stop, log: plan.log, recorder })
    }

    /// Ends the proxy as SIGTERM ends the process: no new connection, every open one ended in order (its server
    /// stopped), the trajectory written out. Returns what the process's exit would have said: 0, or 1 with the
    /// connections that lost their server written to `proxy.log`, as the process writes them on stderr. A panic, or
    /// a proxy that did not end within [`STOP_LIMIT`], is the run's set-up error (also written to the log).
    pub async fn finish(mut self) -> (Option<i32>, Option<String>) {
        self.stop.cancel();
        let ended = match tokio::time::timeout(STOP_LIMIT, &mut self.task).await {
            Ok(ended) => ended.map_err(Some),
            Err(_) => {
                self.task.abort();
                let _ = (&mut self.task).await;
                Err(None)
            }
        };
        self.recorder.flush();
        let (code, failed, lines) = outcome(ended);
        for line in lines {
            append(&self.log, &line);
        }
        (code, failed)
    }
}

/// What the proxy's task ended with: the process's exit code, the run's set-up error, and the lines the process
/// would have written on stderr. `Err(None)`: it did not end within [`STOP_LIMIT`].
fn outcome(ended: Result<Served, Option<tokio::task::JoinError>>) -> (Option<i32>, Option<String>, Vec<String>) {
    match ended {
        Ok(served) => {
            // The process ends with a silenced summary: the last line names the failure (the run's set-up error
            // quotes it).
            let lines = served.failures.iter().map(|f| format!("faultlab: {f}")).collect();
            (Some(i32::from(!served.failures.is_empty())), None, lines)
        }
        Err(Some(e)) if e.is_panic() => {
            let failed = format!("the run's proxy {}", panic_text(e.into_panic()));
            (None, Some(failed.clone()), vec![format!("faultlab: error: {failed}")])
        }
        Err(Some(_)) => (None, Some("the run's proxy was cancelled".into()), Vec::new()),
        Err(None) => {
            let failed = format!("the run's proxy did not end within {} s of the agent's end", STOP_LIMIT.as_secs());
            (None, Some(failed.clone()), vec![format!("faultlab: error: {failed}")])
        }
    }
}

/// A panic's message, when it has one.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(text) => format!("panicked: {text}"),
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(text) => format!("panicked: {text}"),
            Err(_) => "panicked".into(),
        },
    }
}

/// Appends `line` to the log (what the proxy process wrote on stderr).
fn append(log: &Path, line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
        let _ = writeln!(file, "{line}");
    }
}

/// The recording to lay over each connection's server, read as `faultlab proxy --replay` reads it.
fn overlay(path: &Path, log: &Path) -> Result<SharedRecording, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read the recording {}: {e}", path.display()))?;
    let trajectory = Trajectory::read(std::io::BufReader::new(file)).map_err(|e| format!("{}: {e}", path.display()))?;
    let recording = Recording::from_trajectory(&trajectory);
    if recording.is_empty() {
        return Err(format!("{} holds no reply bodies", path.display()));
    }
    let file = std::fs::OpenOptions::new().create(true).append(true).open(log);
    let file = file.map_err(|e| format!("cannot open the replay log {}: {e}", log.display()))?;
    Ok(SharedRecording::new(recording, Some(file)))
}

/// The runtime every in-process proxy of this process runs on, on threads of its own (2, made at the first run):
/// eval's own work beside the runs (snapshots, digests, the sweep of `/proc`, grading: file work that holds a
/// thread of eval's runtime for milliseconds) never delays a frame, as it could not delay a proxy process.
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> = std::sync::OnceLock::new();
    // Made once, whichever run comes first (the others wait for it): none is ever dropped in an async context.
    let made = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("faultlab-proxy")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the proxies' runtime: {e}"))
    });
    made.as_ref().map_err(Clone::clone)
}

/// How many tasks of the in-process proxies are alive (none once every run has ended): for the tests of many runs
/// in one process.
#[doc(hidden)]
pub fn alive_tasks() -> usize {
    runtime().map_or(0, |runtime| runtime.metrics().num_alive_tasks())
}

/// What the serving task is made of.
struct Serving {
    runtime: &'static tokio::runtime::Runtime,
    listener: tokio::net::UnixListener,
    rules: SharedRules,
    record: Record,
    connected: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
    overlay: Option<SharedRecording>,
}

impl Serving {
    /// Serves on a task of its own, each connection's server made by `make` (with the recording laid over it when
    /// replaying).
    fn spawn<C, F>(self, make: F) -> JoinHandle<Served>
    where
        C: Connect + Send + 'static,
        F: Fn() -> C + Send + 'static,
    {
        let Self { runtime, listener, rules, record, connected, stop, overlay } = self;
        runtime.spawn(async move {
            let options = ProxyOptions::default();
            let accepted = move |_: u64| connected.notify_one();
            match overlay {
                Some(overlay) => {
                    let upstream = move |_| overlay.over(make());
                    unix::serve(listener, options, upstream, rules, record, accepted, stop).await
                }
                None => unix::serve(listener, options, move |_| make(), rules, record, accepted, stop).await,
            }
        })
    }
}

/// The built-in workspace server, in process, for each connection.
struct Workspace {
    root: PathBuf,
    ledger: PathBuf,
    confirm: bool,
    log: Recorder,
    log_path: PathBuf,
}

impl Workspace {
    /// A fresh server for the next connection, opened as the process opened it at its start (the root confined
    /// with cap-std, the ledger appended to, its numbering going on).
    fn start(&self) -> InProcess {
        let server = match WorkspaceServer::open(&self.root, Some(&self.ledger)) {
            Ok(server) if self.confirm => Ok(server.confirming()),
            Ok(server) => Ok(server),
            Err(e) => Err(e.to_string()),
        };
        let (log, log_path) = (self.log.clone(), self.log_path.clone());
        InProcess::spawn(move |pipe| async move {
            match server {
                Ok(server) => faultlab_server::stdio::serve_lines(server, pipe, log, MAX_LINE_BYTES).await,
                // The process said why on stderr and exited before reading anything: the server's end here.
                Err(e) => append(&log_path, &format!("faultlab: error: {e}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic in the proxy's task is the run's set-up error, with its message, and said in the log; a proxy whose
    /// connections lost their server exits 1 as the process does, each named in the log.
    #[tokio::test]
    async fn a_panic_in_the_proxy_is_the_runs_set_up_error() {
        let panicked = tokio::spawn(async { panic!("a defect") }).await.map(|()| Served::default());
        let (code, failed, lines) = outcome(panicked.map_err(Some));
        assert_eq!(code, None);
        assert_eq!(failed.as_deref(), Some("the run's proxy panicked: a defect"));
        assert_eq!(lines, ["faultlab: error: the run's proxy panicked: a defect"]);

        let served = Served { connections: 2, failures: vec!["connection 2: the upstream exited on its own".into()] };
        let (code, failed, lines) = outcome(Ok(served));
        assert_eq!((code, failed), (Some(1), None));
        assert_eq!(lines, ["faultlab: connection 2: the upstream exited on its own"]);

        let (code, failed, lines) = outcome(Ok(Served { connections: 1, failures: Vec::new() }));
        assert_eq!((code, failed, lines.len()), (Some(0), None, 0));
        let (code, failed, _) = outcome(Err(None));
        assert!(code.is_none() && failed.unwrap().contains("did not end within 7 s"));
    }
}
