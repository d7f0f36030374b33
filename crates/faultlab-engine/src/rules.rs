//! What a rules file says: which requests (`match`), how (`mode`), which catalogue fault, and on what `schedule` it
//! keeps firing. The proxy's rule set (`faultlab_proxy::rules`) runs them: counters, the seeded generator, windows
//! and the schedules' state.
//! The types live here, next to [`FaultKind`], so that whatever only reads rules (eval's task files) does not
//! need the proxy.

use crate::FaultKind;
use crate::catalogue::{BurstFailure, CascadingFailure, ServerOutage, within};
use faultlab_wire::nesting;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// A rules file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    /// Seeds every random choice (probabilities); written into the trajectory. Default 0.
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub name: String,
    /// Which requests the rule applies to; empty matches every request.
    #[serde(rename = "match", default)]
    pub matcher: Match,
    /// `after` (default): forward, let the upstream execute, then fault the reply. `instead`: do not forward;
    /// the proxy answers with the fault. `before`: the fault's delay or disconnect happens before forwarding.
    #[serde(default)]
    pub mode: Mode,
    pub fault: FaultKind,
    /// Once the rule fires, which further requests it takes down too (a burst, an outage, a cascade). The
    /// presets `burst_failure`, `server_outage` and `cascading_failure` are a 503 that brings its own schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
}

/// How a failing service fails: once a rule fires, the requests it takes down after that one. Written as
/// `{type: burst, count: 3}`, `{type: outage, duration_ms: 2000}` or `{type: cascade, spread: 4}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Schedule {
    /// This request and the next `count - 1` the rule matches (whatever its other conditions say).
    Burst(BurstFailure),
    /// Every request, whatever its tool and whatever rule it matches, for `duration_ms` from this one on, answered
    /// by the proxy (as `mode: instead`: the service is down). With `restart` the upstream really crashes.
    Outage(ServerOutage),
    /// This request and the next `spread` requests, whatever their tool, answered by the proxy.
    Cascade(CascadingFailure),
}

/// Most requests one burst fails in a row (and one cascade spreads to).
pub const MAX_BURST: u32 = 10_000;
/// Longest outage, in ms (10 minutes).
pub const MAX_OUTAGE_MS: u64 = 600_000;

