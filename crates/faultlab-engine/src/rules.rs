//! What a rules file says: which requests (`match`), how (`mode`), which catalogue fault, and on what `schedule` it
//! keeps firing. The proxy's rule set (`faultlab_proxy::rules`) runs them: counters, the seeded generator, windows
//! and the schedules' state.
//! The types live here, next to [`FaultKind`], so that whatever only reads rules (eval's task files) does not
//! need the proxy. So does [`Matcher`], a rule's conditions on one request (method, tool, argument) and its count
//! (`nth`, `after`, `every`): the proxy's rules and `--auth`'s `auth.match` meet requests the same way.
//!
//! A rules file may also hold the run's auth fault ([`AuthRule`], its `auth` key), for `faultlab proxy --listen …
//! --auth`: the object `--auth-fault` takes, aimed at requests by an `auth.match` when it acts at one.

use crate::FaultKind;
use crate::catalogue::auth::AuthFault;
use crate::catalogue::{BurstFailure, CascadingFailure, ServerOutage, within};
use faultlab_wire::{Frame, nesting};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::borrow::Cow;
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
    /// The run's auth fault, for `faultlab proxy --listen … --auth` (in place of `--auth-fault`; see docs/auth.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthRule>,
}

/// A rules file's `auth`: the auth fault `--auth-fault` would take, and, for the faults that act at a request to the
/// MCP endpoint (`token_expired`, `token_revoked`, `insufficient_scope`), the requests it acts at.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthRule {
    /// The auth fault, as `--auth-fault` takes it: `{type: token_expired}`, `{type: refresh_slow, delay_ms: 3000}`.
    pub fault: AuthFault,
    /// The requests the fault acts at, instead of its own `after`: the token that presented a matching request is
    /// expired or revoked there and then, or the request needs the fault's scope.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<AuthMatch>,
}

/// An `auth.match`: a rule's `match` without `probability` and `window` (an auth fault's requests are counted,
/// so that a run aims it at the same call every time).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthMatch {
    /// The JSON-RPC method, exactly (e.g. `tools/call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The tool name of a `tools/call`, as a glob (`write_*`); with `method: resources/read` the resource's URI,
    /// with `method: prompts/get` the prompt's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A condition on the request's `params.arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<ArgumentMatch>,
    /// Only the n-th matching request (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,
    /// Only matching requests after the first N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// Only every K-th matching request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u64>,
}

impl From<AuthMatch> for Match {
    fn from(m: AuthMatch) -> Self {
        let AuthMatch { method, tool, argument, nth, after, every } = m;
        Match { method, tool, argument, nth, after, every, probability: None, window: None, at: None }
    }
}

/// The faults an `auth.match` can aim (the others act at the authorization server, not at a request).
const AT_REQUEST: [&str; 3] = ["token_expired", "token_revoked", "insufficient_scope"];

/// Why an `auth.match` key is not taken: the key, and the reason.
const NOT_IN_AUTH_MATCH: [(&str, &str); 2] = [
    ("probability", "an auth fault's requests are counted, not drawn; use nth, after or every"),
    ("window", "an auth fault's requests are counted, not timed; use nth, after or every"),
];

impl<'de> Deserialize<'de> for AuthRule {
    /// Read through the raw object first, so that a key whose presence matters is named: `auth.fault.after` (the
    /// fault's own count, which `match` replaces) and the keys of a rule's `match` an `auth.match` does not take.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            fault: Value,
            #[serde(rename = "match", default)]
            matcher: Option<Value>,
        }
        let raw = Raw::deserialize(deserializer)?;
        if let Some(Value::Object(m)) = &raw.matcher
            && let Some((key, why)) = NOT_IN_AUTH_MATCH.iter().find(|(key, _)| m.contains_key(*key))
        {
            return Err(D::Error::custom(format!("auth.match.{key} is not taken: {why}")));
        }
        let matcher = raw
            .matcher
            .map(AuthMatch::deserialize)
            .transpose()
            .map_err(|e| D::Error::custom(format!("auth.match: {e}")))?;
        let fault =
            AuthFault::deserialize(raw.fault.clone()).map_err(|e| D::Error::custom(format!("auth.fault: {e}")))?;
        if matcher.is_some() {
            if let Some(where_) = fault.acts_elsewhere() {
                return Err(D::Error::custom(format!(
                    "auth.match: {} acts {where_}, not at a request to the MCP endpoint, so it cannot be matched to \
                     one; only {} take a match (drop `match`)",
                    fault.name(),
                    AT_REQUEST.join(", ")
                )));
            }
            if raw.fault.get("after").is_some() {
                return Err(D::Error::custom(format!(
                    "auth.fault.after: with `match`, {} acts at the matching requests; count them with match.nth, \
                     match.after or match.every (drop fault.after)",
                    fault.name()
                )));
            }
        }
        Ok(Self { fault, matcher })
    }
}

