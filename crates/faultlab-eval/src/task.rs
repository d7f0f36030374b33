//! The task file: what the agent must do, in which workspace, against which server, under which faults, and how
//! the run is graded. Strict: an unknown key is an error naming the file, the line and the key.
//!
//! Workspace contents may contain `{{nonce}}`: each run replaces it with a fresh token derived from the seed, so
//! a witness can tell an agent that really read the data from one that made its answer up.

use faultlab_engine::rules::Rule;
use faultlab_wire::config;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The placeholder a run replaces with its nonce, in workspace contents and in assertion values.
pub const NONCE: &str = "{{nonce}}";

/// Default wall-clock budget of one run (the agent's first connection to its end), in milliseconds.
pub const DEFAULT_DEADLINE_MS: u64 = 30_000;
/// Default time an agent may take to start, before its deadline counts (milliseconds): an interpreter loading an
/// MCP SDK takes seconds on a busy machine.
pub const DEFAULT_START_MS: u64 = 30_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Unique, file-name safe (letters, digits, `-`, `_`).
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the agent is asked to do, in words (given to the agent as `FAULTLAB_GOAL`).
    pub goal: String,
    /// Files seeded into the fresh workspace: relative path → contents (`{{nonce}}` is replaced per run).
    #[serde(default)]
    pub workspace: BTreeMap<String, String>,
    /// The MCP server the agent reaches through the proxy. Default: the built-in workspace server.
    #[serde(default)]
    pub server: Server,
    /// Tools the agent may use (globs).
    pub allowed_tools: Vec<String>,
    /// Tools the agent must never call (globs), e.g. `delete_file`.
    #[serde(default)]
    pub forbidden_actions: Vec<String>,
    #[serde(default = "default_invariants")]
    pub invariants: Invariants,
    /// Proxy rules (the `faultlab proxy` rule format) applied between the agent and the server.
    #[serde(default)]
    pub faults: Vec<Rule>,
    /// A scripted model endpoint (`faultlab model`) eval serves for each run, outside the sandbox, with faults of
    /// its own; the agent reaches it at `FAULTLAB_MODEL_URL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    /// Seed for the proxy's random choices and the nonce; `faultlab eval --seed` overrides it. Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub recovery: Recovery,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<Witness>,
    #[serde(default)]
    pub grader: Assertions,
    /// Wall-clock budget of one run in milliseconds, counted from the agent's first connection to its MCP server
    /// (or from the end of `start_ms` if it has not connected by then); an agent still running then is killed
    /// and graded.
    #[serde(default = "default_deadline_ms")]
    pub deadline_ms: u64,
    /// How long the agent may take to start (load its interpreter and SDK) and connect to its MCP server before
    /// `deadline_ms` starts to count, in milliseconds (default 30000: an SDK took 10 s to load on a 2-CPU machine
    /// running 16 processes at once).
    #[serde(default = "default_start_ms", skip_serializing_if = "is_default_start_ms")]
    pub start_ms: u64,
    /// The steps the built-in control agents follow. The grader never reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Variables of faultlab's environment the agent is given besides the defaults (`PATH`, `LANG`, …; see
    /// `faultlab eval --help`): a model's base URL and key, by name. The agent sees no other variable of faultlab's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_env: Vec<String>,
}

fn default_invariants() -> Invariants {
    Invariants { path_within: None, no_file_deleted: false, max_tool_calls: default_max_tool_calls() }
}

fn default_deadline_ms() -> u64 {
    DEFAULT_DEADLINE_MS
}

fn default_start_ms() -> u64 {
    DEFAULT_START_MS
}

fn is_default_start_ms(ms: &u64) -> bool {
    *ms == DEFAULT_START_MS
}

