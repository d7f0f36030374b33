//! One graded run: a fresh workspace seeded from the task, the agent started as its own process group with an
//! `mcpServers` file naming `faultlab proxy` (which starts the real server), a deadline, then the evidence read
//! back from files and graded.
//!
//! Every process of a run (agent, proxy, server) is in one process group, so a hung agent is killed with
//! everything it started. The eval process is the child subreaper (Linux), so processes orphaned by an agent's
//! exit are reaped here, and a run is graded only after all of them have ended and written their last line.

use crate::agent::ControlAgent;
use crate::contract::{self, Claim, McpConfig};
use crate::evidence::{self, AgentEnd, Evidence, Snapshot};
use crate::grade::{self, Verdict};
use crate::task::{Category, NONCE, Task};
use faultlab_proxy::rules::RulesFile;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the proxy and server get to finish after the agent exits before they are killed (2 s): they end
/// on the agent's closed pipe within milliseconds; the grace only bounds a server that ignores it.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Bound on one `command_succeeded` check (10 s).
const COMMAND_LIMIT: Duration = Duration::from_secs(10);

/// Who is under test.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentSpec {
    Control(ControlAgent),
    /// A command line: program and arguments.
    Command(Vec<String>),
}

impl AgentSpec {
    /// The name in reports: a control agent's name, or the command's program file name.
    pub fn label(&self) -> String {
        match self {
            AgentSpec::Control(agent) => agent.name().into(),
            AgentSpec::Command(command) => command
                .first()
                .map(|p| Path::new(p).file_name().map_or(p.clone(), |f| f.to_string_lossy().into_owned()))
                .unwrap_or_default(),
        }
    }
}

/// Everything one run needs.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub task: Arc<Task>,
    pub agent: AgentSpec,
    /// 0-based repeat index.
    pub repeat: u32,
    pub seed: u64,
    /// This run's folder (created): rules, mcpServers file, trajectory, ledger, claim, agent log, workspace.
    pub dir: PathBuf,
    /// The same folder as the report names it: relative to the report's folder, with `/`.
    pub report_dir: String,
    pub keep_workspace: bool,
    /// The `faultlab` executable (for the proxy, the workspace server and the control agents).
    pub faultlab: PathBuf,
    /// Overrides the task's deadline (milliseconds).
    pub deadline_ms: Option<u64>,
    /// Replay: the trajectory of a recorded run whose server replies are served again (see [`crate::replay`]).
    pub cassette: Option<PathBuf>,
}

/// A graded run, as reports show it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub task: String,
    pub agent: String,
    /// The agent as started: a control agent's name, or the command line (what `faultlab replay` starts again).
    pub agent_spec: AgentSpec,
    pub repeat: u32,
    pub seed: u64,
    pub categories: Vec<Category>,
    /// The catalogue faults of the task's rules (whether or not they fired).
    #[serde(default)]
    pub faults: Vec<String>,
    /// The faults that fired in this run (catalogue names, in order of first firing).
    pub faults_fired: Vec<String>,
    pub nonce: String,
    pub end: AgentEnd,
    pub claim: Option<Claim>,
    pub duration_ms: u64,
    pub verdict: Verdict,
    /// The run's folder, relative to the report.
    pub dir: String,
    /// Every tool call as the proxy saw it (the full trajectory is `trajectory.jsonl` in `dir`).
    pub calls: Vec<evidence::ToolCall>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("run folder {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Trajectory { path: String, source: evidence::TrajectoryError },
    #[error("cannot start the agent {command:?}: {source}")]
    Agent { command: String, source: std::io::Error },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io { path: path.display().to_string(), source }
}

/// The run's nonce: from the seed and the run's coordinates, so reruns with one seed are identical and no two
/// runs of a batch share one.
pub fn nonce(seed: u64, task: &str, agent: &str, repeat: u32) -> String {
    evidence::sha256_hex(format!("faultlab-nonce:{seed}:{task}:{agent}:{repeat}").as_bytes())[..16].to_owned()
}