impl JsonSchema for AuthRule {
    fn schema_name() -> Cow<'static, str> {
        "AuthRule".into()
    }

    /// Written by hand for what derive cannot say: a `match` only with the three faults that act at a request,
    /// and then without their own `after`.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let fault = generator.subschema_for::<AuthFault>();
        let matcher = generator.subschema_for::<AuthMatch>();
        json_schema!({
            "description": "The run's auth fault (`faultlab proxy --listen … --auth`): the object `--auth-fault` \
                takes, and for token_expired, token_revoked and insufficient_scope the requests it acts at.",
            "type": "object",
            "properties": {
                "fault": fault,
                "match": matcher,
            },
            "required": ["fault"],
            "additionalProperties": false,
            "if": {"required": ["match"]},
            "then": {
                "properties": {
                    "fault": {
                        "properties": {"type": {"enum": AT_REQUEST}},
                        "not": {"required": ["after"]},
                    },
                },
            },
        })
    }
}

impl AuthRule {
    /// Checks what serde cannot: the fault's limits, and the match's globs, regexes, pointers and counts.
    pub fn check(&self) -> Result<(), String> {
        self.fault.validate().map_err(|m| format!("auth.fault: {m}"))?;
        if let Some(m) = &self.matcher {
            check_match(&Match::from(m.clone()), "auth.match")?;
        }
        Ok(())
    }
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
    /// When the fault acts (absent: on the matched request's own answer). `resume`: not on the request's POST but
    /// at the first resume (a `GET` with `Last-Event-ID`) of the response stream it opened, which another rule's
    /// stream fault must cut (`stream_cut`, …); without one the rule never fires. Only faults a `GET`'s answer can
    /// carry: `http_status` (and its presets `auth_expired`, `forbidden`), `disconnect`, `latency`, `timeout` and
    /// `session_expired_in_flight` (the session lost at the resume). HTTP front only (over stdio nothing resumes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<At>,
}

/// When a rule's fault acts, other than on its request's own answer (`match.at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// At the first resume of the response stream the matched request opened (the proxy's HTTP front).
    Resume,
}

/// The faults a rule with `match.at: resume` takes: what the answer to a resuming `GET` can be.
pub const AT_RESUME: [&str; 5] = ["http_status", "disconnect", "latency", "timeout", "session_expired_in_flight"];

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
        if let Some(auth) = &file.auth {
            auth.check().map_err(|message| RulesError::Invalid { path: shown.clone(), message })?;
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
        check_match(&self.matcher, "match").map_err(at)?;
        if self.matcher.at == Some(At::Resume) {
            self.check_at_resume().map_err(at)?;
        }
        if self.mode == Mode::Before && !matches!(self.fault, FaultKind::Latency(_) | FaultKind::Disconnect(_)) {
            return Err(at("mode before applies to latency and disconnect only".into()));
        }
        Ok(())
    }
}

impl Rule {
    /// What a rule acting at a resume cannot say: a fault no answer to a `GET` carries, a mode (the request itself
    /// is forwarded untouched), a schedule (a resume is answered once, not counted among requests).
    fn check_at_resume(&self) -> Result<(), String> {
        let name = self.fault.name();
        // A schedule preset (`burst_failure`, …) is an `http_status` by type but keeps its own name: refused too.
        if !AT_RESUME.contains(&name) {
            return Err(format!(
                "fault: {name} cannot act at a resume (match.at: resume); a resuming GET's answer can only be {}",
                AT_RESUME.join(", ")
            ));
        }
        if self.mode != Mode::After {
            return Err(
                "mode: a rule with match.at: resume leaves its request alone and acts on the resume; drop mode".into(),
            );
        }
        if self.schedule.is_some() {
            return Err(
                "schedule: a resume is answered once, it starts no schedule; drop schedule with match.at".into()
            );
        }
        Ok(())
    }
}

