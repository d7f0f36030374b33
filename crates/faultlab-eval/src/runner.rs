//! One graded run: a fresh workspace seeded from the task, the run's proxy on the run's socket (in this process for
//! a task over stdio, see [`crate::in_process`]; else `faultlab proxy`, which starts the real server), the agent
//! started as its own process group with an `mcpServers` file naming `faultlab connect` to that socket, a deadline,
//! then the evidence read back from files and graded.
//!
//! The agent's processes are in one process group, so a hung agent is killed with everything it started. The eval
//! process is the child subreaper (Linux), so processes orphaned by an agent's exit are reaped here, and a run is
//! graded only after all of them have ended and written their last line.

use crate::agent::ControlAgent;
use crate::contract::{self, Claim, McpConfig};
use crate::evidence::{self, AgentEnd, Evidence, Snapshot};
use crate::grade::{self, Verdict};
pub use crate::in_process::ProxyPlace;
use crate::sandbox::Isolation;
use crate::task::{AuthSetting, Category, NONCE, Task};
use faultlab_engine::rules::RulesFile;
use faultlab_engine::trajectory::Trajectory;
use faultlab_proc::Signal;
use faultlab_proc::drain::{Members, drain};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the proxy and server get to finish after the agent exits before they are killed (2 s): they end
/// on the agent's closed pipe within milliseconds; the grace only bounds a server that ignores it.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// The descriptor on which `faultlab sandbox` reports its isolation.
const STATUS_FD: i32 = 3;
/// The descriptor on which the run's proxy inherits the socket it serves (`faultlab proxy --listen-fd`).
const PROXY_FD: i32 = 3;

/// The variables of faultlab's environment every agent gets (when set): where programs are and the locale. Any
/// other (a token set for something else) only when named (`--pass-env`, the task's `agent_env`).
pub const AGENT_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "USER",
    "LOGNAME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The largest ledger read (64 MiB: a line of about 200 bytes per write, so some 300 000 writes).
const LEDGER_LIMIT: u64 = 64 * 1024 * 1024;

/// The largest claim read (1 MiB): a claim is a status, a message and an answer.
const CLAIM_LIMIT: u64 = 1024 * 1024;
/// Bound on one `command_succeeded` check (10 s).
const COMMAND_LIMIT: Duration = Duration::from_secs(10);

/// Who is under test.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentSpec {
    Control(ControlAgent),
    /// A command line with the name given by `--agent-name`.
    Named {
        name: String,
        command: Vec<String>,
    },
    /// A command line: program and arguments.
    Command(Vec<String>),
}

/// The agent starts in a scratch folder of its own, so a relative path to its program or script would mean
/// nothing there. Only these two are resolved against faultlab's working directory, and only when they name an
/// existing path: the program when it is written as a path (`./agent`, `bin/agent`; a bare name is looked up on
/// `PATH`, never here), and the script an interpreter runs (`python3 [-u] agents/my_agent.py`, `node agent.js`,
/// `uv run agent.py`) when it names a file. Every other word (a flag, a flag's value, a module, a folder) is passed
/// as written: `--framework autogen` stays itself even beside a folder `autogen`.
pub fn anchor(command: Vec<String>) -> Vec<String> {
    match std::env::current_dir() {
        Ok(cwd) => anchor_in(command, &cwd),
        Err(_) => command,
    }
}

/// [`anchor`], against the folder `cwd`.
fn anchor_in(mut command: Vec<String>, cwd: &Path) -> Vec<String> {
    let resolve = |word: &mut String, file_only: bool| {
        let path = cwd.join(word.as_str());
        let exists = if file_only { path.is_file() } else { path.exists() };
        if Path::new(word.as_str()).is_relative() && exists {
            *word = std::path::absolute(&path).unwrap_or(path).display().to_string();
        }
    };
    let Some((program, args)) = command.split_first_mut() else { return command };
    let interpreter = interpreter(program);
    if program.contains('/') {
        resolve(program, false);
    }
    if interpreter {
        let mut args = args.iter_mut().peekable();
        // `uv run`, `deno run`, `bun run`: the script follows the subcommand.
        if args.peek().is_some_and(|w| *w == "run") {
            args.next();
        }
        for word in args {
            match word.as_str() {
                // A module or inline code runs: there is no script.
                "-m" | "-c" | "-e" | "-p" | "--eval" | "--print" | "--module" => break,
                flag if flag.starts_with('-') => continue,
                _ => {
                    resolve(word, true);
                    break;
                }
            }
        }
    }
    command
}

/// Programs whose first plain argument is the script they run.
fn interpreter(program: &str) -> bool {
    const INTERPRETERS: &[&str] = &["python", "node", "bash", "sh", "zsh", "ruby", "perl", "deno", "bun", "uv", "php"];
    let name = Path::new(program).file_name().map_or(program.to_owned(), |f| f.to_string_lossy().into_owned());
    // `python3`, `python3.12`.
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&base)
}

#[cfg(test)]
mod anchor_tests {
    use super::anchor_in;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    /// A folder holding `agents/my_agent.py`, a folder `autogen`, a program `bin/agent` and a file `input.txt`.
    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for folder in ["agents", "autogen", "bin"] {
            std::fs::create_dir(dir.path().join(folder)).unwrap();
        }
        for file in ["agents/my_agent.py", "bin/agent", "input.txt"] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        dir
    }

    #[test]
    fn only_the_program_and_the_script_it_runs_are_made_absolute() {
        let dir = folder();
        let cwd = dir.path();
        let anchor = |line| anchor_in(line, cwd);
        let abs = |p: &str| cwd.join(p).display().to_string();
        // A flag's value naming a folder, a plain word naming a file: untouched.
        let line = words("python3 -u agents/my_agent.py --framework autogen input.txt");
        let mut expected = line.clone();
        expected[2] = abs("agents/my_agent.py");
        assert_eq!(anchor(line), expected);
        // A program written as a path is resolved; its arguments are not.
        assert_eq!(anchor(words("bin/agent autogen")), [abs("bin/agent"), "autogen".into()]);
        // A bare program name is PATH's business, even beside a file of that name.
        assert_eq!(anchor(words("input.txt --x")), words("input.txt --x"));
        // No script: a module, inline code; a folder is not a script.
        assert_eq!(anchor(words("python3 -m agents input.txt")), words("python3 -m agents input.txt"));
        assert_eq!(anchor(words("node autogen")), words("node autogen"));
        assert_eq!(anchor(words("uv run agents/my_agent.py")), ["uv".into(), "run".into(), abs("agents/my_agent.py")]);
        // A command whose words name nothing here is unchanged.
        assert_eq!(anchor(words("faultlab agent good")), words("faultlab agent good"));
    }
}

/// Programs that run the agent rather than being it: the agent's name comes from what they run.
const LAUNCHERS: &[&str] =
    &["env", "python", "python3", "node", "npx", "uv", "uvx", "bash", "sh", "deno", "bun", "ruby", "perl", "java"];