/// `model`: the script the endpoint answers from and the rules of the model hop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// The model script (the format of `faultlab model --script`, schemas/model-script.schema.json), relative to
    /// the task file.
    pub script: PathBuf,
    /// Rules on the model hop (the rule format of `faultlab model --rules`): the model hop's own faults
    /// (`overloaded`, `tool_call_cut`, …) and the wire's it carries (`latency`, `http_status`, `disconnect`, …),
    /// matched by `method` (the API: `chat.completions`, `responses`, `messages`, `generate_content`), `nth`, ….
    #[serde(default)]
    pub faults: Vec<Rule>,
    /// A built-in task's script, compiled in (`builtin::MODEL_SCRIPTS`): read in place of the file `script`
    /// names, so `faultlab eval --controls` needs no files. Never in a task file.
    #[serde(skip)]
    #[schemars(skip)]
    pub compiled: Option<&'static str>,
}

impl Model {
    /// The script the endpoint answers from: the compiled-in text of a built-in task, else the file.
    pub fn load_script(&self) -> Result<faultlab_model::script::Script, String> {
        match self.compiled {
            Some(text) => faultlab_model::script::Script::parse(text, false)
                .map_err(|e| format!("the built-in model script {}: {e}", self.script.display())),
            None => faultlab_model::script::Script::load(&self.script).map_err(|e| e.to_string()),
        }
    }
}

/// Where the agent's tools come from: the built-in workspace server when neither `command` nor `url` is given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Any stdio MCP server: the command and its arguments; `{workspace}` is replaced by the workspace path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// A loopback Streamable HTTP MCP server. The grade then sees only the workspace folder's snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Variables set for the server's command (faultlab starts it, outside the agent's sandbox, with its own
    /// environment plus these).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Variables of faultlab's own environment the server needs: a run where one is not set is an error of the
    /// set-up, named, not a verdict on the agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_from: Vec<String>,
    /// The built-in workspace server asks the user (`elicitation/create`, form mode, a boolean `confirm`) before
    /// every destructive write (overwriting an existing file, deleting one) and does it only when confirmed; a
    /// decline, no answer, or a client without the elicitation capability leaves the file as it was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm_destructive: bool,
    /// How the agent reaches the server: `stdio` (default; its `mcpServers` entry is `faultlab connect`) or
    /// `http` (the run's proxy is a loopback Streamable HTTP endpoint in front of the server, and the agent's entry
    /// is `{"type": "http", "url": …}`).
    #[serde(default, skip_serializing_if = "Transport::is_stdio")]
    pub transport: Transport,
    /// With `transport: http`: the proxy is an OAuth 2.1 protected resource with its authorization server
    /// (`faultlab proxy --auth`, see docs/auth.md) and the agent must authorize itself. `true` for no auth fault;
    /// an auth fault's name (`token_revoked`) or object (`{type: token_revoked, after: 2}`) for that fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthSetting>,
}

/// How the agent reaches its server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// `faultlab connect`, a stdio relay to the run's proxy.
    #[default]
    Stdio,
    /// The run's proxy as a Streamable HTTP endpoint on loopback.
    Http,
}

impl Transport {
    fn is_stdio(&self) -> bool {
        *self == Transport::Stdio
    }
}

/// `server.auth`: on (`true`), off (`false`), or on with an auth fault (its name, or an object with its `type` and
/// parameters, as `faultlab proxy --auth-fault` takes them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AuthSetting {
    On(bool),
    Fault(String),
    Params(serde_json::Map<String, Value>),
}

impl AuthSetting {
    /// The `--auth-fault` argument, when there is a fault.
    pub fn fault(&self) -> Option<String> {
        match self {
            AuthSetting::On(_) => None,
            AuthSetting::Fault(name) => Some(name.clone()),
            AuthSetting::Params(params) => Some(Value::Object(params.clone()).to_string()),
        }
    }

    pub fn enabled(&self) -> bool {
        !matches!(self, AuthSetting::On(false))
    }

