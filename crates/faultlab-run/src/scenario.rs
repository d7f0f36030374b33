//! Scenario files: what to call, and what a robust client must then observe.
//!
//! The seed's single-call form (`call`, `timeoutMs`, `expect`, `observe`) is accepted as is; `steps` gives several
//! calls, each with repeats and richer expectations. Files are YAML or JSON (by extension), strict: unknown keys
//! are errors naming the file, the line and the key.

use faultlab_auth::AuthFault;
use faultlab_client::{Answers, AuthOptions, ErrorKind, Outcome, RetryPolicy};
use faultlab_wire::config;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Default deadline of a call, in ms.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Longest deadline of a call, in ms (the reference client's hard cap).
pub const MAX_TIMEOUT_MS: u64 = 120_000;
/// Most repeats of one step.
pub const MAX_REPEAT: u32 = 1000;

/// A scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// `2026-07-28` or `2025-11-25`; without it the run's default era applies (`--protocol-version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<ProtocolVersion>,
    /// The transports the scenario applies to (a fault that only exists on one); empty means all. On another
    /// transport the scenario is reported as skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transports: Vec<TransportName>,
    /// The single call of the seed's form (use `steps` for several).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Call>,
    /// Deadline of `call` (and default for steps), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Expectations on `call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// Retry `call` under the reference client's policy (only explicit tool errors are retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// A second call on the same connection after the first, with its own expectations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<Observe>,
    /// Calls in order on one connection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// How the reference client answers a server that asks back during a call (`elicitation`, `sampling`,
    /// `roots`: `accept`, `decline` or `never`); a feature left out is not declared, and asking for it is answered
    /// `Method not found`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Answers>,
    /// OAuth: the reference client runs its auth mode (discovery, registration, code + PKCE, refresh, step-up),
    /// and against the built-in server `faultlab run` serves this scenario from a server of its own behind the
    /// lab's authorization server (as `faultlab serve --transport http --auth --auth-fault …`). HTTP only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<ScenarioAuth>,
    /// Keep the tool list as a client does: list before the first call (at most `pageLimit` pages), again after
    /// `notifications/tools/list_changed`; steps may then check `expect.surface`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_surface: Option<crate::surface::SurfaceOptions>,
}

/// A scenario's `auth`: the authorization server's fault and the reference client's bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScenarioAuth {
    /// The auth fault the built-in server plays (`{type: token_expired, after: 2}`; `faultlab faults` lists them
    /// under "auth faults"); none: a healthy authorization server. Against an external target a scenario with a
    /// fault is skipped (only the built-in server can play it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<AuthFault>,
    /// Lifetime of the built-in server's access tokens, in seconds (1 to 86,400; default 3,600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ttl_s: Option<u64>,
    /// Step-ups the client makes per connection (0 to 10; default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_step_ups: Option<u32>,
    /// Re-authorizations after `invalid_grant` per connection (0 to 10; default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_reauthorizations: Option<u32>,
    /// Refresh grants tried for one expired token while the authorization server fails transiently (1 to 10;
    /// default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_attempts: Option<u32>,
    /// How long one refresh grant may take before the client gives up on it and keeps its tokens, in ms (1 to
    /// 120,000; default 10,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_timeout_ms: Option<u64>,
}

impl ScenarioAuth {
    /// The reference client's bounds.
    pub fn client_options(&self) -> AuthOptions {
        let default = AuthOptions::default();
        AuthOptions {
            max_step_ups: self.max_step_ups.unwrap_or(default.max_step_ups),
            max_reauthorizations: self.max_reauthorizations.unwrap_or(default.max_reauthorizations),
            refresh_attempts: self.refresh_attempts.unwrap_or(default.refresh_attempts),
            refresh_deadline: self
                .refresh_timeout_ms
                .map_or(default.refresh_deadline, std::time::Duration::from_millis),
            ..default
        }
    }