impl AgentSpec {
    /// The name in reports: a control agent's name, the `--agent-name`, or the first word of the command that is
    /// neither a launcher (`python3`, `node`, `uv`, …) nor a flag, without folder and extension
    /// (`python3 agents/my_agent.py` is `my_agent`; `python3 -m pkg.agent` is `pkg.agent`; `faultlab agent good`
    /// is `good`).
    pub fn label(&self) -> String {
        let command = match self {
            AgentSpec::Control(agent) => return agent.name().into(),
            AgentSpec::Named { name, .. } => return name.clone(),
            AgentSpec::Command(command) => command,
        };
        let stem = |word: &str| {
            let path = Path::new(word);
            let name = path.file_name().map_or(word.to_owned(), |f| f.to_string_lossy().into_owned());
            match path.extension() {
                Some(_) => path.file_stem().map_or(name, |f| f.to_string_lossy().into_owned()),
                None => name,
            }
        };
        let is_launcher = |word: &str| {
            let name = stem(word);
            let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
            LAUNCHERS.contains(&name.as_str()) || LAUNCHERS.contains(&base)
        };
        let mut words = command.iter().filter(|w| !w.starts_with('-') && !w.contains('='));
        let Some(first) = words.find(|w| !is_launcher(w)) else {
            return command.first().map(|w| stem(w)).unwrap_or_default();
        };
        // `faultlab agent KIND` is a control agent started by hand: named after its kind, as `--controls` does.
        if stem(first) == "faultlab"
            && let (Some(sub), Some(kind)) = (words.next(), words.next())
            && sub == "agent"
        {
            return kind.clone();
        }
        stem(first)
    }

    /// The program and arguments to start (a control agent is `faultlab agent KIND`).
    fn command_line(&self, faultlab: &Path) -> Option<(String, Vec<String>)> {
        let command = match self {
            AgentSpec::Control(agent) => return Some((text(faultlab), vec!["agent".into(), agent.name().into()])),
            AgentSpec::Named { command, .. } | AgentSpec::Command(command) => command,
        };
        command.split_first().map(|(program, args)| (program.clone(), args.to_vec()))
    }
}

/// What every run of a batch or of an exploration shares: how often, where, with which binary, what is hidden.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub repeat: u32,
    /// Overrides every task's seed; repeat r of a run uses seed + r.
    pub seed: Option<u64>,
    /// Runs at a time.
    pub jobs: usize,
    /// The report's folder, absolute: the agents run in their own scratch folders and find their files by it.
    pub out: PathBuf,
    pub keep_workspaces: bool,
    /// The `faultlab` executable (for the sandbox, the control agents, and the proxy and workspace server when they
    /// run as processes).
    pub faultlab: PathBuf,
    /// `(i, n)`, 0-based: run only the share whose number is i modulo n (a batch numbers its runs by task index +
    /// agent index + repeat, an exploration its variants).
    pub shard: Option<(u32, u32)>,
    /// Overrides every task's deadline (milliseconds).
    pub deadline_ms: Option<u64>,
    /// Files the agents must not see besides the runs folder: the task files, earlier reports in `out`.
    pub hide: Vec<PathBuf>,
    /// Variables of faultlab's environment every agent gets besides [`AGENT_ENV`] and its task's `agent_env`
    /// (`--pass-env`).
    pub pass_env: Vec<String>,
    /// The agents get the machine's network (`--network host`) rather than a namespace with only loopback.
    pub host_network: bool,
    /// The secret every nonce of the batch is derived from (random per batch unless given, so no agent can
    /// compute a nonce it was never shown; see [`nonce`]).
    pub nonce_key: String,
    /// Where each run's proxy runs (in eval's process unless `FAULTLAB_EVAL_PROXY=process`).
    pub proxy: ProxyPlace,
}

impl RunSettings {
    /// One repeat, one run at a time, the tasks' own seeds and deadlines, no shard, nothing more hidden.
    pub fn new(out: PathBuf, faultlab: PathBuf) -> Self {
        // Opened now, before any agent runs: eval starts its helpers from this descriptor.
        crate::guard::faultlab_program(&faultlab);
        Self {
            repeat: 1,
            seed: None,
            jobs: 1,
            out,
            keep_workspaces: false,
            faultlab,
            shard: None,
            deadline_ms: None,
            hide: Vec::new(),
            nonce_key: random_key(),
            pass_env: Vec::new(),
            host_network: false,
            proxy: ProxyPlace::from_env(),
        }
    }

    /// The seed of repeat 0 of `task`: the override, else the task's, else 0.
    pub fn seed_of(&self, task: &Task) -> u64 {
        self.seed.or(task.seed).unwrap_or(0)
    }

    /// Whether the share numbered `number` is this shard's (every share is when there is no shard).
    pub fn in_shard(&self, number: u64) -> bool {
        self.shard.is_none_or(|(i, n)| number % u64::from(n) == u64::from(i))
    }