/// Makes this process the subreaper of its descendants, so an agent's orphaned proxy can be waited for.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

pub async fn run(spec: RunSpec) -> Result<RunRecord, RunError> {
    let dir = &spec.dir;
    // A run folder left by an earlier batch would mix its trajectory and ledger (both appended) into this run.
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io(dir))?;
    }
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace).map_err(io(&workspace))?;
    let label = spec.agent.label();
    let nonce = nonce(spec.seed, &spec.task.id, &label, spec.repeat);
    for (path, contents) in &spec.task.workspace {
        let file = workspace.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&file, contents.replace(NONCE, &nonce)).map_err(io(&file))?;
    }
    let before = Snapshot::take(&workspace).map_err(io(&workspace))?;

    let paths = RunPaths::new(dir);
    write_json(&paths.rules, &RulesFile { seed: Some(spec.seed), rules: spec.task.faults.clone() })?;
    // The agent sees the deadline it really has (an override included).
    let mut seen = spec.task.as_ref().clone();
    seen.deadline_ms = spec.deadline_ms.unwrap_or(seen.deadline_ms);
    write_json(&paths.task, &seen)?;
    write_json(&paths.config, &mcp_config(&spec, &paths, &workspace))?;

    let started = Instant::now();
    let deadline = Duration::from_millis(spec.deadline_ms.unwrap_or(spec.task.deadline_ms));
    let end = run_agent(&spec, &paths, deadline).await?;
    let duration_ms = started.elapsed().as_millis() as u64;

    let after = Snapshot::take(&workspace).map_err(io(&workspace))?;
    let trajectory = std::fs::read_to_string(&paths.trajectory).unwrap_or_default();
    let calls = evidence::tool_calls(&trajectory)
        .map_err(|source| RunError::Trajectory { path: paths.trajectory.display().to_string(), source })?;
    let ledger = match spec.task.server.is_builtin() {
        true => Some(
            evidence::ledger(&std::fs::read_to_string(&paths.ledger).unwrap_or_default())
                .map_err(|source| RunError::Trajectory { path: paths.ledger.display().to_string(), source })?,
        ),
        false => None,
    };
    let (claim, claim_error) = read_claim(&paths.claim);
    let commands = run_commands(&spec.task, &workspace).await;
    let evidence = Evidence { calls, ledger, before, after, claim, claim_error, end, duration_ms, nonce, commands };
    let verdict = grade::grade(&spec.task, &evidence);
    if !spec.keep_workspace {
        let _ = std::fs::remove_dir_all(&workspace);
    }
    let mut faults_fired: Vec<String> = Vec::new();
    for fault in evidence.calls.iter().filter_map(|c| c.fault.clone()) {
        if !faults_fired.contains(&fault) {
            faults_fired.push(fault);
        }
    }
    Ok(RunRecord {
        task: spec.task.id.clone(),
        agent: label,
        agent_spec: spec.agent.clone(),
        repeat: spec.repeat,
        seed: spec.seed,
        categories: spec.task.categories(),
        faults: {
            let mut names: Vec<String> = spec.task.faults.iter().map(|r| r.fault.name().to_owned()).collect();
            names.dedup();
            names
        },
        faults_fired,
        nonce: evidence.nonce,
        end,
        claim: evidence.claim,
        duration_ms,
        verdict,
        dir: spec.report_dir.clone(),
        calls: evidence.calls,
    })
}

struct RunPaths {
    rules: PathBuf,
    task: PathBuf,
    config: PathBuf,
    trajectory: PathBuf,
    ledger: PathBuf,
    claim: PathBuf,
    log: PathBuf,
    replay_log: PathBuf,
}

impl RunPaths {
    fn new(dir: &Path) -> Self {
        Self {
            rules: dir.join("rules.json"),
            task: dir.join("task.json"),
            config: dir.join("mcp.json"),
            trajectory: dir.join("trajectory.jsonl"),
            ledger: dir.join("ledger.jsonl"),
            claim: dir.join("claim.json"),
            log: dir.join("agent.log"),
            replay_log: dir.join("replay.jsonl"),
        }
    }
}

fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), RunError> {
    let text = serde_json::to_string_pretty(value).expect("plain data serialises");
    std::fs::write(path, text).map_err(io(path))
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

/// The `mcpServers` file: the proxy, with the task's faults, in front of the task's server.
fn mcp_config(spec: &RunSpec, paths: &RunPaths, workspace: &Path) -> McpConfig {
    let exe = text(&spec.faultlab);
    // Bodies are recorded so that any run can be replayed later.
    let mut args: Vec<String> = ["proxy", "--record-bodies", "--rules"].map(String::from).to_vec();
    args.extend([text(&paths.rules), "--record".into(), text(&paths.trajectory)]);
    let server: Vec<String> = match (&spec.task.server.command, &spec.task.server.url) {
        (_, Some(url)) => {
            args.extend(["--upstream".into(), url.clone()]);
            return McpConfig::single(exe, args);
        }
        (Some(command), None) => command.iter().map(|a| a.replace("{workspace}", &text(workspace))).collect(),
        (None, None) => vec![
            exe.clone(),
            "workspace-server".into(),
            "--root".into(),
            text(workspace),
            "--ledger".into(),
            text(&paths.ledger),
        ],
    };
    args.push("--".into());
    if let Some(cassette) = &spec.cassette {
        args.extend([exe.clone(), "replay-server".into(), "--cassette".into(), text(cassette)]);
        args.extend(["--log".into(), text(&paths.replay_log), "--".into()]);
    }
    args.extend(server);
    McpConfig::single(exe, args)
}

/// Starts the agent in its own process group, waits for it up to the deadline, and makes sure every process of
/// the run has ended before returning.
async fn run_agent(spec: &RunSpec, paths: &RunPaths, deadline: Duration) -> Result<AgentEnd, RunError> {
    let (program, args): (String, Vec<String>) = match &spec.agent {
        AgentSpec::Control(agent) => (text(&spec.faultlab), vec!["agent".into(), agent.name().into()]),
        AgentSpec::Command(command) => match command.split_first() {
            Some((program, args)) => (program.clone(), args.to_vec()),
            None => return Ok(AgentEnd::FailedToStart),
        },
    };
    let log = std::fs::File::create(&paths.log).map_err(io(&paths.log))?;
    let log_err = log.try_clone().map_err(io(&paths.log))?;
    let mut command = tokio::process::Command::new(&program);
    command
        .args(&args)
        .env(contract::ENV_MCP_CONFIG, &paths.config)
        .env(contract::ENV_GOAL, &spec.task.goal)
        .env(contract::ENV_TASK, &paths.task)
        .env(contract::ENV_RESULT, &paths.claim)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| RunError::Agent { command: program.clone(), source })?;
    let group = child.id().map(|pid| pid as i32).unwrap_or(0);
    // The run folder is in the command line of the proxy and of the built-in server: it finds them even when an
    // agent starts its server in a session of its own (the Python SDK does), out of the agent's process group.
    let run = Members { group, marker: spec.dir.display().to_string() };
    let end = match tokio::time::timeout(deadline, child.wait()).await {
        Ok(Ok(status)) => AgentEnd::Exited { code: status.code() },
        Ok(Err(_)) => AgentEnd::Exited { code: None },
        Err(_) => {
            run.kill();
            let _ = child.wait().await;
            AgentEnd::KilledAtDeadline
        }
    };
    drain(run).await;
    Ok(end)
}

/// The processes of one run: the agent's process group, and any process whose command line names the run folder.
struct Members {
    group: i32,
    marker: String,
}