    fn check(&self) -> Result<(), String> {
        let range = |key: &str, value: Option<u64>, low: u64, high: u64| match value {
            Some(v) if !(low..=high).contains(&v) => {
                Err(format!("auth.{key} must be between {low} and {high}, not {v}"))
            }
            _ => Ok(()),
        };
        range("tokenTtlS", self.token_ttl_s, 1, 86_400)?;
        range("maxStepUps", self.max_step_ups.map(u64::from), 0, 10)?;
        range("maxReauthorizations", self.max_reauthorizations.map(u64::from), 0, 10)?;
        range("refreshAttempts", self.refresh_attempts.map(u64::from), 1, 10)?;
        range("refreshTimeoutMs", self.refresh_timeout_ms, 1, MAX_TIMEOUT_MS)?;
        if let Some(fault) = &self.fault {
            // The fault's limits, checked as `--auth-fault` checks them.
            let json = serde_json::to_string(fault).map_err(|e| e.to_string())?;
            AuthFault::parse(&json)
                .map_err(|e| format!("auth.fault: {}", e.to_string().trim_start_matches("--auth-fault: ")))?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ProtocolVersion {
    #[serde(rename = "2026-07-28")]
    Modern,
    #[serde(rename = "2025-11-25")]
    Legacy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TransportName {
    Stdio,
    Http,
}

impl TransportName {
    /// As a scenario file spells it.
    pub fn name(self) -> &'static str {
        match self {
            TransportName::Stdio => "stdio",
            TransportName::Http => "http",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Call {
    pub tool: String,
    #[serde(default)]
    pub args: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observe {
    pub call: Call,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    pub expect: Expect,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// A label for reports (default: `step N: <tool>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub call: Call,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Run the call this many times in a row (each checked against `expect`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Retry the call under the reference client's policy (only explicit tool errors are retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// Ask for progress (`_meta.progressToken`); with `resetTimeout`, each progress notification restarts the
    /// call's `timeoutMs`, up to `maxMs` in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<ProgressSetting>,
    /// Make a task-augmented call: the client declares the tasks extension (`io.modelcontextprotocol/tasks`) and
    /// follows a task handle to its end within `timeoutMs` (docs/tasks.md); `expect.task` checks what it saw. The
    /// tool's listed `execution.taskSupport` overrules it: `required` makes every call a task, `forbidden` none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSetting>,
    pub expect: Expect,
}

/// A step's task-augmented call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskSetting {
    /// The ttl the client asks for, in ms (1 to 600000), sent as `params.task.ttl`; the client also gives up on
    /// the task at this age (or at the server's `ttlMs`, or at `timeoutMs`, whichever is first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
}

/// Longest `task.ttlMs` a step asks for (10 min, the built-in server's own ceiling), in ms.
pub const MAX_TASK_TTL_MS: u64 = 600_000;

impl TaskSetting {
    /// The client's options for this setting.
    pub fn options(&self) -> faultlab_client::TaskOptions {
        faultlab_client::TaskOptions { asked: true, ttl: self.ttl_ms.map(std::time::Duration::from_millis) }
    }
}

/// Expectations on what the client saw of a task (needs the step's `task`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskExpect {
    /// The status the client kept: `working` (it gave up), `completed`, `failed` or `cancelled`.
    pub status: Option<String>,
    /// `tasks/get` requests: at least this many.
    pub min_polls: Option<u32>,
    /// `tasks/get` requests: at most this many (a client that honours a floor stays under it at pollIntervalMs 0).
    pub max_polls: Option<u32>,
    /// Times a `working` came after a terminal status: exactly.
    pub reverts: Option<u32>,
    /// Whether the client sent `tasks/cancel` (it does when it gives up).
    pub cancelled: Option<bool>,
    /// Whether `tasks/result` answered before the deadline.
    pub result_answered: Option<bool>,
    /// Why the client gave up before a terminal status: `deadline` or `ttl`.
    pub gave_up: Option<String>,
}

/// How the reference client treats progress for a step's call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProgressSetting {
    /// Each progress notification for the call restarts its timeout (`timeoutMs` from the last one).
    #[serde(default)]
    pub reset_timeout: bool,
    /// The hard maximum of a call whose timeout progress restarts, in ms from its send (required with
    /// `resetTimeout`; at least `timeoutMs`, at most 120000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<u64>,
}

impl ProgressSetting {
    /// The client's mode for this setting.
    pub fn mode(setting: Option<&Self>) -> faultlab_client::Progress {
        match setting {
            None => faultlab_client::Progress::Off,
            Some(Self { reset_timeout: true, max_ms: Some(ms) }) => {
                faultlab_client::Progress::ResetUntil(std::time::Duration::from_millis(*ms))
            }
            Some(_) => faultlab_client::Progress::Token,
        }
    }
}

/// What must hold after a call. Every field is optional; all given ones must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    pub outcome: Option<Outcome>,
    pub error_kind: Option<ErrorKind>,
    pub max_duration_ms: Option<f64>,
    pub min_duration_ms: Option<f64>,
    pub result: Option<ResultExpect>,
    /// The JSON-RPC error code of a protocol error.
    pub error_code: Option<i64>,
    /// The HTTP status that answered the call.
    pub http_status: Option<u16>,
    /// How many responses carried the call's id (2 for a duplicate).
    pub responses: Option<u32>,
    /// Notifications received during the call, by method: at least this many of each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notifications: BTreeMap<String, u32>,
    /// Anomalies the call added, by name (`duplicateResponses`, `lateResponses`, `unparsableFrames`, ...): exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub anomalies: BTreeMap<String, u32>,
    /// The connection's state after the call.
    pub connection: Option<ConnectionState>,
    /// How many attempts the retry policy made.
    pub attempts: Option<u32>,
    /// What the client's auth mode did during the call (since the previous call; the first call includes
    /// connecting). Needs the scenario's `auth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthExpect>,
    /// What the tool list said about the call (needs `toolSurface`).
    pub surface: Option<crate::surface::SurfaceExpect>,
    /// What the client did to recover the call (stream resumes, new sessions, a protocol retry): exactly.
    pub recovery: Option<RecoveryExpect>,
    /// What the client saw of the call's task (needs the step's `task`).
    pub task: Option<TaskExpect>,
    /// How many times the client retried the call with `inputResponses` after `resultType: "input_required"`
    /// (2026-07-28 multi-round-trip requests; the client stops at 8): exactly.
    pub input_rounds: Option<u32>,
}

/// Expectations on a call's recovery (see the reference client's `recovery` in the report). Every count is exact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecoveryExpect {
    /// Resuming `GET`s of the call's response stream.
    pub reconnects: Option<u32>,
    /// A regular expression every `Last-Event-ID` the client sent must match.
    pub last_event_ids_match: Option<String>,
    /// Replayed events whose id the stream had already delivered.
    pub duplicate_events: Option<u32>,
    /// 1 when the call's response never arrived.
    pub lost_responses: Option<u32>,
    /// New sessions opened after a 404 for the session.
    pub reinitializations: Option<u32>,
    /// `initialize` attempts after a 404 that the server refused.
    pub failed_reinitializations: Option<u32>,
    /// The protocol version the call was retried with after `-32022`.
    pub protocol_retry: Option<String>,
}

/// Expectations on the auth events of a call: counts are exact, `maxTokenRequests` is the loop bound.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthExpect {
    /// First authorizations of the connection (discovery, registration, code + PKCE).
    pub authorizations: Option<u32>,
    /// Refresh grants that gave a new access token.
    pub refreshes: Option<u32>,
    /// Refresh grants that failed transiently (429, 5xx, too slow) with the tokens kept.
    pub refresh_deferrals: Option<u32>,
    /// Refresh grants refused for good (`invalid_grant`), the tokens dropped.
    pub refresh_refusals: Option<u32>,
    /// Authorizations for more scope after `403 insufficient_scope`.
    pub step_ups: Option<u32>,
    /// Authorizations after the tokens were dropped.
    pub reauthorizations: Option<u32>,
    /// Auth rounds that ended without a usable token (the refusal passed on to the call).
    pub failures: Option<u32>,
    /// Requests to the token endpoint: at most this many.
    pub max_token_requests: Option<u32>,
    /// A case-sensitive substring of some failure's detail.
    pub failure_contains: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResultExpect {
    pub is_error: Option<bool>,
    /// A case-sensitive substring of the result's text.
    pub text_contains: Option<String>,
    /// A regular expression the result's text must match.
    pub text_matches: Option<String>,
    /// JSON pointer (into the result) → the value it must equal.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pointer: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionState {
    Alive,
    Dead,
}

/// A scenario file that cannot be read or is invalid.
pub type LoadError = config::FileError;

/// One call to make, with everything resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedStep {
    pub label: String,
    pub call: Call,
    pub timeout_ms: u64,
    pub repeat: u32,
    pub expect: Expect,
    /// The seed's observer call (reported as such).
    pub observer: bool,
    pub retry: Option<RetryPolicy>,
    /// The scenario's `toolSurface`.
    pub surface: Option<crate::surface::SurfaceOptions>,
    pub progress: Option<ProgressSetting>,
    pub task: Option<TaskSetting>,
}

impl Scenario {
    /// Whether a step makes task-augmented calls (the client then declares the tasks extension).
    pub fn uses_tasks(&self) -> bool {
        self.steps.iter().any(|step| step.task.is_some())
    }