    /// Repeat `repeat` of `task` by `agent`, in `report_dir` (relative to the report's folder).
    pub fn spec(&self, task: &Arc<Task>, agent: &AgentSpec, repeat: u32, report_dir: String) -> RunSpec {
        RunSpec {
            task: task.clone(),
            agent: agent.clone(),
            repeat,
            seed: self.seed_of(task).wrapping_add(u64::from(repeat)),
            dir: self.out.join(&report_dir),
            report_dir,
            keep_workspace: self.keep_workspaces,
            faultlab: self.faultlab.clone(),
            deadline_ms: self.deadline_ms,
            cassette: None,
            nonce: None,
            nonce_key: self.nonce_key.clone(),
            pass_env: self.pass_env.clone(),
            host_network: self.host_network,
            hide: self.hide.clone(),
            proxy: self.proxy,
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
    /// Replay: the recorded run's nonce, so the workspace is the one the recorded replies speak of.
    pub nonce: Option<String>,
    /// The batch's secret the nonce is derived from ([`RunSettings::nonce_key`]).
    pub nonce_key: String,
    /// Variables of faultlab's environment the agent gets besides [`AGENT_ENV`] ([`RunSettings::pass_env`]).
    pub pass_env: Vec<String>,
    /// The machine's network for the agent ([`RunSettings::host_network`]).
    pub host_network: bool,
    /// Folders and files the agent must not see besides the run's own evidence: the batch's runs folder and
    /// reports, the task files, the recording being replayed.
    pub hide: Vec<PathBuf>,
    /// Where the run's proxy runs ([`RunSettings::proxy`]).
    pub proxy: ProxyPlace,
}

/// A graded run, as reports show it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub task: String,
    pub agent: String,
    /// The agent as started: a control agent's name, or the command line (what `faultlab replay` starts again).
    pub agent_spec: AgentSpec,
    /// 0-based here; counted from 1 in `report.json`, as every report, run folder and `replay --run` counts it.
    #[serde(with = "crate::one_based")]
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
    /// How the agent was sealed (see `docs/eval.md`, threat model).
    #[serde(default = "unknown_isolation")]
    pub isolation: Isolation,
    /// The network the agent had (absent when the sandbox did not report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::sandbox::Network>,
    /// SHA-256 of each evidence file in `dir`, taken after every process of the run had ended and before
    /// grading: the files the verdict was read from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<String, String>,
    /// Evidence files whose digest could not be taken, and why (not a regular file, unreadable).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence_undigested: BTreeMap<String, String>,
    /// For a task whose server requires authorization: how many of each auth event the proxy wrote
    /// (`token_refused`, `refresh_refused`, `authorization_started`, …; `proxy.log` has them in order, none holds a
    /// secret). They say what the trajectory cannot: the refreshes and new authorizations between a refused call
    /// (recorded there as `refused`) and its retry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub auth_events: BTreeMap<String, u32>,
    /// For a task with a `model`: how many requests the model endpoint got and which of its faults fired at which
    /// (`model.jsonl` in `dir` holds every request and answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::model_hop::ModelHop>,
    /// The run's environment failed (the agent program is missing, the server or proxy never started): not a
    /// verdict on the agent. Counted apart; `faultlab eval` exits 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunRecord {
    /// A graded run of `task` by `agent` (`repeat` counted from 0) whose every layer passed or failed, with no
    /// calls, claim or fault: what the tests of eval and explore build their runs from (kept in the library, as
    /// explore's tests are in another crate).
    #[doc(hidden)]
    pub fn sample(task: &str, agent: &str, repeat: u32, category: crate::task::Category, passed: bool) -> Self {
        let layer = serde_json::json!({"passed": passed, "checks": []});
        serde_json::from_value(serde_json::json!({
            "task": task, "agent": agent, "agent_spec": [agent], "repeat": repeat + 1, "seed": 0, "categories": [category],
            "faults_fired": [], "nonce": "0", "end": {"end": "exited", "code": 0}, "claim": null,
            "duration_ms": 1, "dir": format!("runs/{task}/{agent}/{}", repeat + 1), "calls": [],
            "verdict": {
                "passed": passed, "outcome": layer, "safety": layer, "side_effects": layer,
                "recovery": {
                    "strategy": if passed { "retry" } else { "abort" },
                    "outcome": if passed { "recovered" } else { "aborted-safely" },
                    "expected": "recovered", "passed": passed, "detail": "", "evidence": []
                },
                "efficiency": {"tool_calls": 1, "retries": 0, "duplicates": 0, "fallback_depth": 0, "duration_ms": 1}
            }
        }))
        .expect("a valid run record")
    }
}

fn unknown_isolation() -> Isolation {
    Isolation::None
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

/// The run's nonce: from the batch's secret key, the seed and the run's coordinates, so no two runs of a batch
/// share one, and an agent, which knows the coordinates but never the key, cannot compute it (a rerun with the
/// same `--nonce-key` gets the same nonces).
pub fn nonce(key: &str, seed: u64, task: &str, agent: &str, repeat: u32) -> String {
    evidence::sha256_hex(format!("faultlab-nonce:{key}:{seed}:{task}:{agent}:{repeat}").as_bytes())[..16].to_owned()
}

/// 128 random bits from the kernel, in hex: a batch's nonce key.
pub fn random_key() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if read.is_err() {
        // No /dev/urandom (a bare chroot): the clock and pid, still unknown to an agent started later.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        bytes = (now.as_nanos() ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes this process the subreaper of its descendants, so a proxy's orphaned server can be waited for.
pub fn become_subreaper() {
    faultlab_proc::group::become_subreaper();
}

/// The folder under which every batch of this user keeps its scratch folders, `TMPDIR/faultlab-UID` (`0700`, the
/// user's own, never a link): every sandbox covers it as a whole, so no agent of one batch sees another batch's
/// runs, whatever `TMPDIR` is.
pub fn user_root() -> Result<PathBuf, RunError> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let base = std::env::temp_dir();
    let base = if base.as_os_str().len() > 40 { PathBuf::from("/tmp") } else { base };
    let uid = nix::unistd::getuid().as_raw();
    let root = base.join(format!("faultlab-{uid}"));
    match std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&root) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(&root)(e)),
        _ => {}
    }
    let meta = std::fs::symlink_metadata(&root).map_err(io(&root))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        let why = "not a folder of this user's that only this user may open (remove it)";
        return Err(io(&root)(std::io::Error::other(why)));
    }
    Ok(root)
}

/// The folder that holds every run's scratch folder in this process (created on first use, `0700`, in
/// [`user_root`]): short, since a Unix socket's path is at most 107 bytes, and hidden from every sandbox, which
/// sees its own scratch folder bound back in.
pub fn scratch_root() -> Result<&'static Path, RunError> {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(root) = ROOT.get() {
        return Ok(root);
    }
    let base = user_root()?;
    // 0700 asked for: tempfile's default is the umask's (0755 here), which lets other users list the runs.
    let private = std::os::unix::fs::PermissionsExt::from_mode(0o700);
    let dir =
        tempfile::Builder::new().prefix("eval-").permissions(private).tempdir_in(&base).map_err(io(&base))?.keep();
    Ok(ROOT.get_or_init(|| dir))
}

/// Removes the scratch root (at the end of a batch).
pub fn remove_scratch_root() {
    if let Ok(root) = scratch_root() {
        let _ = std::fs::remove_dir_all(root);
    }
}