/// Checks a `match` (written at `key`: `match`, `auth.match`): its probability, counts, glob, regex and pointer.
fn check_match(m: &Match, key: &str) -> Result<(), String> {
    if let Some(p) = m.probability
        && !(0.0..=1.0).contains(&p)
    {
        return Err(format!("{key}.probability must be between 0 and 1"));
    }
    if m.nth == Some(0) || m.every == Some(0) {
        return Err(format!("{key}.nth and {key}.every count from 1"));
    }
    if let Some(tool) = &m.tool {
        glob::Pattern::new(tool).map_err(|e| format!("{key}.tool is not a valid glob: {e}"))?;
    }
    if let Some(arg) = &m.argument {
        if let Some(re) = &arg.regex {
            regex::Regex::new(re).map_err(|e| format!("{key}.argument.regex is invalid: {e}"))?;
        }
        if !arg.pointer.is_empty() && !arg.pointer.starts_with('/') {
            return Err(format!("{key}.argument.pointer must be a JSON pointer starting with '/'"));
        }
    }
    Ok(())
}

/// A checked `match` ready to meet requests: its conditions on one request, and its count.
#[derive(Debug, Clone)]
pub struct Matcher {
    matcher: Match,
    glob: Option<glob::Pattern>,
    re: Option<regex::Regex>,
}

impl Matcher {
    /// Compiles a `match` that [`Rule::check`] or [`AuthRule::check`] passed (a pattern that does not compile
    /// matches nothing).
    pub fn new(matcher: Match) -> Self {
        let glob = matcher.tool.as_deref().and_then(|t| glob::Pattern::new(t).ok());
        let re = matcher.argument.as_ref().and_then(|a| a.regex.as_deref()).and_then(|x| regex::Regex::new(x).ok());
        Self { matcher, glob, re }
    }

    pub fn get(&self) -> &Match {
        &self.matcher
    }

    /// The conditions on the request itself (`method` is its method): method, tool glob, argument.
    pub fn matches(&self, request: &Frame, method: &str) -> bool {
        let m = &self.matcher;
        if m.method.as_deref().is_some_and(|want| want != method) {
            return false;
        }
        // A resource read or a prompt get named in `method` is matched by what it names, so that the item a
        // drift removed can be refused on a real server; otherwise only a tool call has a name to match.
        let named = match m.method.as_deref() {
            Some("resources/read" | "prompts/get") => request.mcp_name(),
            _ => request.tool_name(),
        };
        if let Some(glob) = &self.glob
            && !named.is_some_and(|t| glob.matches(t))
        {
            return false;
        }
        if let Some(arg) = &m.argument {
            let value = request.value().and_then(|v| v.pointer(&format!("/params/arguments{}", arg.pointer)));
            let Some(value) = value else { return false };
            if arg.equals.as_ref().is_some_and(|want| want != value) {
                return false;
            }
            if let Some(re) = &self.re
                && !value.as_str().is_some_and(|s| re.is_match(s))
            {
                return false;
            }
        }
        true
    }

    /// Whether the `n`-th request that met [`Matcher::matches`] (1-based) is one `nth`, `after` and `every` take.
    pub fn counted(&self, n: u64) -> bool {
        let m = &self.matcher;
        !(m.nth.is_some_and(|k| n != k)
            || m.after.is_some_and(|k| n <= k)
            || m.every.is_some_and(|k| !n.is_multiple_of(k)))
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

    fn load_yaml(text: &str) -> Result<RulesFile, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.yaml");
        std::fs::write(&path, text).unwrap();
        RulesFile::load(&path).map_err(|e| e.to_string())
    }