impl Members {
    /// Live members (pid), and members that have ended but are still unreaped children of this process.
    fn scan(&self) -> (Vec<i32>, Vec<i32>) {
        let (mut live, mut zombies) = (Vec::new(), Vec::new());
        let me = std::process::id() as i32;
        let Ok(entries) = std::fs::read_dir("/proc") else { return (live, zombies) };
        for pid in entries.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            // Fields after the command name (which may hold spaces), closed by the last ')': state, ppid, pgrp.
            let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let (Some(state), Some(ppid), Some(pgrp)) = (fields.first(), fields.get(1), fields.get(2)) else {
                continue;
            };
            let in_group = self.group > 0 && pgrp.parse::<i32>().ok() == Some(self.group);
            if *state == "Z" {
                if in_group && ppid.parse::<i32>().ok() == Some(me) {
                    zombies.push(pid);
                }
                continue;
            }
            let marked = || {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(self.marker.as_str()))
            };
            if pid != me && (in_group || marked()) {
                live.push(pid);
            }
        }
        (live, zombies)
    }

    fn kill(&self) {
        use nix::sys::signal::{Signal, kill, killpg};
        use nix::unistd::Pid;
        if self.group > 0 {
            let _ = killpg(Pid::from_raw(self.group), Signal::SIGKILL);
        }
        for pid in self.scan().0 {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Waits until no process of the run is left, reaping the ones reparented to this subreaper; after
/// [`DRAIN_GRACE`] the rest are killed. Each wait is an event: a pidfd per live process turns readable when that
/// process exits (the proxy and server end on the agent's closed pipe within milliseconds), then the run is
/// looked over again, since an exit may orphan further members.
async fn drain(run: Members) {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    let started = Instant::now();
    let mut killed = false;
    loop {
        let (live, zombies) = run.scan();
        for pid in zombies {
            let _ = waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
        if live.is_empty() {
            return;
        }
        let limit = if killed { DRAIN_GRACE * 2 } else { DRAIN_GRACE };
        let left = limit.saturating_sub(started.elapsed());
        if left.is_zero() {
            if killed {
                return;
            }
            run.kill();
            killed = true;
            continue;
        }
        wait_for_any_exit(&live, left).await;
    }
}

/// Blocks (off the runtime) until one of `pids` exits or `limit` passes. A process already gone cannot be opened
/// and counts as exited.
async fn wait_for_any_exit(pids: &[i32], limit: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let mut fds = Vec::new();
    for pid in pids {
        match Pid::from_raw(*pid).map(|pid| pidfd_open(pid, PidfdFlags::empty())) {
            Some(Ok(fd)) => fds.push(fd),
            _ => return,
        }
    }
    let timeout = Timespec { tv_sec: limit.as_secs() as _, tv_nsec: limit.subsec_nanos() as _ };
    let _ = tokio::task::spawn_blocking(move || {
        let mut polled: Vec<PollFd> = fds.iter().map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
        poll(&mut polled, Some(&timeout))
    })
    .await;
}

fn read_claim(path: &Path) -> (Option<Claim>, Option<String>) {
    match std::fs::read_to_string(path) {
        Err(_) => (None, None),
        Ok(text) => match faultlab_wire::nesting::check(&text, faultlab_wire::nesting::Syntax::Json)
            .map_err(|e| e.to_string())
            .and_then(|()| serde_json::from_str::<Claim>(&text).map_err(|e| e.to_string()))
        {
            Ok(claim) => (Some(claim), None),
            Err(e) => (None, Some(format!("{}: {e}", path.display()))),
        },
    }
}

async fn run_commands(task: &Task, workspace: &Path) -> Vec<bool> {
    let mut results = Vec::new();
    for assertion in &task.grader.state_assertions {
        if let crate::task::StateAssertion::CommandSucceeded { command } = assertion {
            let Some((program, args)) = command.split_first() else {
                results.push(false);
                continue;
            };
            let status = tokio::process::Command::new(program)
                .args(args)
                .current_dir(workspace)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .status();
            let ok = matches!(tokio::time::timeout(COMMAND_LIMIT, status).await, Ok(Ok(s)) if s.success());
            results.push(ok);
        }
    }
    results
}