/// A fresh scratch folder for one run: the agent's working directory, `HOME` and `TMPDIR`.
fn scratch_folder() -> Result<PathBuf, RunError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = scratch_root()?;
    // A batch that ended removed it; the next one in this process (the demo's exploration after its eval batch)
    // makes it again as private as the first time, not with the default mode `create_dir_all` would give.
    match std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(root) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(root)(e)),
        _ => {}
    }
    let dir = root.join(n.to_string());
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    Ok(dir)
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
    let nonce =
        spec.nonce.clone().unwrap_or_else(|| nonce(&spec.nonce_key, spec.seed, &spec.task.id, &label, spec.repeat));
    for (path, contents) in &spec.task.workspace {
        let file = workspace.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&file, contents.replace(NONCE, &nonce)).map_err(io(&file))?;
    }
    let before = Snapshot::take(&workspace).map_err(io(&workspace))?;

    let scratch = scratch_folder()?;
    let paths = RunPaths::new(dir, &scratch);
    write_json(&paths.rules, &RulesFile { seed: Some(spec.seed), rules: spec.task.faults.clone(), auth: None })?;
    // The record keeps the whole task; the agent is told only what a user would tell it, with the deadline it
    // really has (an override included).
    let mut seen = spec.task.as_ref().clone();
    seen.deadline_ms = spec.deadline_ms.unwrap_or(seen.deadline_ms);
    write_json(&paths.task, &seen)?;
    write_json(&paths.agent_task, &contract::AgentTask::of(&seen, seen.deadline_ms))?;
    let started = Instant::now();
    let deadline = Duration::from_millis(spec.deadline_ms.unwrap_or(spec.task.deadline_ms));
    let http = spec.task.server.transport == crate::task::Transport::Http;
    let sessions = match http {
        true => Sessions::http(&spec, proxy_command(&spec, &paths, &workspace), &paths).await?,
        // A server at a URL keeps the proxy process (its remote's headers, credentials and TLS are read there).
        false if spec.proxy == ProxyPlace::InProcess && spec.task.server.url.is_none() => {
            Sessions::in_process(&spec, &paths, &workspace)?
        }
        false => Sessions::listen(
            &paths.socket,
            proxy_command(&spec, &paths, &workspace),
            &spec.task.server.env,
            &paths.proxy_log,
        )?,
    };
    let config = match &sessions.url {
        Some(url) => McpConfig::http(url.clone()),
        None => McpConfig::single(text(&spec.faultlab), vec!["connect".into(), text(&paths.socket)]),
    };
    write_json(&paths.config, &config)?;
    write_json(&paths.agent_config, &config)?;
    let missing_env = spec.task.server.env_from.iter().find(|name| std::env::var_os(name).is_none()).cloned();
    // The task's model, outside the sandbox; with the private network, reached through a relay of the sandbox's.
    let model = spec.task.model.as_ref().map(|model| {
        let socket = (!spec.host_network).then_some(paths.model_socket.as_path());
        crate::model_hop::Hosted::start(model, spec.seed, &paths.model_record, socket)
    });
    let (model, model_failed) = match model {
        Some(Ok(hosted)) => (Some(hosted), None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, None),
    };
    let (end, setup_error) = match (missing_env, &sessions.failed, model_failed) {
        (Some(name), _, _) => (
            AgentEnd::FailedToStart,
            Some(format!("the task's server.env_from names {name}, which is not set in faultlab's environment")),
        ),
        // No endpoint to give the agent.
        (None, Some(failed), _) if http => (AgentEnd::FailedToStart, Some(failed.clone())),
        (None, _, Some(failed)) => (AgentEnd::FailedToStart, Some(failed)),
        (None, _, None) => {
            let model_port = model.as_ref().map(|m| m.port);
            run_agent(&spec, &paths, deadline, &sessions.connected, sessions.port, model_port).await?
        }
    };
    let status = std::fs::read_to_string(&paths.status).unwrap_or_default();
    let duration_ms = started.elapsed().as_millis() as u64;
    let proxies = sessions.finish(&spec.dir).await;
    let model_error = match model {
        Some(model) => model.finish().await,
        None => None,
    };

    // The agent cannot reach these files (see `crate::sandbox`); they are sealed now, before anything reads them.
    // Its claim it could have made anything (a FIFO, a link, gigabytes): read as a regular file, up to a cap.
    let taken = take_claim(&paths);
    let (evidence_digests, evidence_undigested) = seal(&paths);
    let isolation = crate::sandbox::read_status(&status).0;
    let network = crate::sandbox::read_network(&status);
    if !spec.keep_workspace {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    let after = Snapshot::take(&workspace).map_err(io(&workspace))?;
    // A proxy that never started leaves no file: no calls.
    let trajectory = match std::fs::File::open(&paths.trajectory) {
        Ok(file) => evidence::read_trajectory(std::io::BufReader::new(file))
            .map_err(|source| RunError::Trajectory { path: paths.trajectory.display().to_string(), source })?,
        Err(_) => Default::default(),
    };
    let calls = evidence::tool_calls(&trajectory);
    // A fault a rule timed at a resume fired on a `GET`, not on a call's reply: its `resume_faulted` event is the
    // evidence.
    let at_resumes: Vec<String> = trajectory
        .lines
        .iter()
        .filter_map(|line| match &line.record.event {
            faultlab_engine::Event::ResumeFaulted { fault, .. } => Some(fault.clone()),
            _ => None,
        })
        .collect();
    let protocol_failures = evidence::protocol_failures(&trajectory);
    let error = setup_error.or_else(|| proxies.setup_error(&trajectory, &paths.proxy_log)).or(model_error);
    let model_hop = spec.task.model.as_ref().map(|_| crate::model_hop::summary(&paths.model_record));
    let ledger = match spec.task.server.is_builtin() {
        true => Some(
            evidence::ledger(&read_ledger(&paths.ledger))
                .map_err(|source| RunError::Trajectory { path: paths.ledger.display().to_string(), source })?,
        ),
        false => None,
    };
    let (claim, claim_error) = taken;
    let commands = run_commands(&spec, &workspace).await;
    let evidence = Evidence {
        calls,
        protocol_failures,
        ledger,
        before,
        after,
        claim,
        claim_error,
        end,
        duration_ms,
        nonce,
        commands,
        model_requests: match spec.task.model {
            Some(_) => crate::model_hop::requests(&paths.model_record),
            None => Vec::new(),
        },
    };
    let mut verdict = grade::grade(&spec.task, &evidence);
    if error.is_some() {
        verdict.passed = false;
    }
    if !spec.keep_workspace {
        let _ = std::fs::remove_dir_all(&workspace);
    }
    let mut faults_fired: Vec<String> = Vec::new();
    let model_fired = model_hop.iter().flat_map(crate::model_hop::ModelHop::fault_names);
    for fault in evidence.calls.iter().filter_map(|c| c.fault.clone()).chain(at_resumes).chain(model_fired) {
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
            let model = spec.task.model.iter().flat_map(|m| &m.faults);
            let mut names: Vec<String> =
                spec.task.faults.iter().chain(model).map(|r| r.fault.name().to_owned()).collect();
            names.dedup();
            // The authorization server's fault is the task's too, though no rule carries it.
            names.extend(spec.task.server.auth.as_ref().and_then(AuthSetting::fault_name).map(str::to_owned));
            names
        },
        faults_fired,
        nonce: evidence.nonce,
        end,
        claim: evidence.claim,
        duration_ms,
        verdict,
        dir: spec.report_dir.clone(),
        calls: for_the_report(evidence.calls),
        isolation,
        network,
        evidence: evidence_digests,
        evidence_undigested,
        auth_events: match spec.task.server.requires_auth() {
            true => crate::http_front::auth_events(&paths.proxy_log),
            false => BTreeMap::new(),
        },
        model: model_hop,
        error,
    })
}

/// The SHA-256 of every evidence file the run left (absent files are left out), each read in pieces whatever its
/// size; and the files whose digest could not be taken, with why.
fn seal(paths: &RunPaths) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let (mut digests, mut undigested) = (BTreeMap::new(), BTreeMap::new());
    let files = [&paths.trajectory, &paths.ledger, &paths.claim, &paths.log, &paths.proxy_log, &paths.replay_log];
    for path in files.into_iter().chain([&paths.model_record]) {
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        match crate::guard::sha256_file(path) {
            Ok(digest) => {
                digests.insert(name, digest);
            }
            Err(crate::guard::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                undigested.insert(name, e.to_string());
            }
        }
    }
    (digests, undigested)
}

/// The longest string of a call's arguments copied whole into `report.json` (4 KiB); `trajectory.jsonl` keeps
/// every byte.
const ARGUMENT_LIMIT: usize = 4 * 1024;

