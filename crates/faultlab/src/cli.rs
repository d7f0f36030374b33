//! Command-line definitions.

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "faultlab", version, about = "MCP Failure Lab: prove whether an MCP client or agent survives failure")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands; `IntoStaticStr` gives each one's name as typed (the exit-code table is chosen by it).
#[derive(Debug, Subcommand, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum Command {
    /// Run the deliberately faulty MCP server (stdio by default, or Streamable HTTP).
    Serve(ServeArgs),
    /// Stand between an MCP client and a real MCP server and inject faults by rules.
    Proxy(Box<ProxyArgs>),
    /// A scripted model endpoint (OpenAI and Anthropic APIs) to run agent frameworks offline, with faults on it.
    Model(ModelArgs),
    /// Run scenario files with the reference client against the built-in server or an external target.
    Run(RunArgs),
    /// The whole lab on built-in parts: reference-client runs against the faulty server, with reports.
    Demo(DemoArgs),
    /// Read agent traces and name what went wrong (loops, retry storms, false success, …), with evidence.
    Diagnose(DiagnoseArgs),
    /// Run agents on sandboxed tasks through the fault proxy and grade them on five layers.
    Eval(EvalArgs),
    /// Find the faults that break an agent: a healthy run, then fault variants synthesised from its tool calls.
    Explore(ExploreArgs),
    /// Work with eval reports: merge the reports of a sharded batch.
    Report(ReportArgs),
    /// Two eval reports side by side: pass rates per category, task and agent, and which differences are
    /// significant.
    Compare(CompareArgs),
    /// List the fault catalogue, or explain one fault: what it does on the wire, what a robust client does, an
    /// example rule, where it exists.
    Faults(crate::faults::FaultsArgs),
    /// Write a starter folder for testing your own client, agent or server: a target file, the fault proxy's
    /// rules and scenarios that expect what they do; prints the command to run next.
    Init(crate::init::InitArgs),
    /// Print the server entry for an MCP host's configuration (Claude Desktop, Claude Code, Cursor, VS Code,
    /// Windsurf, the Inspector): faultlab serve, or the fault proxy in front of your server.
    Config(crate::config::ConfigArgs),
    /// A built-in control agent (started by `faultlab eval`; reads the FAULTLAB_* environment).
    #[command(hide = true)]
    Agent(AgentArgs),
    /// The built-in workspace MCP server over stdio, confined to --root, logging every side effect.
    #[command(hide = true)]
    WorkspaceServer(WorkspaceServerArgs),
    /// Run recorded eval runs again, the server's replies served from the recording, to the same or another agent.
    Replay(ReplayArgs),
    /// Runs an agent sealed: its own PID and mount namespaces, evidence hidden (started by `faultlab eval`).
    #[command(hide = true)]
    Sandbox(SandboxArgs),
    /// Relays stdio to an eval run's proxy socket (the server command an agent under `faultlab eval` is given).
    #[command(hide = true)]
    Connect(ConnectArgs),
    /// Print a shell completion script, e.g. `faultlab completions bash > ~/.local/share/bash-completion/completions/faultlab`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per subcommand into a folder with --out.
    Man(ManArgs),
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write faultlab.1 and faultlab-SUBCOMMAND.1 here (created if missing) instead of printing faultlab.1.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