    /// The auth fault's name (`token_revoked`), as `faultlab faults` and the reports' faults name it.
    pub fn fault_name(&self) -> Option<&'static str> {
        self.fault().and_then(|fault| faultlab_auth::AuthFault::parse(&fault).ok()).map(|fault| fault.name())
    }
}

impl Server {
    /// Whether the proxy requires OAuth authorization (`auth` set and not `false`).
    pub fn requires_auth(&self) -> bool {
        self.auth.as_ref().is_some_and(AuthSetting::enabled)
    }

    /// The built-in workspace server (read, write, append, list, move, delete, …), confined to the workspace and
    /// logging every side effect.
    pub fn is_builtin(&self) -> bool {
        self.command.is_none() && self.url.is_none()
    }
}

/// Checked on the trajectory, like the policy assertions; a violation fails the safety layer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Invariants {
    /// Every path argument stays within this folder (relative to the workspace; `.` is the whole workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_within: Option<String>,
    /// No file of the seeded workspace is deleted.
    #[serde(default)]
    pub no_file_deleted: bool,
    /// At most this many tool calls (default 10).
    #[serde(default = "default_max_tool_calls")]
    pub max_tool_calls: u32,
}

fn default_max_tool_calls() -> u32 {
    10
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recovery {
    /// The tool the task is mainly about (the one a fault is expected to hit).
    pub primary: String,
    /// Tools that count as a fallback for the primary one.
    #[serde(default)]
    pub acceptable: Vec<String>,
    /// Identical consecutive calls beyond this count as a loop.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    #[serde(default)]
    pub expected_outcome: RecoveryOutcome,
    #[serde(default = "default_strategies")]
    pub allowed_strategies: Vec<Strategy>,
}

fn default_max_attempts() -> u32 {
    3
}

fn default_strategies() -> Vec<Strategy> {
    vec![Strategy::Retry, Strategy::Fallback, Strategy::Abort]
}

/// How the agent responded to the first failure it met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Called the same tool again.
    Retry,
    /// Called one of the task's acceptable tools.
    Fallback,
    /// Stopped and said it could not finish.
    Abort,
    /// Finished with less than asked and said so.
    Degrade,
    /// Called some other tool (checked state, took another route).
    Replan,
    /// Carried on as if nothing had failed.
    Ignore,
    /// No failure reached the agent.
    NotApplicable,
}

/// What came of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryOutcome {
    /// The task's end state was reached.
    #[default]
    Recovered,
    /// Part of the end state was reached.
    PartiallyRecovered,
    /// A forbidden action was tried and did not bring the end state.
    UnsafeAttempted,
    /// The end state was reached through a forbidden action.
    UnsafeRecovery,
    /// The end state was not reached and the agent did not say so.
    Failed,
    /// The same call over and over (more identical consecutive calls than `max_attempts`).
    Looped,
    /// The agent claimed success the workspace and the witness do not support.
    FalseRecovery,
    /// The agent stopped, said it could not finish, and left nothing broken.
    AbortedSafely,
}

/// Proof that the agent really read the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Witness {
    /// This file must (or must not) change between the seeded and the final workspace.
    StateDelta { target: String, must_change: bool },
    /// The run's nonce must appear in this file of the final workspace, or in the agent's claim (`claim`).
    ContentMatch { target: String },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assertions {
    #[serde(default)]
    pub state_assertions: Vec<StateAssertion>,
    #[serde(default)]
    pub policy_assertions: Vec<PolicyAssertion>,
    #[serde(default)]
    pub integrity_assertions: Vec<IntegrityAssertion>,
}

/// Checked on the final workspace (layer 1, outcome).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum StateAssertion {
    FileExists {
        path: String,
    },
    /// Its hash differs from the seeded one (or it did not exist).
    FileChanged {
        path: String,
    },
    FileValidJson {
        path: String,
    },
    /// The file contains `value` (`{{nonce}}` is replaced by the run's nonce).
    FileContains {
        path: String,
        value: String,
    },
    /// The file holds exactly `content` (`{{nonce}}` is replaced by the run's nonce), byte for byte, or its
    /// SHA-256 is `sha256` (64 hex digits). Give one of the two. For a goal that says "exactly".
    FileEquals {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// The command (program and arguments), run in the final workspace, exits 0.
    CommandSucceeded {
        command: Vec<String>,
    },
}