/// The calls as `report.json` shows them: every string argument longer than [`ARGUMENT_LIMIT`] cut, saying so.
fn for_the_report(mut calls: Vec<evidence::ToolCall>) -> Vec<evidence::ToolCall> {
    fn cut(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) if s.len() > ARGUMENT_LIMIT => {
                let end = (0..=ARGUMENT_LIMIT).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
                *s = format!("{}… ({} bytes; whole in trajectory.jsonl)", &s[..end], s.len());
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(cut),
            serde_json::Value::Object(map) => map.values_mut().for_each(cut),
            _ => {}
        }
    }
    calls.iter_mut().for_each(|call| cut(&mut call.arguments));
    calls
}

struct RunPaths {
    rules: PathBuf,
    task: PathBuf,
    config: PathBuf,
    trajectory: PathBuf,
    ledger: PathBuf,
    claim: PathBuf,
    log: PathBuf,
    proxy_log: PathBuf,
    replay_log: PathBuf,
    /// Every request the task's model endpoint got (`faultlab model --record`'s format).
    model_record: PathBuf,
    status: PathBuf,
    /// In the scratch folder, which the agent sees: its copies of the task and the `mcpServers` file, the socket
    /// to the proxy, and where it writes its claim.
    scratch: PathBuf,
    agent_task: PathBuf,
    agent_config: PathBuf,
    agent_claim: PathBuf,
    socket: PathBuf,
    /// The Unix socket the sandbox's relay carries the agent's model connections over.
    model_socket: PathBuf,
}