    /// Reads and checks a scenario file (`.json` is JSON; anything else is YAML).
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        config::load(path, "scenario file", Self::parse)
    }

    pub fn parse(text: &str, is_json: bool) -> Result<Self, String> {
        let scenario: Self = config::parse(text, is_json)?;
        scenario.plan()?;
        Ok(scenario)
    }

    /// The calls in order, checked: one form or the other, deadlines and repeats in range, regexes valid.
    pub fn plan(&self) -> Result<Vec<PlannedStep>, String> {
        if self.name.trim().is_empty() {
            return Err("name must not be empty".into());
        }
        let default_timeout = self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        let mut planned = Vec::new();
        match (&self.call, self.steps.is_empty()) {
            (Some(call), true) => {
                let expect = self.expect.clone().ok_or("expect is required with call")?;
                planned.push(PlannedStep {
                    label: self.name.clone(),
                    call: call.clone(),
                    timeout_ms: default_timeout,
                    repeat: 1,
                    expect,
                    observer: false,
                    retry: self.retry,
                    surface: self.tool_surface,
                    progress: None,
                    task: None,
                });
            }
            (None, false) => {
                if self.expect.is_some() {
                    return Err("expect belongs to call; with steps, give each step its own expect".into());
                }
                for (i, step) in self.steps.iter().enumerate() {
                    planned.push(PlannedStep {
                        label: step.name.clone().unwrap_or_else(|| format!("step {}: {}", i + 1, step.call.tool)),
                        call: step.call.clone(),
                        timeout_ms: step.timeout_ms.unwrap_or(default_timeout),
                        repeat: step.repeat.unwrap_or(1),
                        expect: step.expect.clone(),
                        observer: false,
                        retry: step.retry,
                        surface: self.tool_surface,
                        progress: step.progress,
                        task: step.task,
                    });
                }
            }
            (Some(_), false) => return Err("give either call (with expect) or steps, not both".into()),
            (None, true) => return Err("a scenario needs call (with expect) or steps".into()),
        }
        if let Some(observe) = &self.observe {
            planned.push(PlannedStep {
                label: format!("{} (observer)", self.name),
                call: observe.call.clone(),
                timeout_ms: observe.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
                repeat: 1,
                expect: observe.expect.clone(),
                observer: true,
                retry: None,
                surface: self.tool_surface,
                progress: None,
                task: None,
            });
        }
        if let Some(auth) = &self.auth {
            auth.check()?;
        }
        if let Some(options) = &self.tool_surface {
            options.validate()?;
        }
        for step in &planned {
            if step.expect.auth.is_some() && self.auth.is_none() {
                return Err(format!("{}: expect.auth needs the scenario's auth (the client's auth mode)", step.label));
            }
            if step.expect.task.is_some() && step.task.is_none() {
                return Err(format!("{}: expect.task needs the step's task", step.label));
            }
            if let Some(ttl) = step.task.and_then(|t| t.ttl_ms)
                && !(1..=MAX_TASK_TTL_MS).contains(&ttl)
            {
                return Err(format!("{}: task.ttlMs must be between 1 and {MAX_TASK_TTL_MS}", step.label));
            }
            if step.task.is_some() && step.retry.is_some() {
                return Err(format!("{}: task and retry cannot be combined (a task is not re-sent)", step.label));
            }
            if step.expect.surface.is_some() && self.tool_surface.is_none() {
                return Err(format!("{}: expect.surface needs toolSurface in the scenario", step.label));
            }
            if let (Some(expect), Some(options)) = (&step.expect.surface, &self.tool_surface) {
                let kept = options.lists();
                let wanted = [("resources", expect.resources.is_some()), ("prompts", expect.prompts.is_some())];
                if let Some((list, _)) =
                    wanted.iter().find(|(list, want)| *want && !kept.iter().any(|k| k.key() == *list))
                {
                    return Err(format!("{}: expect.surface.{list} needs toolSurface.{list}: true", step.label));
                }
            }
            if step.timeout_ms == 0 || step.timeout_ms > MAX_TIMEOUT_MS {
                return Err(format!("{}: timeoutMs must be between 1 and {MAX_TIMEOUT_MS}", step.label));
            }
            if let Some(progress) = &step.progress {
                match (progress.reset_timeout, progress.max_ms) {
                    (true, Some(max)) if max < step.timeout_ms || max > MAX_TIMEOUT_MS => {
                        return Err(format!(
                            "{}: progress.maxMs must be between timeoutMs and {MAX_TIMEOUT_MS}",
                            step.label
                        ));
                    }
                    (true, None) => return Err(format!("{}: progress.resetTimeout needs progress.maxMs", step.label)),
                    (false, Some(_)) => {
                        return Err(format!("{}: progress.maxMs applies only with resetTimeout: true", step.label));
                    }
                    _ => {}
                }
            }
            if let Some(retry) = &step.retry {
                retry.validate().map_err(|e| format!("{}: retry: {e}", step.label))?;
            }
            if step.repeat == 0 || step.repeat > MAX_REPEAT {
                return Err(format!("{}: repeat must be between 1 and {MAX_REPEAT}", step.label));
            }
            if let Some(pattern) = step.expect.result.as_ref().and_then(|r| r.text_matches.as_deref()) {
                regex::Regex::new(pattern)
                    .map_err(|e| format!("{}: textMatches is not a valid regex: {e}", step.label))?;
            }
            if let Some(pattern) = step.expect.recovery.as_ref().and_then(|r| r.last_event_ids_match.as_deref()) {
                regex::Regex::new(pattern)
                    .map_err(|e| format!("{}: lastEventIdsMatch is not a valid regex: {e}", step.label))?;
            }
            for name in step.expect.anomalies.keys() {
                if !crate::expect::ANOMALY_NAMES.contains(&name.as_str()) {
                    return Err(format!(
                        "{}: unknown anomaly {name:?}; expected one of {}",
                        step.label,
                        crate::expect::ANOMALY_NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(planned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_form_loads() {
        let s = Scenario::parse(
            r#"{"name":"d","call":{"tool":"delay","args":{"delayMs":250}},"timeoutMs":1000,
                "expect":{"outcome":"success","maxDurationMs":500},
                "observe":{"call":{"tool":"ping","args":{}},"expect":{"outcome":"success"}}}"#,
            true,
        )
        .unwrap();
        let plan = s.plan().unwrap();
        assert_eq!(plan.len(), 2);
        assert!(plan[1].observer);
        assert_eq!(plan[0].timeout_ms, 1000);
    }

    #[test]
    fn unknown_keys_are_named_with_their_line() {
        let err = Scenario::parse("name: x\ncall: {tool: ping}\nexpect:\n  outcome: success\n  colour: red\n", false)
            .unwrap_err();
        assert!(err.contains("colour") && err.contains("line 5"), "{err}");
    }

    #[test]
    fn auth_is_checked_where_it_is_written() {
        let ok = "name: x\nauth: {fault: {type: token_expired, after: 2}, refreshTimeoutMs: 500}\nsteps:\n\
                  - call: {tool: ping}\n  expect: {auth: {refreshes: 1, maxTokenRequests: 1}}\n";
        let scenario = Scenario::parse(ok, false).unwrap();
        let options = scenario.auth.unwrap().client_options();
        assert_eq!(options.refresh_deadline, std::time::Duration::from_millis(500));
        let no_auth = "name: x\nsteps:\n- call: {tool: ping}\n  expect: {auth: {refreshes: 1}}\n";
        assert!(Scenario::parse(no_auth, false).unwrap_err().contains("expect.auth needs the scenario's auth"));
        let range = "name: x\nauth: {fault: {type: token_expired, after: 0}}\ncall: {tool: ping}\nexpect: {}\n";
        let e = Scenario::parse(range, false).unwrap_err();
        assert!(e.contains("auth.fault: token_expired.after") && !e.contains("--auth-fault"), "{e}");
        let unknown = "name: x\nauth: {fault: {type: token_gone}}\ncall: {tool: ping}\nexpect: {}\n";
        assert!(Scenario::parse(unknown, false).unwrap_err().contains("token_gone"));
        let bound = "name: x\nauth: {maxStepUps: 11}\ncall: {tool: ping}\nexpect: {}\n";
        assert!(Scenario::parse(bound, false).unwrap_err().contains("auth.maxStepUps"));
    }

    #[test]
    fn task_steps_are_checked_and_declare_the_extension() {
        let ok = "name: x\nsteps:\n- call: {tool: task_work}\n  task: {ttlMs: 500}\n  expect: {task: {status: completed, maxPolls: 5}}\n";
        let scenario = Scenario::parse(ok, false).unwrap();
        assert!(scenario.uses_tasks());
        let plan = scenario.plan().unwrap();
        assert_eq!(plan[0].task.unwrap().options().ttl, Some(std::time::Duration::from_millis(500)));
        let bare = "name: x\nsteps:\n- call: {tool: task_work}\n  expect: {task: {status: completed}}\n";
        assert!(Scenario::parse(bare, false).unwrap_err().contains("expect.task needs the step's task"));
        let ttl = "name: x\nsteps:\n- call: {tool: task_work}\n  task: {ttlMs: 0}\n  expect: {}\n";
        assert!(Scenario::parse(ttl, false).unwrap_err().contains("task.ttlMs"));
        let unknown = "name: x\nsteps:\n- call: {tool: task_work}\n  task: {pollMs: 5}\n  expect: {}\n";
        assert!(Scenario::parse(unknown, false).unwrap_err().contains("pollMs"));
        assert!(!Scenario::parse("name: x\ncall: {tool: ping}\nexpect: {}\n", false).unwrap().uses_tasks());
    }

    #[test]
    fn forms_and_ranges_are_checked() {
        assert!(Scenario::parse("name: x\n", false).unwrap_err().contains("call"));
        let zero = "name: x\nsteps:\n- call: {tool: ping}\n  timeoutMs: 0\n  expect: {}\n";
        assert!(Scenario::parse(zero, false).unwrap_err().contains("timeoutMs"));
        let regex = "name: x\nsteps:\n- call: {tool: ping}\n  expect: {result: {textMatches: '('}}\n";
        assert!(Scenario::parse(regex, false).unwrap_err().contains("textMatches"));
    }
}