/// Checked on the trajectory (layer 2, safety).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum PolicyAssertion {
    NoForbiddenToolCalled,
    NoFileDeleted,
    PathWithinWorkspace,
    MaxToolCalls { value: u32 },
}

/// Checked on the side-effect ledger and the snapshots (layer 4, side effects).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum IntegrityAssertion {
    FileUnchanged { path: String },
    FileWrittenAtMostOnce { path: String },
    FileWrittenExactlyOnce { path: String },
}

/// What the control agents do. Arguments and expectations may use `{{name}}` for a value an earlier step saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// How long a control agent waits for one tool call before giving up on it, in milliseconds.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    pub steps: Vec<PlanStep>,
    /// What the agent reports as its answer on success (templated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

fn default_call_timeout_ms() -> u64 {
    1_000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    pub tool: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// A regex the result text must match for the step to count as done; a mismatch is a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// Save the first capture group of `expect` (or the whole text) under this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save: Option<String>,
    /// False for a write that must not happen twice: a careful agent checks state before retrying it.
    #[serde(default = "yes")]
    pub idempotent: bool,
    /// How a careful agent checks whether a failed non-idempotent step took effect anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Check>,
    /// Another route to the same effect, used when retries do not help.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Check>,
    /// The forbidden shortcut a careless agent takes when the step fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsafe_fallback: Option<Check>,
}

/// One call and, optionally, what its result text must match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub tool: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

fn yes() -> bool {
    true
}

/// The six fault categories; each fault's file in the catalogue says which is its.
pub use faultlab_engine::catalogue::Category;

/// A task file that cannot be read or is invalid.
pub type TaskError = config::FileError;

impl Task {
    /// Reads a task file: JSON by the `.json` extension, YAML otherwise. A model's script is read now, from the
    /// task file's folder, and kept by its absolute path.
    pub fn load(path: &Path) -> Result<Self, TaskError> {
        let mut task = config::load(path, "task file", Self::parse)?;
        if let Some(model) = &mut task.model {
            let base = path.parent().unwrap_or(Path::new("."));
            let script = base.join(&model.script);
            model.script = std::path::absolute(&script).unwrap_or(script);
            faultlab_model::script::Script::load(&model.script).map_err(|e| config::FileError::Invalid {
                kind: "task file",
                path: path.display().to_string(),
                message: format!("model.script: {e}"),
            })?;
        }
        Ok(task)
    }

    /// Parses and checks a task; the error names the key (and, from YAML, the line).
    pub fn parse(text: &str, is_json: bool) -> Result<Self, String> {
        let task: Self = config::parse(text, is_json)?;
        task.check()?;
        Ok(task)
    }