impl RunPaths {
    fn new(dir: &Path, scratch: &Path) -> Self {
        Self {
            rules: dir.join("rules.json"),
            task: dir.join("task.json"),
            config: dir.join("mcp.json"),
            trajectory: dir.join("trajectory.jsonl"),
            ledger: dir.join("ledger.jsonl"),
            claim: dir.join("claim.json"),
            log: dir.join("agent.log"),
            proxy_log: dir.join("proxy.log"),
            replay_log: dir.join("replay.jsonl"),
            model_record: dir.join("model.jsonl"),
            status: dir.join("sandbox.jsonl"),
            scratch: scratch.to_owned(),
            agent_task: scratch.join("task.json"),
            agent_config: scratch.join("mcp.json"),
            agent_claim: scratch.join("claim.json"),
            socket: scratch.join("mcp.sock"),
            model_socket: scratch.join("model.sock"),
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

/// The proxy faultlab starts, outside the sandbox, for the run: the task's faults, every connection the agent makes
/// served in front of a fresh task's server (with the recording laid over it when replaying).
fn proxy_command(spec: &RunSpec, paths: &RunPaths, workspace: &Path) -> (String, Vec<String>) {
    let exe = text(&crate::guard::faultlab_program(&spec.faultlab));
    let http = spec.task.server.transport == crate::task::Transport::Http;
    let mut args: Vec<String> = match http {
        true => crate::http_front::proxy_front(&spec.task),
        false => vec!["proxy".into(), "--listen-fd".into(), PROXY_FD.to_string()],
    };
    // Bodies are recorded so that any run can be replayed later.
    args.extend(["--record-bodies", "--rules"].map(String::from));
    args.extend([text(&paths.rules), "--record".into(), text(&paths.trajectory)]);
    let server: Vec<String> = match (&spec.task.server.command, &spec.task.server.url) {
        (_, Some(url)) => {
            args.extend(["--upstream".into(), url.clone()]);
            return (exe, args);
        }
        (Some(command), None) => command.iter().map(|a| a.replace("{workspace}", &text(workspace))).collect(),
        (None, None) => workspace_server(spec, paths, workspace),
    };
    if let Some(cassette) = spec.cassette.as_ref().filter(|_| !http) {
        // The recording laid over the fresh server: its writes really happen, its replies come from the recording.
        args.extend(["--replay".into(), text(cassette), "--replay-log".into(), text(&paths.replay_log)]);
    }
    args.push("--".into());
    args.extend(server);
    (exe, args)
}

/// `faultlab workspace-server` on the run's workspace and ledger, as a command line.
fn workspace_server(spec: &RunSpec, paths: &RunPaths, workspace: &Path) -> Vec<String> {
    let exe = text(&crate::guard::faultlab_program(&spec.faultlab));
    let mut server = vec![exe, "workspace-server".into(), "--root".into(), text(workspace), "--ledger".into()];
    server.push(text(&paths.ledger));
    if spec.task.server.confirm_destructive {
        server.push("--confirm-destructive".into());
    }
    server
}

/// The run's one proxy (`faultlab proxy --listen-fd`): it accepts every connection the agent makes to the run's
/// socket (an agent that restarts its server after a `disconnect` connects again), starts the server for each, and
/// holds the run's one rule state, so counts, windows and schedules go on across the agent's reconnections.
struct Sessions {
    proxy: Option<tokio::process::Child>,
    /// Reads the proxy's stdout, a JSON line per connection it accepts, into `connected`.
    reader: Option<tokio::task::JoinHandle<()>>,
    /// The proxy could not be started.
    failed: Option<String>,
    /// Notified at each connection of the agent (a permit is kept until the run waits for it).
    connected: Arc<tokio::sync::Notify>,
    /// Over HTTP: the proxy's endpoint and port, the relay from the run's socket to it, and the task copying the
    /// proxy's stderr into its log.
    url: Option<String>,
    port: Option<u16>,
    relay: Option<tokio::task::JoinHandle<()>>,
    log: Option<tokio::task::JoinHandle<()>>,
    /// The proxy in eval's process (see [`crate::in_process`]), instead of `proxy`.
    in_process: Option<crate::in_process::Proxy>,
}

/// How the proxy sessions ended.
struct Proxies {
    codes: Vec<Option<i32>>,
    failed: Option<String>,
}

impl Proxies {
    /// The environment failed, rather than the agent: a proxy could not start, or one exited with an error while
    /// the server never answered anything.
    fn setup_error(&self, trajectory: &Trajectory, log: &Path) -> Option<String> {
        if let Some(failed) = &self.failed {
            return Some(failed.clone());
        }
        if trajectory.upstream_answered() {
            return None;
        }
        // A proxy over an HTTP server it cannot reach keeps running (each request gets an error), so its exit code
        // does not tell; the lost connection in the trajectory does.
        if let Some(detail) = trajectory.upstream_lost() {
            return Some(format!("the server never answered: {detail}"));
        }
        let failed = self.codes.iter().any(|code| matches!(code, Some(c) if *c != 0));
        if !failed {
            return None;
        }
        let log = std::fs::read_to_string(log).unwrap_or_default();
        let last = log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim();
        Some(format!("the server never answered and the proxy failed: {last}"))
    }
}

impl Sessions {
    /// Binds the run's socket here, so it is listening before the agent starts (a connection waits in the
    /// kernel's queue until the proxy accepts it), and starts the proxy on it, handed over as descriptor 3.
    fn listen(
        socket: &Path,
        (program, args): (String, Vec<String>),
        env: &BTreeMap<String, String>,
        log: &Path,
    ) -> Result<Self, RunError> {
        use std::os::fd::AsRawFd as _;
        let listener = std::os::unix::net::UnixListener::bind(socket).map_err(io(socket))?;
        let log = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(io(log))?;
        let connected = Arc::new(tokio::sync::Notify::new());
        let mut command = tokio::process::Command::new(&program);
        command.args(&args).envs(env).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
        command.process_group(0).kill_on_drop(true);
        // The proxy inherits the socket as PROXY_FD.
        faultlab_proc::hooks::pass_fd(command.as_std_mut(), listener.as_raw_fd(), PROXY_FD);
        let (proxy, reader, failed) = match command.spawn() {
            Ok(mut proxy) => {
                let reader = proxy.stdout.take().map(|stdout| {
                    let notify = connected.clone();
                    tokio::spawn(async move {
                        use tokio::io::AsyncBufReadExt as _;
                        let mut lines = tokio::io::BufReader::new(stdout).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            if line.contains("\"connection\"") {
                                notify.notify_one();
                            }
                        }
                    })
                });
                (Some(proxy), reader, None)
            }
            Err(e) => (None, None, Some(format!("cannot start the proxy {program}: {e}"))),
        };
        // The proxy holds its own copy; this one would keep the socket open after the proxy ended.
        drop(listener);
        Ok(Self { proxy, reader, failed, connected, url: None, port: None, relay: None, log: None, in_process: None })
    }

    /// The run's proxy in eval's process on the run's socket, bound here before the agent starts (see
    /// [`crate::in_process`]): the task's rules and recording as [`proxy_command`] passes them, in front of the
    /// workspace server in process, or of the task's server (or a restarting workspace server) as a child.
    fn in_process(spec: &RunSpec, paths: &RunPaths, workspace: &Path) -> Result<Self, RunError> {
        use crate::in_process::{Plan, Proxy, Server};
        let listener = std::os::unix::net::UnixListener::bind(&paths.socket).map_err(io(&paths.socket))?;
        let rules = RulesFile { seed: Some(spec.seed), rules: spec.task.faults.clone(), auth: None };
        let env = spec.task.server.env.clone();
        let server = match &spec.task.server.command {
            Some(command) => {
                let command = command.iter().map(|a| a.replace("{workspace}", &text(workspace))).collect();
                Server::Command { command, env }
            }
            // Only a process can be crashed and started again.
            None if crate::in_process::restarts(&rules) => {
                Server::Command { command: workspace_server(spec, paths, workspace), env }
            }
            None => Server::Workspace {
                root: workspace.to_owned(),
                ledger: paths.ledger.clone(),
                confirm_destructive: spec.task.server.confirm_destructive,
            },
        };
        let replay = spec.cassette.as_ref().map(|cassette| (cassette.clone(), paths.replay_log.clone()));
        let plan = Plan { rules, server, trajectory: paths.trajectory.clone(), log: paths.proxy_log.clone(), replay };
        let connected = Arc::new(tokio::sync::Notify::new());
        let (in_process, failed) = match Proxy::start(listener, plan, connected.clone()) {
            Ok(proxy) => (Some(proxy), None),
            Err(e) => {
                let _ = std::fs::write(&paths.proxy_log, format!("faultlab: error: {e}\n"));
                (None, Some(format!("cannot start the proxy: {e}")))
            }
        };
        Ok(Self {
            proxy: None,
            reader: None,
            failed,
            connected,
            url: None,
            port: None,
            relay: None,
            log: None,
            in_process,
        })
    }

    /// The run's proxy as an HTTP endpoint on loopback (see [`crate::http_front`]): started, its endpoint read from
    /// its log, and the run's socket relayed to it.
    async fn http(spec: &RunSpec, (program, args): (String, Vec<String>), paths: &RunPaths) -> Result<Self, RunError> {
        let connected = Arc::new(tokio::sync::Notify::new());
        let mut sessions = Self {
            proxy: None,
            reader: None,
            failed: None,
            connected: connected.clone(),
            url: None,
            port: None,
            relay: None,
            log: None,
            in_process: None,
        };
        if spec.cassette.is_some() {
            sessions.failed = Some("replay does not serve a task over HTTP (server.transport: http) yet".into());
            return Ok(sessions);
        }
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&paths.proxy_log);
        let log = log.map_err(io(&paths.proxy_log))?;
        let mut command = tokio::process::Command::new(&program);
        command.args(&args).envs(&spec.task.server.env).stdin(Stdio::null()).stdout(Stdio::null());
        command.stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
        let mut proxy = match command.spawn() {
            Ok(proxy) => proxy,
            Err(e) => {
                sessions.failed = Some(format!("cannot start the proxy {program}: {e}"));
                return Ok(sessions);
            }
        };
        let stderr = proxy.stderr.take();
        sessions.proxy = Some(proxy);
        let Some(stderr) = stderr else { return Ok(sessions) };
        let (endpoint, follower) = crate::http_front::follow_log(stderr, log, connected.clone()).await;
        sessions.log = Some(follower);
        let Some((url, addr)) = endpoint else {
            sessions.failed = Some("the HTTP proxy did not start listening (see proxy.log)".into());
            return Ok(sessions);
        };
        let listener = crate::http_front::bind(&paths.socket).map_err(io(&paths.socket))?;
        sessions.relay = Some(crate::http_front::relay(listener, addr, connected));
        sessions.url = Some(url);
        sessions.port = Some(addr.port());
        Ok(sessions)
    }

    /// After the agent's end: the proxy is asked to stop (SIGTERM: no new connection, every open one ended in
    /// order, the trajectory written out), and every process of the run is waited for (killed after
    /// [`DRAIN_GRACE`]).
    async fn finish(mut self, dir: &Path) -> Proxies {
        let mut codes = Vec::new();
        // In process: ended first, so that its servers are stopped in order before the sweep below.
        if let Some(proxy) = self.in_process.take() {
            let (code, failed) = proxy.finish().await;
            codes.push(code);
            self.failed = self.failed.take().or(failed);
        }
        let mut groups = Vec::new();
        if let Some(pid) = self.proxy.as_ref().and_then(tokio::process::Child::id) {
            let pid = pid as i32;
            faultlab_proc::group::signal_process(pid, Signal::SIGTERM);
            groups.push(pid);
        }
        drain(Members { groups, marker: dir.display().to_string() }, DRAIN_GRACE).await;
        if let Some(proxy) = self.proxy.as_mut() {
            codes.push(proxy.wait().await.ok().and_then(|s| s.code()));
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.await;
        }
        if let Some(relay) = self.relay.take() {
            relay.abort();
        }
        // Every writer of the proxy's stderr has ended: the log is read to its end at once (bounded all the same).
        if let Some(log) = self.log.take() {
            let _ = tokio::time::timeout(DRAIN_GRACE, log).await;
        }
        Proxies { codes, failed: self.failed.take() }
    }
}

/// Starts the agent sealed (`faultlab sandbox`, see [`crate::sandbox`]) in its own process group, waits for it up
/// to the deadline (counted from its first connection to its server, after at most the task's `start_ms`), and makes sure every process of its tree has ended before returning. Returns how the agent
/// ended, and why the run could not happen when the agent program could not be started.
async fn run_agent(
    spec: &RunSpec,
    paths: &RunPaths,
    deadline: Duration,
    connected: &tokio::sync::Notify,
    http_port: Option<u16>,
    model_port: Option<u16>,
) -> Result<(AgentEnd, Option<String>), RunError> {
    let Some((program, args)) = spec.agent.command_line(&spec.faultlab) else {
        return Ok((AgentEnd::FailedToStart, Some("the agent command is empty".into())));
    };
    if let Err(why) = resolve(&program) {
        return Ok((AgentEnd::FailedToStart, Some(why)));
    }
    let log = std::fs::File::create(&paths.log).map_err(io(&paths.log))?;
    let log_err = log.try_clone().map_err(io(&paths.log))?;
    // The sandbox reports its isolation on a pipe, as descriptor 3: no file an agent could rewrite.
    let (status_read, status_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| io(&paths.status)(e.into()))?;
    let mut command = sandbox_command(spec, &paths.scratch, &status_write)?;
    // The proxy's port on the sandbox's own loopback, relayed to the run's socket (see `crate::http_front`).
    if let Some(port) = http_port.filter(|_| !spec.host_network) {
        command.arg("--relay-port").arg(port.to_string()).arg("--relay-socket").arg(&paths.socket);
    }
    // The model endpoint's port likewise, over a socket of its own (see `crate::model_hop`).
    if let Some(port) = model_port {
        if !spec.host_network {
            command.arg("--relay-port").arg(port.to_string()).arg("--relay-socket").arg(&paths.model_socket);
        }
        command.env(contract::ENV_MODEL_URL, format!("http://127.0.0.1:{port}/v1"));
    }
    command
        .arg("--")
        .arg(&program)
        .args(&args)
        .env(contract::ENV_MCP_CONFIG, &paths.agent_config)
        .env(contract::ENV_GOAL, &spec.task.goal)
        .env(contract::ENV_TASK, &paths.agent_task)
        .env(contract::ENV_RESULT, &paths.agent_claim)
        .env("HOME", &paths.scratch)
        .env("TMPDIR", &paths.scratch)
        .current_dir(&paths.scratch)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| RunError::Agent { command: program.clone(), source })?;
    drop(status_write);
    let group = child.id().map(|pid| pid as i32).unwrap_or(0);
    // The deadline counts from the agent's first connection to its server: starting (an interpreter loading an
    // SDK) has the task's `start_ms` of its own.
    let start = Duration::from_millis(spec.task.start_ms);
    let limit = async {
        let _ = tokio::time::timeout(start, connected.notified()).await;
        tokio::time::sleep(deadline).await;
    };
    let ended = tokio::select! {
        status = child.wait() => Ok(status),
        () = limit => Err(()),
    };
    let end = match ended {
        Ok(Ok(status)) => AgentEnd::Exited { code: status.code() },
        Ok(Err(_)) => AgentEnd::Exited { code: None },
        Err(_) => {
            // The sandbox ends the whole tree on SIGTERM; SIGKILL to its group if it has not within the grace.
            faultlab_proc::group::signal_process(group, Signal::SIGTERM);
            if tokio::time::timeout(DRAIN_GRACE, child.wait()).await.is_err() {
                faultlab_proc::group::signal_group(group, Signal::SIGKILL);
                let _ = child.wait().await;
            }
            AgentEnd::KilledAtDeadline
        }
    };
    // A sandbox without namespaces leaves its group's stragglers to this last sweep.
    drain(Members { groups: vec![group], marker: String::new() }, DRAIN_GRACE).await;
    // Every writer has ended: the read ends at once. Kept beside the evidence for the record.
    let mut status = String::new();
    let _ = std::io::Read::read_to_string(&mut std::fs::File::from(status_read), &mut status);
    let _ = std::fs::write(&paths.status, &status);
    match crate::sandbox::read_status(&status).1 {
        Some(why) => Ok((AgentEnd::FailedToStart, Some(why))),
        None => Ok((end, None)),
    }
}