impl Schedule {
    /// Checks the parameters; the message names the parameter and its allowed range.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::Burst(BurstFailure { count }) => within("count", *count, 1, MAX_BURST),
            Self::Outage(ServerOutage { duration_ms, .. }) => within("duration_ms", *duration_ms, 1, MAX_OUTAGE_MS),
            Self::Cascade(CascadingFailure { spread }) => within("spread", *spread, 0, MAX_BURST),
        }
    }

    /// Whether the upstream is crashed and restarted (an outage with `restart`).
    pub fn restarts(&self) -> bool {
        matches!(self, Self::Outage(ServerOutage { restart: true, .. }))
    }

    /// The preset that is a 503 on this schedule: its name on the wire (`data.fault`) and in records.
    pub fn preset(&self) -> &'static str {
        match self {
            Self::Burst(_) => "burst_failure",
            Self::Outage(_) => "server_outage",
            Self::Cascade(_) => "cascading_failure",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Instead,
    Before,
    #[default]
    After,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// The JSON-RPC method, exactly (e.g. `tools/call`, `resources/read`).
    #[serde(default)]
    pub method: Option<String>,
    /// The tool name of a `tools/call`, as a glob (`write_*`). With `method: resources/read` it matches the
    /// resource's URI, with `method: prompts/get` the prompt's name (what a drifted list removed, say).
    #[serde(default)]
    pub tool: Option<String>,
    /// A condition on the request's `params.arguments`.
    #[serde(default)]
    pub argument: Option<ArgumentMatch>,
    /// Only the n-th matching request (1-based).
    #[serde(default)]
    pub nth: Option<u64>,
    /// Only matching requests after the first N.
    #[serde(default)]
    pub after: Option<u64>,
    /// Only every K-th matching request.
    #[serde(default)]
    pub every: Option<u64>,
    /// Chance (0 to 1) that a matching request is faulted, drawn from the seeded generator.
    #[serde(default)]
    pub probability: Option<f64>,
    /// Only while the proxy has run at least `from_ms` and less than `until_ms`.
    #[serde(default)]
    pub window: Option<Window>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgumentMatch {
    /// A JSON pointer into `params.arguments`, e.g. `/path`.
    pub pointer: String,
    /// The value there must equal this.
    #[serde(default)]
    pub equals: Option<Value>,
    /// The value there must be a string matching this regex.
    #[serde(default)]
    pub regex: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Window {
    #[serde(default)]
    pub from_ms: u64,
    #[serde(default)]
    pub until_ms: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("cannot read rules file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("rules file {path} is invalid: {message}")]
    Invalid { path: String, message: String },
    #[error("--fault {spec:?} is invalid: {message}")]
    BadSpec { spec: String, message: String },
    /// A valid rule this proxy's topology cannot carry out.
    #[error("{0}")]
    Unsupported(String),
}

impl RulesFile {
    pub fn load(path: &Path) -> Result<Self, RulesError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RulesError::Read { path: shown.clone(), source })?;
        let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let syntax = if is_json { nesting::Syntax::Json } else { nesting::Syntax::Yaml };
        nesting::check(&text, syntax)
            .map_err(|e| RulesError::Invalid { path: shown.clone(), message: e.to_string() })?;
        let file: Self = if is_json {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        } else {
            yaml_serde::from_str(&text).map_err(|e| e.to_string())
        }
        .map_err(|message| RulesError::Invalid { path: shown.clone(), message })?;
        for rule in &file.rules {
            rule.check().map_err(|message| RulesError::Invalid { path: shown.clone(), message })?;
        }
        Ok(file)
    }

    /// A one-line rule from `--fault`, written as a YAML flow mapping of a rule without its name, e.g.
    /// `{match: {tool: echo}, fault: {type: latency, delay_ms: 200}}`.
    pub fn parse_spec(spec: &str, index: usize) -> Result<Rule, RulesError> {
        let bad = |message: String| RulesError::BadSpec { spec: spec.into(), message };
        nesting::check(spec, nesting::Syntax::Yaml).map_err(|e| bad(e.to_string()))?;
        let mut value: Value = yaml_serde::from_str(spec).map_err(|e| bad(e.to_string()))?;
        if let Some(map) = value.as_object_mut() {
            map.entry("name").or_insert_with(|| Value::from(format!("cli-{index}")));
        }
        let rule: Rule = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        rule.check().map_err(bad)?;
        Ok(rule)
    }
}

impl Rule {
    /// The rule's schedule: its own, or the one its fault brings (`burst_failure`, ...).
    pub fn schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref().or_else(|| self.fault.schedule())
    }

    /// Checks what serde cannot: globs, regexes, pointers and numeric ranges.
    pub fn check(&self) -> Result<(), String> {
        let at = |m: String| format!("rule {:?}: {m}", self.name);
        self.fault.validate().map_err(|m| at(format!("fault: {m}")))?;
        if let Some(schedule) = &self.schedule {
            schedule.validate().map_err(|m| at(format!("schedule: {m}")))?;
            if self.fault.schedule().is_some() {
                return Err(at(format!("fault {} brings its own schedule; drop `schedule`", self.fault.name())));
            }
        }
        let m = &self.matcher;
        if let Some(p) = m.probability
            && !(0.0..=1.0).contains(&p)
        {
            return Err(at("match.probability must be between 0 and 1".into()));
        }
        if m.nth == Some(0) || m.every == Some(0) {
            return Err(at("match.nth and match.every count from 1".into()));
        }
        if let Some(tool) = &m.tool {
            glob::Pattern::new(tool).map_err(|e| at(format!("match.tool is not a valid glob: {e}")))?;
        }
        if let Some(arg) = &m.argument {
            if let Some(re) = &arg.regex {
                regex::Regex::new(re).map_err(|e| at(format!("match.argument.regex is invalid: {e}")))?;
            }
            if !arg.pointer.is_empty() && !arg.pointer.starts_with('/') {
                return Err(at("match.argument.pointer must be a JSON pointer starting with '/'".into()));
            }
        }
        if self.mode == Mode::Before && !matches!(self.fault, FaultKind::Latency(_) | FaultKind::Disconnect(_)) {
            return Err(at("mode before applies to latency and disconnect only".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(path: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
    }

    /// The YAML blocks of a Markdown file that hold a rules file.
    fn rules_blocks(markdown: &str) -> Vec<String> {
        markdown
            .split("```yaml\n")
            .skip(1)
            .filter_map(|rest| rest.split_once("```").map(|(block, _)| block.to_owned()))
            .filter(|block| block.contains("rules:"))
            .collect()
    }

    #[test]
    fn the_rules_the_docs_show_load_unchanged() {
        let readme = std::fs::read_to_string(repo("docs/reference.md")).unwrap();
        let blocks = rules_blocks(&readme);
        assert!(!blocks.is_empty(), "docs/reference.md shows a rules file");
        for block in blocks {
            let file: RulesFile = yaml_serde::from_str(&block).unwrap_or_else(|e| panic!("{e}\n{block}"));
            for rule in &file.rules {
                rule.check().unwrap();
            }
        }
        RulesFile::parse_spec("{match: {tool: echo}, fault: {type: duplicate}}", 0).unwrap();
    }

    #[test]
    fn every_spelling_users_write_today_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.yaml");
        let spellings = [
            "{type: auth_expired}",
            "{type: forbidden}",
            "{type: delayed, delay_ms: 5}",
            "{type: malformed_response, variant: result-with-error}",
            "{type: burst_failure, count: 3}",
            "{type: server_outage, duration_ms: 2000, restart: true}",
            "{type: cascading_failure, spread: 4}",
            "{type: missing_field}",
        ];
        let rules: String =
            spellings.iter().enumerate().map(|(i, fault)| format!("  - name: r{i}\n    fault: {fault}\n")).collect();
        std::fs::write(&path, format!("seed: 1\nrules:\n{rules}")).unwrap();
        let file = RulesFile::load(&path).unwrap();
        let names: Vec<&str> = file.rules.iter().map(|r| r.fault.name()).collect();
        assert_eq!(
            names,
            [
                "http_status",
                "http_status",
                "latency",
                "malformed",
                "burst_failure",
                "server_outage",
                "cascading_failure",
                "missing_field"
            ]
        );
    }
}