    /// What serde cannot check: names, paths, regexes, rules and numbers in range.
    pub fn check(&self) -> Result<(), String> {
        if self.id.is_empty() || !self.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("id {:?}: use letters, digits, '-' and '_' only", self.id));
        }
        if self.allowed_tools.is_empty() {
            return Err("allowed_tools: name at least one tool".into());
        }
        for pattern in self.allowed_tools.iter().chain(&self.forbidden_actions) {
            glob::Pattern::new(pattern).map_err(|e| format!("tool pattern {pattern:?}: {e}"))?;
        }
        for path in self.workspace.keys() {
            relative_path(path).map_err(|m| format!("workspace: {m}"))?;
        }
        for rule in &self.faults {
            rule.check().map_err(|m| format!("faults: {m}"))?;
            if rule.fault.model_only() {
                return Err(format!(
                    "faults: rule {:?}: fault {} exists only between an agent and its model; put it in the task's \
                     model.faults (or the rules of `faultlab model`)",
                    rule.name,
                    rule.fault.name()
                ));
            }
            if let Some(why) = rule.fault.serve_only() {
                return Err(format!(
                    "faults: rule {:?}: fault {} cannot be applied by a proxy: {why}",
                    rule.name,
                    rule.fault.name()
                ));
            }
        }
        if let Some(model) = &self.model {
            for rule in &model.faults {
                rule.check().map_err(|m| format!("model.faults: {m}"))?;
            }
            let rules = faultlab_engine::rules::RulesFile { seed: None, rules: model.faults.clone(), auth: None };
            faultlab_model::rules(rules).map_err(|e| format!("model.faults: {e}"))?;
        }
        if self.recovery.max_attempts == 0 {
            return Err("recovery.max_attempts: must be at least 1".into());
        }
        if self.deadline_ms == 0 || self.deadline_ms > 3_600_000 {
            return Err(format!("deadline_ms: {} is out of range (1..=3600000)", self.deadline_ms));
        }
        if self.start_ms == 0 || self.start_ms > 600_000 {
            return Err(format!("start_ms: {} is out of range (1..=600000)", self.start_ms));
        }
        match (&self.server.command, &self.server.url) {
            (Some(command), None) if command.is_empty() => return Err("server.command: name the program".into()),
            (Some(_), Some(_)) => return Err("server: give command or url, not both".into()),
            _ => {}
        }
        if self.server.confirm_destructive && !self.server.is_builtin() {
            return Err("server.confirm_destructive: only the built-in workspace server asks for confirmation (give \
                        neither command nor url)"
                .into());
        }
        if let Some(auth) = &self.server.auth {
            if self.server.transport != Transport::Http {
                return Err("server.auth: authorization needs an HTTP endpoint: add `transport: http`".into());
            }
            if let Some(fault) = auth.fault() {
                faultlab_auth::AuthFault::parse(&fault)
                    .map_err(|e| format!("server.auth: {}", e.to_string().trim_start_matches("--auth-fault: ")))?;
            }
        }
        if let Some(path) = &self.invariants.path_within
            && path != "."
        {
            relative_path(path).map_err(|m| format!("invariants.path_within: {m}"))?;
        }
        let mut paths: Vec<&str> = Vec::new();
        for a in &self.grader.state_assertions {
            match a {
                StateAssertion::FileExists { path }
                | StateAssertion::FileChanged { path }
                | StateAssertion::FileValidJson { path }
                | StateAssertion::FileContains { path, .. } => paths.push(path),
                StateAssertion::FileEquals { path, content, sha256 } => {
                    match (content, sha256) {
                        (Some(_), Some(_)) | (None, None) => {
                            return Err(format!(
                                "grader.state_assertions: file_equals {path}: give content or sha256 (one of them)"
                            ));
                        }
                        (None, Some(sha)) if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) => {
                            return Err(format!(
                                "grader.state_assertions: file_equals {path}: sha256 {sha:?} is not 64 hex digits"
                            ));
                        }
                        _ => {}
                    }
                    paths.push(path);
                }
                StateAssertion::CommandSucceeded { command } if command.is_empty() => {
                    return Err("grader.state_assertions: command_succeeded needs a program".into());
                }
                StateAssertion::CommandSucceeded { .. } => {}
            }
        }
        for a in &self.grader.integrity_assertions {
            match a {
                IntegrityAssertion::FileUnchanged { path }
                | IntegrityAssertion::FileWrittenAtMostOnce { path }
                | IntegrityAssertion::FileWrittenExactlyOnce { path } => paths.push(path),
            }
        }
        match &self.witness {
            Some(Witness::StateDelta { target, .. }) => paths.push(target),
            Some(Witness::ContentMatch { target }) if target != "claim" => paths.push(target),
            _ => {}
        }
        for path in paths {
            relative_path(path).map_err(|m| format!("grader: {m}"))?;
        }
        if let Some(plan) = &self.plan {
            let placeholder = regex::Regex::new(r"\{\{[A-Za-z0-9_]+\}\}").expect("valid regex");
            for (i, step) in plan.steps.iter().enumerate() {
                let checks = [Some(&step.expect), step.verify.as_ref().map(|c| &c.expect)];
                for regex in checks.into_iter().flatten().flatten() {
                    // `{{name}}` is filled in at run time; check the rest with a plain word in its place.
                    let filled = placeholder.replace_all(regex, "x");
                    regex::Regex::new(&filled).map_err(|e| format!("plan.steps[{i}]: bad expect regex: {e}"))?;
                }
            }
        }
        Ok(())
    }

    /// The categories of the task's faults (for reports and the oracle).
    pub fn categories(&self) -> Vec<Category> {
        let model = self.model.iter().flat_map(|m| &m.faults);
        let mut categories: Vec<Category> = self.faults.iter().chain(model).map(|r| r.fault.category()).collect();
        // An auth fault is the authorization server's, not a rule's; it is still an authorization fault.
        if self.server.auth.as_ref().and_then(AuthSetting::fault).is_some() {
            categories.push(Category::Authorization);
        }
        categories.sort();
        categories.dedup();
        categories
    }
}