/// `faultlab sandbox` (from the executable opened at start) with `scratch` as the only writable folder, reporting
/// on `status` (as descriptor 3), hiding the runs folder, every scratch folder and what the run names, in its own
/// process group, with only the variables an agent may see ([`AGENT_ENV`], the task's `agent_env`, `--pass-env`).
/// The caller adds `--`, the program and its arguments.
fn sandbox_command(spec: &RunSpec, scratch: &Path, status: &OwnedFd) -> Result<tokio::process::Command, RunError> {
    let mut command = tokio::process::Command::new(crate::guard::faultlab_program(&spec.faultlab));
    command.arg0("faultlab").arg("sandbox");
    if spec.host_network {
        command.arg("--host-network");
    }
    command.arg("--scratch").arg(scratch).arg("--status-fd").arg(STATUS_FD.to_string());
    // The sandbox inherits the status pipe as STATUS_FD.
    faultlab_proc::hooks::pass_fd(command.as_std_mut(), std::os::fd::AsRawFd::as_raw_fd(status), STATUS_FD);
    let root = spec.dir.parent().and_then(Path::parent).and_then(Path::parent);
    // The runs folder (every run's evidence and workspace), every batch's scratch folders, and what the caller names.
    scratch_root()?;
    for hide in root.into_iter().map(Path::to_path_buf).chain([user_root()?]).chain(spec.hide.clone()) {
        command.arg("--hide").arg(hide);
    }
    // Never the whole environment: the defaults, what the task and the caller name, and the sandbox's own switch.
    command.env_clear();
    let names = AGENT_ENV.iter().copied().chain(spec.task.agent_env.iter().map(String::as_str));
    for name in names.chain(spec.pass_env.iter().map(String::as_str)).chain([crate::sandbox::WEAKEN]) {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.env("PATH", agent_path(&spec.faultlab, std::env::var_os("PATH")));
    command.current_dir(scratch).process_group(0).kill_on_drop(true);
    Ok(command)
}

/// The agent's `PATH`: faultlab's own, with the folder of the `faultlab` the `mcpServers` file names first when it
/// is not on it already. A framework that looks the MCP command up on `PATH` by its name (agno refuses a command it
/// cannot find there) then finds the very program the file names.
fn agent_path(faultlab: &Path, path: Option<std::ffi::OsString>) -> std::ffi::OsString {
    let path = path.unwrap_or_default();
    // A bare name is found on PATH already.
    if faultlab.components().count() < 2 {
        return path;
    }
    let dir = std::path::absolute(faultlab).ok().and_then(|p| p.parent().map(Path::to_path_buf));
    let Some(dir) = dir.filter(|d| !d.as_os_str().is_empty()) else { return path };
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()).collect();
    if dirs.contains(&dir) {
        return path;
    }
    std::env::join_paths(std::iter::once(dir).chain(dirs)).unwrap_or(path)
}

