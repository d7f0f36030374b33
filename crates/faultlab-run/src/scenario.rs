//! Scenario files: what to call, and what a robust client must then observe.
//!
//! The seed's single-call form (`call`, `timeoutMs`, `expect`, `observe`) is accepted as is; `steps` gives several
//! calls, each with repeats and richer expectations. Files are YAML or JSON (by extension), strict: unknown keys
//! are errors naming the file, the line and the key.

use faultlab_client::{Answers, ErrorKind, Outcome, RetryPolicy};
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
    pub expect: Expect,
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
    /// What the client did to recover the call (stream resumes, new sessions, a protocol retry): exactly.
    pub recovery: Option<RecoveryExpect>,
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
    pub progress: Option<ProgressSetting>,
}

impl Scenario {
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
                    progress: None,
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
                        progress: step.progress,
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
                progress: None,
            });
        }
        for step in &planned {
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
    fn forms_and_ranges_are_checked() {
        assert!(Scenario::parse("name: x\n", false).unwrap_err().contains("call"));
        let zero = "name: x\nsteps:\n- call: {tool: ping}\n  timeoutMs: 0\n  expect: {}\n";
        assert!(Scenario::parse(zero, false).unwrap_err().contains("timeoutMs"));
        let regex = "name: x\nsteps:\n- call: {tool: ping}\n  expect: {result: {textMatches: '('}}\n";
        assert!(Scenario::parse(regex, false).unwrap_err().contains("textMatches"));
    }
}