/// A workspace-relative path: not absolute, no `..`, not empty.
pub fn relative_path(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    if path.is_empty() || p.is_absolute() || p.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        return Err(format!("{path:?} must be a relative path inside the workspace (no '..', not absolute)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_file_in_the_examples_loads_unchanged() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval");
        let mut loaded = 0;
        for dir in ["tasks", "askback", "external", "auth", "http"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "yaml") && path.file_stem() != Some("oracle".as_ref()) {
                    Task::load(&path).unwrap_or_else(|e| panic!("{e}"));
                    loaded += 1;
                }
            }
        }
        assert!(loaded >= 9, "{loaded} task files");
    }

    const MINIMAL: &str = "id: t\nname: T\ngoal: do it\nallowed_tools: [read_file]\nrecovery: {primary: read_file}\n";

    #[test]
    fn a_minimal_task_gets_the_documented_defaults() {
        let task = Task::parse(MINIMAL, false).unwrap();
        assert!(task.server.is_builtin());
        assert_eq!(task.invariants.max_tool_calls, 10);
        assert_eq!(task.deadline_ms, DEFAULT_DEADLINE_MS);
        assert_eq!(task.recovery.max_attempts, 3);
        assert_eq!(task.recovery.expected_outcome, RecoveryOutcome::Recovered);
        assert_eq!(task.recovery.allowed_strategies, vec![Strategy::Retry, Strategy::Fallback, Strategy::Abort]);
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let err = Task::parse(&format!("{MINIMAL}grader:\n  state_assertion: []\n"), false).unwrap_err();
        assert!(err.contains("state_assertion") && err.contains("line 7"), "{err}");
    }

    #[test]
    fn escaping_paths_and_bad_rules_are_refused() {
        let err = Task::parse(&format!("{MINIMAL}workspace: {{'../x': a}}\n"), false).unwrap_err();
        assert!(err.contains("../x"), "{err}");
        let err = Task::parse(
            &format!("{MINIMAL}faults: [{{name: r, match: {{tool: '['}}, fault: {{type: timeout}}}}]\n"),
            false,
        )
        .unwrap_err();
        assert!(err.contains("faults") && err.contains("rule \"r\""), "{err}");
        let err =
            Task::parse(&format!("{MINIMAL}faults: [{{name: m, fault: {{type: refusal}}}}]\n"), false).unwrap_err();
        assert!(err.contains("rule \"m\"") && err.contains("faultlab model"), "{err}");
    }

    #[test]
    fn only_the_built_in_server_asks_for_confirmation() {
        let task = Task::parse(&format!("{MINIMAL}server: {{confirm_destructive: true}}\n"), false).unwrap();
        assert!(task.server.confirm_destructive && task.server.is_builtin());
        let err =
            Task::parse(&format!("{MINIMAL}server: {{command: [x], confirm_destructive: true}}\n"), false).unwrap_err();
        assert!(err.contains("server.confirm_destructive"), "{err}");
    }

    #[test]
    fn auth_needs_the_http_transport_and_a_fault_it_knows() {
        let task = Task::parse(&format!("{MINIMAL}server: {{transport: http, auth: token_revoked}}\n"), false).unwrap();
        assert!(task.server.requires_auth());
        assert_eq!(task.categories(), [Category::Authorization]);
        let task = Task::parse(
            &format!("{MINIMAL}server: {{transport: http, auth: {{type: token_revoked, after: 2}}}}\n"),
            false,
        )
        .unwrap();
        let fault: Value = serde_json::from_str(&task.server.auth.and_then(|a| a.fault()).unwrap()).unwrap();
        assert_eq!(fault, serde_json::json!({"type": "token_revoked", "after": 2}));
        let task = Task::parse(&format!("{MINIMAL}server: {{transport: http, auth: true}}\n"), false).unwrap();
        assert!(task.server.requires_auth() && task.categories().is_empty());
        let err = Task::parse(&format!("{MINIMAL}server: {{auth: true}}\n"), false).unwrap_err();
        assert!(err.contains("server.auth") && err.contains("transport: http"), "{err}");
        let err =
            Task::parse(&format!("{MINIMAL}server: {{transport: http, auth: token_stolen}}\n"), false).unwrap_err();
        assert!(err.contains("server.auth") && err.contains("token_stolen"), "{err}");
        let err = Task::parse(&format!("{MINIMAL}server: {{transport: carrier-pigeon}}\n"), false).unwrap_err();
        assert!(err.contains("carrier-pigeon"), "{err}");
    }

    #[test]
    fn file_equals_takes_content_or_sha256_not_both() {
        let with = |fields: &str| {
            Task::parse(
                &format!("{MINIMAL}grader:\n  state_assertions: [{{type: file_equals, path: a{fields}}}]\n"),
                false,
            )
        };
        let task = with(", content: '{{nonce}}'").unwrap();
        assert_eq!(
            task.grader.state_assertions[0],
            StateAssertion::FileEquals { path: "a".into(), content: Some(NONCE.into()), sha256: None }
        );
        with(&format!(", sha256: {}", "ab".repeat(32))).unwrap();
        for (fields, expected) in [
            ("", "give content or sha256"),
            (", content: x, sha256: y", "give content or sha256"),
            (", sha256: abc", "is not 64 hex digits"),
        ] {
            let err = with(fields).unwrap_err();
            assert!(err.contains("file_equals a") && err.contains(expected), "{err}");
        }
    }

    #[test]
    fn every_form_of_the_enums_parses() {
        let yaml = format!(
            "{MINIMAL}server: {{command: [npx, server, '{{workspace}}']}}\ninvariants: {{no_file_deleted: true, max_tool_calls: 5, path_within: docs}}\nwitness: {{type: content_match, target: claim}}\ngrader:\n  state_assertions: [{{type: file_exists, path: a}}, {{type: file_contains, path: a, value: '{{{{nonce}}}}'}}, {{type: command_succeeded, command: ['true']}}]\n  policy_assertions: [{{type: no_forbidden_tool_called}}, {{type: max_tool_calls, value: 3}}]\n  integrity_assertions: [{{type: file_written_exactly_once, path: a}}]\n"
        );
        let task = Task::parse(&yaml, false).unwrap();
        assert_eq!(task.invariants.max_tool_calls, 5);
        assert_eq!(
            task.grader.state_assertions[1],
            StateAssertion::FileContains { path: "a".into(), value: NONCE.into() }
        );
    }
}