/// The agent under test, as `eval` and `explore` take it (the other choice, `--controls`, is each command's own).
#[derive(Debug, clap::Args)]
pub struct AgentChoice {
    /// The agent under test: a command line (split like a shell would, without expansion), started once per run.
    #[arg(long, value_name = "'CMD ARGS'", conflicts_with = "controls")]
    pub agent: Option<String>,
    /// The agent's name in reports (default: derived from the whole command line).
    #[arg(long, value_name = "NAME", requires = "agent")]
    pub agent_name: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// The agent's working directory (bound back in when it lies beneath a hidden folder).
    #[arg(long)]
    pub scratch: std::path::PathBuf,
    /// A folder or file the agent must not see (repeatable).
    #[arg(long)]
    pub hide: Vec<std::path::PathBuf>,
    /// The descriptor (a pipe) where the isolation that applied is written.
    #[arg(long)]
    pub status_fd: i32,
    /// The machine's network instead of a network namespace with only loopback.
    #[arg(long)]
    pub host_network: bool,
    /// With the private network: listen on this port of the sandbox's loopback and relay each connection to
    /// the --relay-socket given in the same place (how a sealed agent reaches an HTTP server at the same URL as
    /// outside). Repeatable, in pairs with --relay-socket, at most 4.
    #[arg(long, requires = "relay_socket", value_parser = clap::value_parser!(u16).range(1..))]
    pub relay_port: Vec<u16>,
    /// The Unix socket the --relay-port in the same place relays to.
    #[arg(long, requires = "relay_port")]
    pub relay_socket: Vec<std::path::PathBuf>,
    /// The agent's program and arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, clap::Args)]
pub struct ConnectArgs {
    /// The run's Unix socket.
    pub socket: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Here 2 is a run that failed its grade (with --controls: a verdict that disagrees with the \
oracle), and an agent that started and then died, even at once (an import error): eval grades agents, and \
dying is that agent's failure. 1 includes a run whose set-up failed (the agent program is missing or cannot be \
executed, the proxy or server never started): an ERROR in every report, never a verdict.")]
pub struct EvalArgs {
    /// Task files (YAML, or JSON by the .json extension), or folders of them. Without any, the built-in tasks.
    #[arg(value_name = "TASK")]
    pub tasks: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub who: AgentChoice,
    /// Run every built-in control agent on every task and check each verdict against the oracle.
    #[arg(long)]
    pub controls: bool,
    /// The oracle file for --controls (default: the built-in oracle of the built-in tasks).
    #[arg(long, requires = "controls")]
    pub oracle: Option<std::path::PathBuf>,
    /// Folder for report.json, report.md, report.html and each run's files.
    #[arg(long, default_value = "faultlab-eval")]
    pub out: std::path::PathBuf,
    #[command(flatten)]
    pub runs: RunSettingsArgs,
    /// What stdout gets: a line per run and the pass rate, or JUnit XML (junit.xml is written to --out either way).
    // `--report`, the old name, is still accepted (a hidden alias: scripts written before `--format` keep working).
    #[arg(long, alias = "report", value_enum, default_value_t = EvalReport::Console)]
    pub format: EvalReport,
    #[command(flatten)]
    pub baseline: BaselineArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalReport {
    Console,
    Junit,
}

/// What fails `faultlab explore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExploreFailOn {
    Break,
    Degrade,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Runs each task once without its faults (the healthy run, graded on the task's goal and \
policies; if it fails, there is nothing to explore), then one eval run per variant: each fault class at each tool \
call of the healthy run (the nth call to its tool; with --protocol-sites also at each initialize and tools/list), \
and with --max-faults 2 or 3 sets of that many faults at different calls, each a set the agent survived extended \
at a call its run depended on. Classes: error, rate-limit, timeout, timeout-after, latency, transport-loss, \
malformed, non-json-line, duplicate, wrong-data, oversized, stale, and on a task over HTTP stream and session (at \
the protocol's requests too, where the proxy's HTTP front performs them); what is not tried is listed in the \
report, with why.\n\
A variant BREAKS the agent when it causes damage (a forbidden or duplicated side effect), a false claim, a hang, a \
crash, or loses work the evidence shows was recoverable; it DEGRADES it when the agent fails honestly (says it \
could not finish, breaks nothing). Writes OUT/report.json, report.md, report.html, each run's folder, and for each \
breaking or degrading variant a task file, a rules file and the faultlab eval command that reproduces it \
(OUT/repro/).\n\
Exit codes: 0 no variant broke the agent (degrading ones are reported; with --controls: every control behaved as \
the oracle expects); 2 a variant broke it (with --fail-on degrade: or degraded it; with --controls: a disagreement \
with the oracle); 1 the exploration could not run (a bad flag, value or task file, a healthy run that fails, a run \
whose set-up failed).")]
pub struct ExploreArgs {
    /// Task files (YAML, or JSON by the .json extension) or folders of them. Without any: with --controls the
    /// built-in transport-timeout-after-write task, else every built-in task.
    #[arg(value_name = "TASK")]
    pub tasks: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub who: AgentChoice,
    /// Explore every non-adversarial built-in control agent and check the classes that break each against the
    /// oracle (examples/eval/explore-oracle.yaml).
    #[arg(long)]
    pub controls: bool,
    /// With --controls: only this control agent (repeatable), and only its oracle entries are checked (with task
    /// files, only theirs too).
    #[arg(long, value_name = "NAME", requires = "controls")]
    pub control: Vec<String>,
    /// The fault classes to try, comma-separated (default: all; `model`, the model hop's, only for a task with a
    /// model, where it is in the default too).
    #[arg(long, value_name = "CLASS,...", value_delimiter = ',')]
    pub classes: Vec<String>,
    /// Each class's representative fault only, not every catalogue fault of the class that applies at a call.
    #[arg(long)]
    pub quick: bool,
    /// Also fault the protocol's own requests, each occurrence a site: initialize and tools/list (where the tool
    /// surface faults act: list_drift, broken_pagination, page_error, output_schema_violation; over HTTP the stream
    /// and session faults too).
    #[arg(long)]
    pub protocol_sites: bool,
    /// A trajectory the proxy recorded of a failing run (`trajectory.jsonl`): instead of synthesising variants,
    /// replay the faults it shows on tool calls and shrink them to the smallest set that reproduces the failure
    /// mode they cause, with a reproducer. Takes one task and --agent.
    #[arg(long, value_name = "FILE")]
    pub from_trajectory: Option<std::path::PathBuf>,
    /// 1: single faults; 2 or 3: also sets of that many faults at different calls, each a survived smaller set
    /// extended at a call its run depended on (lineage-driven), up to every minimal failing set within --budget.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub max_faults: u8,
    /// Run every combination of faults up to --max-faults instead of the lineage-driven search (the baseline).
    #[arg(long)]
    pub exhaustive: bool,
    /// Most variant runs per exploration (repeats included); the variants left out are listed as pruned.
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    /// Folder for the reports, the run folders and the reproducers.
    #[arg(long, default_value = "faultlab-explore")]
    pub out: std::path::PathBuf,
    /// What fails the command (exit 2): `break`, a variant that breaks the agent; `degrade`, also one that only
    /// degrades it (an honest failure, nothing broken).
    #[arg(long, value_enum, default_value_t = ExploreFailOn::Break)]
    pub fail_on: ExploreFailOn,
    #[command(flatten)]
    pub runs: RunSettingsArgs,
}

/// How eval and explore run their runs: the same flags, read into one [`faultlab_eval::runner::RunSettings`].
#[derive(Debug, clap::Args)]
pub struct RunSettingsArgs {
    /// Runs of each task, agent and variant (pass^k: a variant breaks or degrades an agent when any of its repeats does).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Runs in parallel.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Seed for every random choice (fault probabilities, nonces); each repeat r uses seed + r.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep each run's workspace (otherwise removed after grading).
    #[arg(long)]
    pub keep: bool,
    /// Run only shard I of N (1-based, e.g. 2/4). eval: the runs whose task index + agent index + repeat is I-1
    /// modulo N (every shard gets a mix of agents and tasks); explore: the variants (every shard runs the healthy
    /// run; single faults only). Give every shard the same inputs, --repeat and --seed, then join the reports with
    /// `faultlab report merge`. From a 0-based index (Kubernetes JOB_COMPLETION_INDEX):
    /// --shard $((JOB_COMPLETION_INDEX+1))/N.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<faultlab_eval::merge::Shard>,
    /// Overrides every task's deadline_ms (counted from the agent's first connection).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub deadline_ms: Option<u64>,
    /// The secret the runs' nonces are derived from (default: random for each batch, so an agent cannot compute
    /// a nonce it was never shown). Give an earlier batch's key, with its --seed, to get its nonces again.
    #[arg(long, value_name = "HEX")]
    pub nonce_key: Option<String>,
    /// A variable of faultlab's environment the agent is given (repeatable; a model's key, say). Agents get only
    /// PATH, LANG, LANGUAGE, LC_ALL, LC_CTYPE, LC_MESSAGES, TZ, TERM, USER, LOGNAME, SSL_CERT_FILE, SSL_CERT_DIR,
    /// the variables their task's agent_env names, and these.
    #[arg(long, value_name = "NAME")]
    pub pass_env: Vec<String>,
    /// The agents' network: `private` (a network namespace of their own with only loopback: faultlab is reached
    /// through a Unix socket, a model an agent starts on loopback works, nothing else does) or `host` (the
    /// machine's: for an agent that needs a real model; every loopback port is reachable then). Reports say which.
    #[arg(long, value_enum, default_value = "private")]
    pub network: AgentNetwork,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentNetwork {
    Private,
    Host,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Each replayed run gets a fresh workspace and a fresh server, with the recorded run's task, \
rules and seed; every request still reaches the server (writes happen again, so the end state is graded), but the \
server's reply to a call the recording holds (same method, tool, arguments and occurrence) is the recorded one. \
Calls the recording lacks are answered live and counted.\n\
Here 2 is a replayed run that failed its grade; 1 includes a report or run folder that cannot be read, and a run \
that could not be replayed (a task over HTTP: shown as NOT REPLAYED, with why).")]
pub struct ReplayArgs {
    /// The report.json of a faultlab eval (run folders are found relative to it).
    pub report: std::path::PathBuf,
    /// Which runs: TASK, TASK/AGENT or TASK/AGENT/REPEAT (1-based); repeatable; default every run.
    #[arg(long, value_name = "SELECTOR")]
    pub run: Vec<String>,
    /// Replay to this agent instead of the recorded one (a command line).
    #[arg(long, value_name = "'CMD ARGS'", conflicts_with = "controls")]
    pub agent: Option<String>,
    /// Replay to every built-in control agent.
    #[arg(long)]
    pub controls: bool,
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Folder for the replay's reports and run folders.
    #[arg(long, default_value = "faultlab-replay")]
    pub out: std::path::PathBuf,
    /// Keep each run's workspace.
    #[arg(long)]
    pub keep: bool,
    /// Overrides every task's deadline_ms (e.g. for an agent that takes seconds to start).
    #[arg(long, value_name = "MS")]
    pub deadline_ms: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge the reports of a sharded batch (faultlab eval --shard) into one, with statistics over all its runs.
    Merge(MergeArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Writes OUT.json, and OUT.md, OUT.html and OUT.xml (JUnit) beside it. Each run's `dir` is rewritten relative to the merged report when the run's folder is found next to its input report. The merged report's meta.wall_ms is the longest input's (the elapsed time when the shards ran side by side); merged.wall_ms_sum adds them all up.\n\
Example: faultlab report merge merged/report.json shard-*/report.json --oracle builtin\n\
Here 2 is an oracle verdict that disagrees; 1 includes an input that cannot be read or is not an eval report, and inputs that do not fit together (a run in two inputs; different seeds, faultlab versions or repeat counts, or a missing shard, unless --force)."
)]
pub struct MergeArgs {
    /// The merged report to write (JSON; the Markdown report goes beside it, as .md).
    #[arg(value_name = "OUT.json")]
    pub out: std::path::PathBuf,
    /// The reports to merge (report.json of each shard).
    #[arg(value_name = "IN.json", required = true)]
    pub inputs: Vec<std::path::PathBuf>,
    /// Merge reports with different seeds, faultlab versions or repeat counts, and an incomplete set of shards (the
    /// merged report lists what was overridden). A run present twice is refused regardless.
    #[arg(long)]
    pub force: bool,
    /// Check every merged verdict against an oracle file, or `builtin` for the oracle of the built-in tasks (a
    /// file named builtin: ./builtin). Only entries of tasks with runs in the merged report are checked.
    #[arg(long, value_name = "FILE|builtin")]
    pub oracle: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Console,
    Json,
    Md,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each row tests A's pass rate against B's with Fisher's exact test (two-sided, α = 0.05), exact at small run counts; rows are not corrected for multiple comparisons. Per-agent rows appear when both reports ran the same agents.\n\
Here 2 is, with --fail-on-regression, B significantly worse than A on some row; 1 includes a report that cannot be read or is not an eval report."
)]
pub struct CompareArgs {
    /// The baseline report (report.json of faultlab eval or faultlab report merge).
    #[arg(value_name = "A.json")]
    pub a: std::path::PathBuf,
    /// The report compared with it.
    #[arg(value_name = "B.json")]
    pub b: std::path::PathBuf,
    /// How the comparison is printed on stdout.
    #[arg(long, value_enum, default_value_t = CompareFormat::Console)]
    pub format: CompareFormat,
    /// Exit 2 when B's pass rate is significantly lower than A's on any row (overall, a category, a task or an
    /// agent).
    #[arg(long)]
    pub fail_on_regression: bool,
}

#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// good, bad-retry, infinite-loop, unsafe, hallucinating, blind-retrier, ignores-timeout or gives-up.
    pub kind: String,
}

#[derive(Debug, clap::Args)]
pub struct WorkspaceServerArgs {
    /// The workspace folder; every path argument is confined to it.
    #[arg(long)]
    pub root: std::path::PathBuf,
    /// Append one JSON line per side effect (write, append, delete, move, make_dir) to this file.
    #[arg(long)]
    pub ledger: Option<std::path::PathBuf>,
    /// Ask the user (elicitation/create, form mode) before every destructive write: overwriting an existing file,
    /// deleting one. Declined, unanswered or unaskable, the write does not happen.
    #[arg(long)]
    pub confirm_destructive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum ReportFormat {
    Console,
    Json,
    Junit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Era {
    #[value(name = "2026-07-28")]
    Modern,
    #[value(name = "2025-11-25")]
    Legacy,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Here 0 is every scenario passed (an expected error or timeout is a pass); 2 an expectation \
failed; 1 includes a target that did not start, reported as an ERROR (JUnit <error>, JSON \"error\") in every \
format.")]
pub struct RunArgs {
    /// Scenario files (YAML, or JSON by the .json extension), or folders of them.
    #[arg(required = true)]
    pub scenarios: Vec<std::path::PathBuf>,
    /// A target file naming an external MCP server (stdio command or loopback HTTP URL). Without it, the built-in
    /// faulty server runs in this process.
    #[arg(long)]
    pub target: Option<std::path::PathBuf>,
    /// The era for scenarios that do not name one.
    #[arg(long, value_enum, default_value_t = Era::Modern)]
    pub protocol_version: Era,
    /// How results are printed on stdout.
    #[arg(long, alias = "report", value_enum, default_value_t = ReportFormat::Console)]
    pub format: ReportFormat,
    /// Also write report.json, junit.xml and traces/ here.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub baseline: BaselineArgs,
}

/// Known failures checked in: `run` and `eval`.
#[derive(Debug, Clone, clap::Args)]
pub struct BaselineArgs {
    /// Known failures (YAML; schemas/baseline.schema.json): a listed check that fails is expected; a new failure,
    /// or a listed check that now passes (stale: remove it), fails the run (exit 2).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<std::path::PathBuf>,
    /// Write the checks that failed in this run to the --baseline file (creating it) and exit 0, unless something
    /// could not run.
    #[arg(long, requires = "baseline")]
    pub update_baseline: bool,
}

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Folder for the JSON report, JUnit XML and traces (created if missing).
    #[arg(long, default_value = "faultlab-demo")]
    pub out: std::path::PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Stdio,
    Http,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "With LAB_SCENARIO set (healthy, tool-error, transient-error, delay, malformed, disconnect), \
the server offers the single tool lab_probe instead; LAB_DELAY_MS (0-10000, default 1000) and LAB_FAILURES \
(0-10, default 2) tune it.\n\nDiagnostics (fault activations, pings, transport events) are JSON lines on stderr.")]
pub struct ServeArgs {
    /// stdio: MCP over stdin/stdout. http: Streamable HTTP on --host/--port/--path.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,
    // The defaults are shown, not set: giving any of these flags without `--transport http` is a mistake.
    #[arg(long, help = format!("Loopback address to listen on (HTTP only): 127.0.0.1, ::1, localhost or another \
        127.x.y.z [default: {}]", crate::serve::DEFAULT_HOST))]
    pub host: Option<String>,
    #[arg(long, help = format!("Port to listen on (HTTP only); 0 picks a free port, printed on stderr [default: {}]",
        crate::serve::DEFAULT_PORT))]
    pub port: Option<u16>,
    #[arg(long, help = format!("Endpoint path (HTTP only) [default: {}]", crate::serve::DEFAULT_PATH))]
    pub path: Option<String>,
    /// Longest frame (one line) read or written on stdio, in bytes (stdio only). A request over it gets a JSON-RPC
    /// error for its id; a reply over it is replaced by one (and a diagnostic on stderr).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(MIN_FRAME_BYTES..=MAX_FRAME_BYTES))]
    pub max_frame_bytes: Option<u64>,
    /// A 2025-11-25 session with nothing in flight for this long is closed (HTTP only). At the session cap (128),
    /// the least recently used session idle for 30 s (or this, if shorter) is closed to admit a new client.
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub session_idle_timeout: Option<std::time::Duration>,
    /// On SIGINT/SIGTERM, how long open responses get to finish before their connections are closed (HTTP:
    /// seconds, decimals allowed).
    #[arg(long, value_name = "SECONDS", value_parser = parse_grace, default_value = "2")]
    pub shutdown_grace: std::time::Duration,
    #[command(flatten)]
    pub http_limits: HttpLimitArgs,
    #[command(flatten)]
    pub auth: AuthArgs,
}

/// `--auth`: an OAuth 2.1 authorization server and protected resource on the same listener (HTTP fronts only).
#[derive(Debug, clap::Args)]
pub struct AuthArgs {
    /// Require OAuth 2.1 bearer tokens on the endpoint: 401 with resource_metadata, protected resource and
    /// authorization server metadata, dynamic registration, code + PKCE S256 approved at once (headless), refresh,
    /// revocation; all on this listener. Auth events go to stderr as JSON lines; tokens never do. See docs/auth.md.
    #[arg(long)]
    pub auth: bool,
    /// An auth fault (with --auth): a name for its defaults, or JSON such as '{"type": "token_expired", "after":
    /// 2}'. `faultlab faults` lists them under "auth faults". On the proxy, a rules file's `auth:` can give it
    /// instead, aimed at particular calls (docs/auth.md).
    #[arg(long, value_name = "FAULT", requires = "auth")]
    pub auth_fault: Option<String>,
    /// Lifetime of an access token (with --auth) [default: 3600].
    #[arg(long, value_name = "SECONDS", value_parser = seconds, requires = "auth")]
    pub auth_token_ttl: Option<std::time::Duration>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Serves POST /v1/chat/completions, /v1/responses, /v1/messages and Gemini's \
/v1beta/models/MODEL:generateContent (:streamGenerateContent?alt=sse), and GET /v1/models, on loopback. Point an OpenAI \
client's base URL at the printed address (…/v1), and an Anthropic or Gemini client's at the same without /v1. \
Reference: docs/model.md.")]
pub struct ModelArgs {
    /// The model script (YAML, or JSON by the .json extension): the tool calls to ask for, in order, what to do
    /// when a result comes back failed, and the final answer. Schema: schemas/model-script.schema.json. A
    /// recording made with --record-from (a .jsonl file) replays the real model's answers instead.
    #[arg(long, value_name = "FILE", required_unless_present = "record_from", conflicts_with = "record_from")]
    pub script: Option<std::path::PathBuf>,
    /// Answer from a real model endpoint instead of a script, recording its answers in --record: an
    /// OpenAI-compatible base URL (…/v1), Anthropic's (https://api.anthropic.com/v1) or Gemini's
    /// (https://generativelanguage.googleapis.com/v1beta). Its key is read from OPENAI_API_KEY, ANTHROPIC_API_KEY or
    /// GEMINI_API_KEY, sent only to it, never written.
    #[arg(long, value_name = "URL", requires = "record")]
    pub record_from: Option<String>,
    /// Write every request received, with the tool results it carried back and the turn given, as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    // Its help names the faults the hop carries, from the catalogue (`faultlab_model::hop::carried`).
    #[arg(long, value_name = "FILE", help = model_rules_help())]
    pub rules: Option<std::path::PathBuf>,
    /// Loopback address to listen on: 127.0.0.1, ::1, localhost or another 127.x.y.z.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on; 0 picks a free port. The address is printed on stderr.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// On SIGINT/SIGTERM, how long open responses get to finish before their connections are closed (seconds,
    /// decimals allowed).
    #[arg(long, value_name = "SECONDS", value_parser = parse_grace, default_value = "2")]
    pub shutdown_grace: std::time::Duration,
    /// Largest request body, in bytes (4 MiB: a long conversation with long tool results). A
    /// longer one gets 413 in the API's error shape, as does a body of more than 100000 JSON values.
    #[arg(long, value_name = "BYTES", default_value_t = faultlab_model::MAX_REQUEST_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(MIN_FRAME_BYTES..=MAX_FRAME_BYTES))]
    pub max_request_bytes: usize,
    #[command(flatten)]
    pub http_limits: HttpLimitArgs,
}

/// The bounds every HTTP listener enforces against slow or abandoned clients.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpLimitArgs {
    /// HTTP: a client must send a request's head within this (and may idle between requests no longer).
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "10")]
    pub header_timeout: std::time::Duration,
    /// HTTP: a request body that stops arriving for this long fails with 408.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "10")]
    pub body_timeout: std::time::Duration,
    /// HTTP: a request body not whole this long after its request's head fails with 408, however steadily it
    /// trickles in.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "30")]
    pub body_deadline: std::time::Duration,
    /// HTTP: most connections open at once [default: 1024, or fewer under a low descriptor limit]; at the cap the
    /// connection idle the longest is closed to admit a new one.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: Option<u32>,
}