    #[test]
    fn a_rules_file_holds_the_runs_auth_fault_with_a_match_for_the_faults_at_a_request() {
        let file = load_yaml(
            "rules: []\nauth:\n  fault: { type: token_expired }\n  match: { method: tools/call, tool: write_file, nth: 1 }\n",
        )
        .unwrap();
        let auth = file.auth.unwrap();
        assert_eq!(auth.fault.name(), "token_expired");
        let matcher = Matcher::new(auth.matcher.unwrap().into());
        let call = |tool: &str| {
            Frame::from_value(
                serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}),
            )
        };
        assert!(
            matcher.matches(&call("write_file"), "tools/call") && !matcher.matches(&call("read_file"), "tools/call")
        );
        assert!(matcher.counted(1) && !matcher.counted(2), "nth: 1");
        // Without a match, any auth fault with its own parameters, as `--auth-fault` takes it.
        let file = load_yaml("auth: { fault: { type: refresh_slow, delay_ms: 3000 } }\n").unwrap();
        assert_eq!(file.auth.unwrap().fault.name(), "refresh_slow");
    }

    #[test]
    fn a_rule_at_a_resume_takes_only_what_a_gets_answer_can_carry_and_names_what_it_refuses() {
        let file = load_yaml(
            "rules:\n  - {name: cut, match: {tool: read_file, nth: 1}, fault: {type: stream_cut}}\n  - {name: gone, match: {tool: read_file, nth: 1, at: resume}, fault: {type: auth_expired}}\n",
        )
        .unwrap();
        assert_eq!(file.rules[1].matcher.at, Some(At::Resume));
        assert_eq!(file.rules[1].fault.name(), "http_status", "a preset of http_status is taken");
        assert_eq!(file.rules[0].matcher.at, None);
        for fault in [
            "{type: disconnect}",
            "{type: latency, delay_ms: 5}",
            "{type: timeout}",
            "{type: session_expired_in_flight}",
        ] {
            load_yaml(&format!("rules:\n  - {{name: r, match: {{at: resume}}, fault: {fault}}}\n")).unwrap();
        }
        let refused = |rule: &str, wanted: &[&str]| {
            let error = load_yaml(&format!("rules:\n  - {rule}\n")).unwrap_err();
            for want in wanted {
                assert!(error.contains(want), "{want:?} not in {error}");
            }
        };
        refused(
            "{name: again, match: {at: resume}, fault: {type: stream_cut}}",
            &["rule \"again\"", "fault: stream_cut cannot act at a resume", "http_status, disconnect"],
        );
        refused("{name: dup, match: {at: resume}, fault: {type: duplicate}}", &["\"dup\"", "fault: duplicate"]);
        refused(
            "{name: burst, match: {at: resume}, fault: {type: burst_failure, count: 2}}",
            &["\"burst\"", "fault: burst_failure"],
        );
        refused(
            "{name: early, match: {at: resume}, mode: before, fault: {type: latency, delay_ms: 5}}",
            &["\"early\"", "mode:", "drop mode"],
        );
        refused(
            "{name: sched, match: {at: resume}, schedule: {type: burst, count: 2}, fault: {type: timeout}}",
            &["\"sched\"", "schedule:"],
        );
        refused("{name: when, match: {at: later}, fault: {type: timeout}}", &["at", "later"]);
        let err = RulesFile::parse_spec("{match: {at: resume}, fault: {type: empty}}", 3).unwrap_err().to_string();
        assert!(err.contains("cli-3") && err.contains("fault: empty cannot act at a resume"), "{err}");
    }

    #[test]
    fn an_auth_key_the_fault_cannot_take_is_refused_naming_it() {
        let refused = |text: &str, wanted: &[&str]| {
            let error = load_yaml(text).unwrap_err();
            for want in wanted {
                assert!(error.contains(want), "{want:?} not in {error}");
            }
        };
        refused(
            "auth: { fault: { type: refresh_slow }, match: { tool: write_file } }\n",
            &[
                "auth.match",
                "refresh_slow acts at the token endpoint",
                "token_expired, token_revoked, insufficient_scope",
            ],
        );
        refused("auth: { fault: { type: clock_skew }, match: {} }\n", &["auth.match", "clock_skew"]);
        refused(
            "auth: { fault: { type: token_expired }, match: { tool: w, probability: 0.5 } }\n",
            &["auth.match.probability", "counted, not drawn"],
        );
        refused(
            "auth: { fault: { type: token_revoked }, match: { window: { from_ms: 5 } } }\n",
            &["auth.match.window"],
        );
        refused("auth: { fault: { type: token_expired }, match: { colour: red } }\n", &["auth.match", "colour"]);
        refused(
            "auth: { fault: { type: token_expired, after: 2 }, match: { nth: 1 } }\n",
            &["auth.fault.after", "match.nth"],
        );
        refused("auth: { fault: { type: token_expired }, when: soon }\n", &["when"]);
        refused(
            "auth: { fault: { type: token_expired, after: 0 } }\n",
            &["auth.fault: token_expired.after", "1 to 1000000"],
        );
        refused("auth: { fault: { type: no_such_fault } }\n", &["auth.fault", "no_such_fault"]);
        refused("auth: { fault: { type: token_expired }, match: { nth: 0 } }\n", &["auth.match.nth"]);
        refused("auth: { fault: { type: token_expired }, match: { tool: \"[\" } }\n", &["auth.match.tool"]);
    }
}