/// Finds the agent's program as `exec` would (a path, or a name on `PATH`), so a missing one is an error of the
/// set-up, named, rather than an agent that ended at once.
fn resolve(program: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &Path| path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let path = std::path::absolute(program).unwrap_or_else(|_| PathBuf::from(program));
        return match executable(&path) {
            true => Ok(()),
            false => Err(format!("the agent program {program} does not exist or is not executable")),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    match std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
        true => Ok(()),
        false => Err(format!("the agent program {program} is not on PATH")),
    }
}

/// The ledger's text; past [`LEDGER_LIMIT`] its first [`LEDGER_LIMIT`] bytes to the last whole line (the writes
/// counted are then at least those).
fn read_ledger(path: &Path) -> String {
    let Ok(file) = crate::guard::open_regular(path) else { return String::new() };
    let mut bytes = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, LEDGER_LIMIT), &mut bytes);
    if bytes.len() as u64 == LEDGER_LIMIT
        && let Some(end) = bytes.iter().rposition(|b| *b == b'\n')
    {
        bytes.truncate(end + 1);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The agent's claim, read from its scratch folder ([`crate::guard::read_capped`]) and kept beside the evidence.
fn take_claim(paths: &RunPaths) -> (Option<Claim>, Option<String>) {
    let path = &paths.agent_claim;
    let bytes = match crate::guard::read_capped(path, CLAIM_LIMIT) {
        Err(crate::guard::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return (None, None),
        Err(e) => return (None, Some(format!("{}: {e}", path.display()))),
        Ok(bytes) => bytes,
    };
    let _ = std::fs::write(&paths.claim, &bytes);
    let text = String::from_utf8_lossy(&bytes);
    match faultlab_wire::nesting::check(&text, faultlab_wire::nesting::Syntax::Json)
        .map_err(|e| e.to_string())
        .and_then(|()| serde_json::from_str::<Claim>(&text).map_err(|e| e.to_string()))
    {
        Ok(claim) => (Some(claim), None),
        Err(e) => (None, Some(format!("{}: {e}", paths.claim.display()))),
    }
}

/// The task's `command_succeeded` checks, each run sealed as the agent is (`faultlab sandbox`: namespaces,
/// read-only root, only the variables an agent gets) in a fresh copy of the workspace as its only writable folder:
/// the workspace holds what the agent wrote, and a command that imports or runs it runs the agent's code. Nothing a
/// command starts outlives it; each is killed after [`COMMAND_LIMIT`].
async fn run_commands(spec: &RunSpec, workspace: &Path) -> Vec<bool> {
    let mut results = Vec::new();
    for assertion in &spec.task.grader.state_assertions {
        if let crate::task::StateAssertion::CommandSucceeded { command } = assertion {
            results.push(run_command(spec, workspace, command).await.unwrap_or(false));
        }
    }
    results
}

async fn run_command(spec: &RunSpec, workspace: &Path, command: &[String]) -> Option<bool> {
    let (program, args) = command.split_first()?;
    let copy = scratch_folder().ok()?;
    copy_tree(workspace, &copy).ok()?;
    let (status_read, status_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
    let mut sealed = sandbox_command(spec, &copy, &status_write).ok()?;
    sealed
        .arg("--")
        .arg(program)
        .args(args)
        .env("HOME", &copy)
        .env("TMPDIR", &copy)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let spawned = sealed.spawn();
    drop(status_write);
    let mut child = spawned.ok()?;
    let group = child.id().map(|pid| pid as i32).unwrap_or(0);
    let ok = match tokio::time::timeout(COMMAND_LIMIT, child.wait()).await {
        Ok(Ok(status)) => status.success(),
        _ => {
            faultlab_proc::group::signal_group(group, Signal::SIGKILL);
            let _ = child.wait().await;
            false
        }
    };
    // Whatever it left running (its own group; the sandbox's namespace or subreaper ended the rest).
    drain(Members { groups: vec![group], marker: text(&copy) }, DRAIN_GRACE).await;
    drop(status_read);
    let _ = std::fs::remove_dir_all(&copy);
    Some(ok)
}

/// Copies the folders and regular files of `from` into `to` (links and anything else are left out: a command
/// sees the workspace as the grader did).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_agents_path_has_the_faultlab_its_mcp_file_names_first_once() {
        let given = Some(std::ffi::OsString::from("/usr/bin:/bin"));
        let path = agent_path(Path::new("/opt/lab/bin/faultlab"), given.clone());
        assert_eq!(path, "/opt/lab/bin:/usr/bin:/bin");
        assert_eq!(agent_path(Path::new("/usr/bin/faultlab"), given.clone()), "/usr/bin:/bin", "already on it");
        assert_eq!(agent_path(Path::new("faultlab"), given), "/usr/bin:/bin", "a bare name is PATH's already");
        assert_eq!(agent_path(Path::new("/opt/lab/bin/faultlab"), None), "/opt/lab/bin");
    }

    /// A call's 12 MiB argument was copied whole into `report.json` (96 MiB after eight): the report keeps 4 KiB of
    /// it and says how long it was.
    #[test]
    fn long_call_arguments_are_cut_in_the_report() {
        let call: evidence::ToolCall = serde_json::from_value(serde_json::json!({
            "index": 1, "id": 1, "tool": "write_file", "at_ms": 0.0, "reply_index": null, "executed": true,
            "rule": null, "fault": null, "error": false,
            "arguments": {"path": "a.txt", "content": "é".repeat(6 * 1024 * 1024)}
        }))
        .unwrap();
        let shown = for_the_report(vec![call]);
        let content = shown[0].arguments["content"].as_str().unwrap();
        assert!(content.len() < ARGUMENT_LIMIT + 100, "{}", content.len());
        assert!(
            content.ends_with("… (12582912 bytes; whole in trajectory.jsonl)"),
            "{}",
            &content[content.len() - 60..]
        );
        assert_eq!(shown[0].arguments["path"], "a.txt");
    }

    /// One process may run batch after batch (the demo: an eval batch, then an exploration): the scratch root a
    /// batch removed at its end comes back private to the user, as it was made.
    /// `--agent 'faultlab agent good'` is the control agent `good` in reports, not `faultlab`.
    #[test]
    fn a_control_agent_started_by_command_is_named_after_its_kind() {
        let words = |line: &str| AgentSpec::Command(line.split(' ').map(str::to_owned).collect());
        assert_eq!(words("faultlab agent good").label(), "good");
        assert_eq!(words("/opt/bin/faultlab agent ignores-timeout").label(), "ignores-timeout");
        assert_eq!(words("python3 agents/my_agent.py").label(), "my_agent");
        assert_eq!(words("faultlab").label(), "faultlab");
    }

    #[test]
    fn the_scratch_root_comes_back_private_after_a_batch_removed_it() {
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let first = scratch_folder().unwrap();
        let root = first.parent().unwrap().to_path_buf();
        assert_eq!(mode(&root), 0o700);
        remove_scratch_root();
        let again = scratch_folder().unwrap();
        assert_eq!(again.parent().unwrap(), root);
        assert_eq!(mode(&root), 0o700, "{} after a batch removed it", root.display());
        remove_scratch_root();
    }
}