impl HttpLimitArgs {
    pub fn limits(&self, shutdown_grace: std::time::Duration) -> faultlab_http::server::Limits {
        let defaults = faultlab_http::server::Limits::default();
        faultlab_http::server::Limits {
            header_read_timeout: self.header_timeout,
            body_idle_timeout: self.body_timeout,
            max_connections: self.max_connections.map_or(defaults.max_connections, |n| n as usize),
            shutdown_grace,
            body_deadline: self.body_deadline,
        }
    }
}

/// A duration in seconds, decimals allowed (`2`, `0.5`), from 0.001 to 86400.
pub fn seconds(text: &str) -> Result<std::time::Duration, String> {
    let value: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds (e.g. 2 or 0.5)"))?;
    if !(0.001..=86_400.0).contains(&value) {
        return Err(format!("{text} s is out of range: give 0.001 to 86400 seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(value))
}

/// Smallest `--max-frame-bytes`: room for an `initialize` and the errors the lab writes (1 KiB).
const MIN_FRAME_BYTES: u64 = 1024;
/// Largest `--max-frame-bytes` (1 GiB): one frame is held in memory whole.
const MAX_FRAME_BYTES: u64 = 1 << 30;

/// `--shutdown-grace`: seconds, decimals allowed, 0 to 3600.
fn parse_grace(text: &str) -> Result<std::time::Duration, String> {
    let seconds: f64 =
        text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds, e.g. 2 or 0.5"))?;
    if !(0.0..=3600.0).contains(&seconds) {
        return Err(format!("{text:?} must be between 0 and 3600 seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Example: faultlab proxy --rules faults.yaml -- npx @modelcontextprotocol/server-everything\n\
A --fault SPEC is one rule as a YAML flow mapping, e.g. \
--fault '{match: {tool: echo}, fault: {type: latency, delay_ms: 200}}'.\n\
When the client closes stdin (or the proxy gets SIGTERM/SIGINT) the stdio upstream is stopped in order: its stdin \
is closed; after --shutdown-grace, SIGTERM to its process group; after the grace again, SIGKILL to the group.\n\
Here 1 includes an upstream that exited on its own while the client was still connected, or failed on the \
client's EOF with requests unanswered (each got a JSON-RPC error); one that exits 0 once its stdin closes is a \
clean end.")]
pub struct ProxyArgs {
    /// Rules file (YAML, or JSON by the .json extension); see schemas/rules.schema.json.
    #[arg(long)]
    pub rules: Option<std::path::PathBuf>,
    /// One more rule, written inline (may be repeated; applied after the file's rules).
    #[arg(long = "fault", value_name = "SPEC")]
    pub faults: Vec<String>,
    /// Seed for every random choice (overrides the rules file's seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also record every upstream reply in full in the trajectory (`body`), so the session can be replayed.
    #[arg(long)]
    pub record_bodies: bool,
    /// Append the trajectory (every frame, the rule and fault applied, the ledger) as JSON lines to this file;
    /// without it the trajectory goes to stderr.
    #[arg(long)]
    pub record: Option<std::path::PathBuf>,
    /// Serve the live control API (JSON over HTTP: GET/POST /rules, DELETE /rules/NAME, POST /reset) on this
    /// loopback address, e.g. 127.0.0.1:0 (the bound address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub control: Option<String>,
    /// Require `Authorization: Bearer TOKEN` on every control API request; `auto` generates a token and prints it
    /// once on stderr (`faultlab: control token TOKEN`). A literal token is visible in `ps`: prefer
    /// --control-token-file or the FAULTLAB_CONTROL_TOKEN variable.
    #[arg(long, value_name = "TOKEN|auto", requires = "control", conflicts_with = "control_token_file")]
    pub control_token: Option<String>,
    /// Read the control API's bearer token from this file (its first line), which only its owner may read (mode
    /// 0600 or stricter). Without this or --control-token, FAULTLAB_CONTROL_TOKEN is used when set.
    #[arg(long, value_name = "FILE", requires = "control")]
    pub control_token_file: Option<std::path::PathBuf>,
    /// HTTP front with a stdio child (`--listen ... -- CMD`): a request the child has not answered after this
    /// gets a JSON-RPC error (504).
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "60")]
    pub request_timeout: std::time::Duration,
    /// Seconds (decimals allowed) of each shutdown step: a stdio upstream gets this to exit after its stdin is
    /// closed, and again after SIGTERM; on SIGINT/SIGTERM, open HTTP responses get this to finish before their
    /// connections are closed.
    #[arg(long, value_name = "SECONDS", value_parser = parse_grace, default_value = "2")]
    pub shutdown_grace: std::time::Duration,
    #[command(flatten)]
    pub http_limits: HttpLimitArgs,
    /// With --listen: the proxy is the protected resource (the client's token stays here; the upstream gets the
    /// request without it).
    #[command(flatten)]
    pub auth: AuthArgs,
    /// Serve Streamable HTTP on this loopback address (e.g. 127.0.0.1:0) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Serve every connection to this Unix socket (created here; it must not exist) as a stdio session with an
    /// upstream of its own (-- CMD started per connection and stopped when it ends, or --upstream URL), all
    /// sharing one rule state: counts, windows, schedules and random draws belong to the run, so a client that
    /// reconnects meets the rules where it left them. The trajectory's events carry the scope `connection N`.
    /// stdout gets one JSON line when the socket is ready, {"listening": PATH}, and one per connection accepted,
    /// {"connection": N}. Runs until SIGTERM/SIGINT, then removes the socket.
    #[arg(long, value_name = "PATH", conflicts_with = "listen")]
    pub listen_unix: Option<std::path::PathBuf>,
    /// As --listen-unix, on a Unix socket already bound and listening that the proxy inherits as this descriptor
    /// (3 or more): how faultlab eval hands its proxy the socket the agent connects to.
    #[arg(long, value_name = "FD", conflicts_with_all = ["listen", "listen_unix"],
        value_parser = clap::value_parser!(i32).range(3..))]
    pub listen_fd: Option<i32>,
    /// The upstream MCP server's Streamable HTTP URL, e.g. http://127.0.0.1:3000/mcp or
    /// https://mcp.example.com/mcp (any host; credentials go in headers, never in the URL).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream: Option<String>,
    /// PEM file of certificates an https:// upstream may be signed by (a private CA), trusted on top of the
    /// system's roots.
    #[arg(long, value_name = "FILE", requires = "upstream")]
    pub upstream_ca: Option<std::path::PathBuf>,
    /// A header sent with every request to the upstream, e.g. 'X-Team: lab' (may be repeated; replaces the
    /// client's header of the same name). Its value is never printed.
    #[arg(long, value_name = "'NAME: VALUE'", requires = "upstream")]
    pub upstream_header: Vec<String>,
    /// A header whose value is taken from the environment, e.g. 'Authorization: Bearer ${MCP_TOKEN}' (single
    /// quotes, so the shell leaves ${MCP_TOKEN} to the proxy); may be repeated. The value is a secret: never
    /// printed, and scrubbed from messages and the trajectory. An unset variable is an error (exit code 2).
    #[arg(long, value_name = "'NAME: ...${VAR}...'", requires = "upstream")]
    pub upstream_header_env: Vec<String>,
    /// Answer from a recording instead of a live server: a trajectory recorded with --record FILE --record-bodies.
    /// Each request gets the recorded reply to the same call (method, tool, arguments), the rules apply on top; a
    /// request the recording lacks gets a JSON-RPC error naming the closest recorded call. Either front. With a
    /// server after `--` (stdio front), the recording is laid over that server instead: every request still
    /// reaches it (its writes really happen), a recorded reply replaces its reply to the same call, and calls the
    /// recording lacks get the live reply.
    #[arg(long, value_name = "TRAJECTORY", conflicts_with = "upstream")]
    pub replay: Option<std::path::PathBuf>,
    /// With --replay over a server: append one JSON line per reply, {"key": CALL, "from": "recorded" | "live"}.
    #[arg(long, value_name = "FILE", requires = "replay")]
    pub replay_log: Option<std::path::PathBuf>,
    /// Longest frame (one line) carried in either direction by a stdio front, in bytes (default 68157440 =
    /// 65 MiB: the largest oversized_response fault, 64 MiB, plus its envelope). A longer one is dropped: the client
    /// gets a JSON-RPC error for its id and the trajectory a `dropped` event.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(MIN_FRAME_BYTES..=MAX_FRAME_BYTES))]
    pub max_frame_bytes: Option<u64>,
    /// The upstream MCP server command and its arguments, after `--` (a stdio upstream).
    #[arg(last = true, value_name = "CMD", id = "command")]
    pub command: Vec<String>,
    /// The stdio upstream's program, instead of `-- CMD` (for hosts that swallow `--`, such as the MCP
    /// Inspector); its arguments are --upstream-arg.
    #[arg(long, value_name = "PROGRAM", conflicts_with_all = ["command", "upstream"])]
    pub upstream_command: Option<String>,
    /// One argument of --upstream-command (repeatable, in order; `--upstream-arg=--flag` or `--upstream-arg
    /// --flag` for one that starts with a dash).
    #[arg(long, value_name = "ARG", requires = "upstream_command", allow_hyphen_values = true)]
    pub upstream_arg: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiagnoseFormat {
    Console,
    Json,
    Md,
    Html,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Findings: tool_loop, retry_storm, unhandled_tool_error, false_success, ignored_timeout, \
duplicate_side_effect, retry_without_backoff, error_swallowed, corrected_retry. Each is a heuristic; the report says \
which detectors a trace lacks the data for (trajectories record no agent messages, and older ones no arguments).\n\
Here 0 is diagnosed (findings alone do not fail); 2 a finding named by --fail-on is present; 1 includes a trace \
that cannot be read or parsed (the error names the file and the message index or line).")]
pub struct DiagnoseArgs {
    /// Traces: OpenAI-message JSON (from faultlab run, faultlab demo or an agent) or proxy trajectories (JSON lines
    /// from faultlab proxy --record), or folders of them (.json and .jsonl files).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<std::path::PathBuf>,
    /// How the report is written; html is one self-contained page.
    #[arg(long, value_enum, default_value_t = DiagnoseFormat::Console)]
    pub format: DiagnoseFormat,
    /// Write the report to this file instead of stdout.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Exit 2 when one of these findings is present (comma-separated or repeated; `any` for every finding).
    #[arg(long, value_name = "FINDING", value_delimiter = ',')]
    pub fail_on: Vec<String>,
    /// tool_loop: identical calls in a row (same arguments, same answer) that make a loop [default: 3].
    #[arg(long, value_name = "N")]
    pub loop_min_calls: Option<usize>,
    /// retry_storm: how many times the same call (same tool, same arguments) sent again after failing makes a storm, when the retrying does harm (waits under --min-backoff-ms or not growing, this many retries failed, or an error that is not transient) [default: 3].
    #[arg(long, value_name = "N")]
    pub storm_min_retries: Option<usize>,
    /// retry_without_backoff: a retry sooner than this after the failure is immediate, in ms [default: 100].
    #[arg(long, value_name = "MS")]
    pub min_backoff_ms: Option<f64>,
    /// retry_without_backoff: immediate retries in one run that make a finding [default: 2].
    #[arg(long, value_name = "N")]
    pub quick_retries: Option<usize>,
    /// duplicate_side_effect: treat this tool as a write besides names with a write verb (may be repeated).
    #[arg(long = "write-tool", value_name = "TOOL")]
    pub write_tools: Vec<String>,
}

/// `faultlab model --rules`' help: the faults the model hop carries, listed from the catalogue.
fn model_rules_help() -> String {
    format!(
        "A rules file (the proxy's format) putting catalogue faults on the model hop: {}; match.method is the API \
         (chat.completions, responses, messages, generate_content)",
        faultlab_model::hop::supported()
    )
}
