//! Rules: which message gets which fault. Counting, probability, time windows and schedules live here and only
//! here; the rule types (what a rules file says) and a match's conditions on one request (`Matcher`, which `--auth`'s
//! `auth.match` shares) sit next to the catalogue in the engine, so that what reads them (eval's task files) needs no
//! proxy.

use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::{BurstFailure, CascadingFailure, ServerOutage};
pub use faultlab_engine::rules::{
    ArgumentMatch, At, Match, Matcher, Mode, Rule, RulesError, RulesFile, Schedule, Window,
};
use faultlab_wire::Frame;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// Why a rule asking to restart the upstream is refused on a front that cannot.
fn no_restart(rule: &Rule) -> Option<String> {
    rule.schedule().is_some_and(Schedule::restarts).then(|| {
        format!(
            "rule {:?}: restart applies only to the stdio front with a child upstream (`faultlab proxy -- CMD`); \
             this proxy cannot restart an HTTP upstream or a server behind its HTTP front",
            rule.name
        )
    })
}

/// A fault of the model hop only (`tool_call_cut`, `overloaded`, `token_quota`, …): `faultlab model` carries it;
/// on the MCP wire it would do nothing, so an MCP front refuses it, naming the rule.
fn model_only(rule: &Rule) -> Option<String> {
    rule.fault.model_only().then(|| {
        format!(
            "rule {:?}: fault {} exists only between an agent and its model; put it in the rules of `faultlab model`",
            rule.name,
            rule.fault.name()
        )
    })
}

/// A fault only `faultlab serve` commits (`task_lifecycle`: a task's own behaviour): a proxy cannot put it on
/// another server's replies, so every front refuses it, naming the rule and the reason, rather than do nothing.
fn serve_only(rule: &Rule) -> Option<String> {
    rule.fault.serve_only().map(|why| {
        format!(
            "rule {:?}: fault {} cannot be applied by a proxy: {why}; call that tool of `faultlab serve` instead",
            rule.name,
            rule.fault.name()
        )
    })
}

/// An outage with `restart` (`server_outage`) that has just started: the front stops its upstream now and starts a fresh one
/// at `until`.
#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    pub rule: String,
    pub fault: FaultKind,
    /// When the window ends, since the proxy started (the clock `decide` is given).
    pub until: Duration,
}

/// A rule that fired for a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Fired {
    pub rule: String,
    pub mode: Mode,
    pub fault: FaultKind,
}

/// Rules with their counters and the seeded generator.
pub struct RuleSet {
    rules: Vec<Compiled>,
    rng: ChaCha8Rng,
    seed: u64,
    /// A server outage under way: the rule that started it, its fault, and when it ends (ms since start).
    outage: Option<(String, FaultKind, u64)>,
    /// A cascade under way: the rule that started it, its fault, and how many requests it still takes down.
    cascade: Option<(String, FaultKind, u32)>,
    /// Whether this front can restart its upstream; rules asking for it are refused when it cannot.
    restarts: bool,
    /// A restarting outage `decide` has just started, for the front to act on ([`RuleSet::take_restart`]).
    restart: Option<Restart>,
    /// The rules with `match.at: resume` the last [`RuleSet::decide`]'s request met, for the front to arm on the
    /// stream it opens ([`RuleSet::take_at_resume`]).
    at_resume: Vec<Fired>,
    /// Whether these are `faultlab model`'s rules, where the faults of the model hop apply (an MCP front refuses
    /// them, also through the control API).
    model_hop: bool,
}

/// A rule set shared by the proxy's pumps and its control API.
pub type SharedRules = std::sync::Arc<std::sync::Mutex<RuleSet>>;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ControlError {
    #[error("a rule named {0:?} already exists")]
    Exists(String),
    #[error("{0}")]
    Invalid(String),
}

/// A rule with its compiled conditions and its counters.
struct Compiled {
    rule: Rule,
    /// Requests that met the rule's method, tool and argument conditions so far.
    count: u64,
    /// Requests still to fail in a burst under way.
    burst_left: u32,
    matcher: Matcher,
}

fn compile(rule: Rule) -> Compiled {
    let matcher = Matcher::new(rule.matcher.clone());
    Compiled { rule, count: 0, burst_left: 0, matcher }
}

impl RuleSet {
    /// The rules, for a front that can restart its upstream (a front that cannot simply never acts on a restart;
    /// [`RuleSet::for_front`] refuses such rules instead).
    pub fn new(file: RulesFile) -> Self {
        let seed = file.seed.unwrap_or(0);
        let rules = file.rules.into_iter().map(compile).collect();
        let rng = ChaCha8Rng::seed_from_u64(seed);
        Self {
            rules,
            rng,
            seed,
            outage: None,
            cascade: None,
            restarts: true,
            restart: None,
            at_resume: Vec::new(),
            model_hop: false,
        }
    }

    /// The rules for a front that can (`restarts`: the stdio front with a child upstream) or cannot restart its
    /// upstream. Where it cannot, a rule asking for a restart is refused, naming the rule, here and when added
    /// through the control API: doing less than the rule says, silently, would mislead whoever reads the results.
    /// A fault of the model hop only is refused the same way.
    pub fn for_front(file: RulesFile, restarts: bool) -> Result<Self, RulesError> {
        if let Some(message) = file.rules.iter().find_map(model_only) {
            return Err(RulesError::Unsupported(message));
        }
        Ok(Self { model_hop: false, ..Self::for_model(file, restarts)? })
    }

    /// The rules for `faultlab model` (which checks first which faults its hop carries): as [`RuleSet::for_front`],
    /// the faults of the model hop allowed.
    pub fn for_model(file: RulesFile, restarts: bool) -> Result<Self, RulesError> {
        // The run's auth fault is not a rule: whoever carries it (the HTTP proxy with `--auth`) takes it out first.
        if file.auth.is_some() {
            return Err(RulesError::Unsupported(
                "the rules file's `auth` needs an authorization server: only `faultlab proxy --listen ADDR --auth` \
                 plays it"
                    .into(),
            ));
        }
        if !restarts && let Some(message) = file.rules.iter().find_map(no_restart) {
            return Err(RulesError::Unsupported(message));
        }
        if let Some(message) = file.rules.iter().find_map(serve_only) {
            return Err(RulesError::Unsupported(message));
        }
        Ok(Self { restarts, model_hop: true, ..Self::new(file) })
    }

    pub fn shared(self) -> SharedRules {
        std::sync::Arc::new(std::sync::Mutex::new(self))
    }

    /// The rules as they stand (for the control API).
    pub fn snapshot(&self) -> RulesFile {
        RulesFile { seed: Some(self.seed), rules: self.rules.iter().map(|c| c.rule.clone()).collect(), auth: None }
    }

    /// Adds a rule while traffic flows; names are unique.
    pub fn add(&mut self, rule: Rule) -> Result<(), ControlError> {
        rule.check().map_err(ControlError::Invalid)?;
        if !self.restarts
            && let Some(message) = no_restart(&rule)
        {
            return Err(ControlError::Invalid(message));
        }
        if !self.model_hop
            && let Some(message) = model_only(&rule)
        {
            return Err(ControlError::Invalid(message));
        }
        if let Some(message) = serve_only(&rule) {
            return Err(ControlError::Invalid(message));
        }
        if self.rules.iter().any(|c| c.rule.name == rule.name) {
            return Err(ControlError::Exists(rule.name));
        }
        self.rules.push(compile(rule));
        Ok(())
    }

    /// Removes the rule called `name`; false when there is none.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.rules.len();
        self.rules.retain(|c| c.rule.name != name);
        self.rules.len() != before
    }

    /// Removes every rule and starts the generator again from the seed.
    pub fn reset(&mut self) {
        self.rules.clear();
        self.outage = None;
        self.cascade = None;
        self.restart = None;
        self.at_resume.clear();
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The restarting outage the last [`RuleSet::decide`] started, if it did (once: taking it clears it). A front
    /// that restarts its upstream asks right after each `decide`, under the same lock.
    pub fn take_restart(&mut self) -> Option<Restart> {
        self.restart.take()
    }

    /// The rules with `match.at: resume` that the last [`RuleSet::decide`]'s request met, in file order (taking
    /// them clears them): they act at that request's stream's resumes, not on the request. A front with no
    /// resumable streams (stdio) never takes them, and they never fire there.
    pub fn take_at_resume(&mut self) -> Vec<Fired> {
        std::mem::take(&mut self.at_resume)
    }

    /// The first rule that fires for this client request, `elapsed` after the proxy started. Counters advance for
    /// every rule whose static conditions match, fired or not, so `nth` counts requests, not firings.
    pub fn decide(&mut self, request: &Frame, elapsed: Duration) -> Option<Fired> {
        self.at_resume.clear();
        let method = request.method()?;
        request.id()?;
        let elapsed_ms = elapsed.as_millis() as u64;
        // During a server outage every request fails, whatever rule matches it; the server is down, so nothing
        // reaches it.
        if let Some((rule, fault, until_ms)) = &self.outage {
            if elapsed_ms < *until_ms {
                return Some(Fired { rule: rule.clone(), mode: Mode::Instead, fault: fault.clone() });
            }
            self.outage = None;
        }
        if let Some((rule, fault, left)) = &mut self.cascade {
            let fired = Fired { rule: rule.clone(), mode: Mode::Instead, fault: fault.clone() };
            *left -= 1;
            if *left == 0 {
                self.cascade = None;
            }
            return Some(fired);
        }
        let mut fired = None;
        for c in &mut self.rules {
            if !c.matcher.matches(request, method) {
                continue;
            }
            c.count += 1;
            // A rule at a resume leaves the request to the others and is met whichever of them fires.
            let at_resume = c.rule.matcher.at == Some(At::Resume);
            if fired.is_some() && !at_resume {
                continue;
            }
            let rule = &c.rule;
            // A burst under way keeps failing the rule's requests, whatever the other conditions say.
            if c.burst_left > 0 {
                c.burst_left -= 1;
                fired = Some(Fired { rule: rule.name.clone(), mode: rule.mode, fault: rule.fault.clone() });
                continue;
            }
            let m = &rule.matcher;
            if !c.matcher.counted(c.count)
                || m.window
                    .as_ref()
                    .is_some_and(|w| elapsed_ms < w.from_ms || w.until_ms.is_some_and(|u| elapsed_ms >= u))
            {
                continue;
            }
            // Drawn only for otherwise-matching requests, so the sequence of draws depends on the traffic and seed.
            if let Some(p) = m.probability
                && self.rng.random::<f64>() >= p
            {
                continue;
            }
            if at_resume {
                // No schedule (refused at load): it acts once, at the resume.
                self.at_resume.push(Fired { rule: rule.name.clone(), mode: rule.mode, fault: rule.fault.clone() });
                continue;
            }
            let mut mode = rule.mode;
            match rule.schedule() {
                Some(Schedule::Burst(BurstFailure { count })) => c.burst_left = count.saturating_sub(1),
                Some(Schedule::Outage(ServerOutage { duration_ms, restart })) => {
                    let until_ms = elapsed_ms.saturating_add(*duration_ms);
                    self.outage = Some((rule.name.clone(), rule.fault.clone(), until_ms));
                    if *restart {
                        // The upstream goes down before this request would reach it, whatever the rule's mode.
                        mode = Mode::Instead;
                        let until = Duration::from_millis(until_ms);
                        self.restart = Some(Restart { rule: rule.name.clone(), fault: rule.fault.clone(), until });
                    }
                }
                Some(Schedule::Cascade(CascadingFailure { spread })) if *spread > 0 => {
                    self.cascade = Some((rule.name.clone(), rule.fault.clone(), *spread));
                }
                _ => {}
            }
            fired = Some(Fired { rule: rule.name.clone(), mode, fault: rule.fault.clone() });
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn call(id: i64, tool: &str, args: Value) -> Frame {
        let v =
            serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}});
        Frame::from_value(v)
    }

    fn rules(yaml: &str) -> RuleSet {
        let file: RulesFile = yaml_serde::from_str(yaml).unwrap();
        for r in &file.rules {
            r.check().unwrap();
        }
        RuleSet::new(file)
    }

    #[test]
    fn the_issue_example_matches_by_glob_and_nth() {
        let mut set = rules(
            "seed: 7\nrules:\n  - name: slow-echo\n    match: { tool: echo }\n    fault: { type: latency, delay_ms: 200 }\n  - name: first-write\n    match: { tool: \"write_*\", nth: 1 }\n    mode: after\n    fault: { type: timeout }\n",
        );
        let t = Duration::ZERO;
        assert_eq!(set.decide(&call(1, "echo", Value::Null), t).unwrap().rule, "slow-echo");
        assert_eq!(
            set.decide(&call(2, "write_file", Value::Null), t).unwrap().fault,
            FaultKind::Timeout(faultlab_engine::catalogue::Timeout {})
        );
        assert!(set.decide(&call(3, "write_file", Value::Null), t).is_none(), "only the first write");
        assert!(set.decide(&call(4, "read_file", Value::Null), t).is_none());
    }

    #[test]
    fn arguments_counts_and_windows() {
        let mut set = rules(
            "rules:\n  - name: a\n    match: { argument: { pointer: /path, regex: '^/etc' }, every: 2 }\n    fault: { type: duplicate }\n",
        );
        let t = Duration::ZERO;
        let etc = serde_json::json!({"path": "/etc/passwd"});
        assert!(set.decide(&call(1, "read", etc.clone()), t).is_none());
        assert!(set.decide(&call(2, "read", serde_json::json!({"path": "/tmp"})), t).is_none());
        assert!(set.decide(&call(3, "read", etc), t).is_some(), "the second matching request");
        let mut windowed = rules(
            "rules:\n  - name: w\n    match: { window: { from_ms: 100, until_ms: 200 } }\n    fault: { type: timeout }\n",
        );
        assert!(windowed.decide(&call(1, "x", Value::Null), Duration::from_millis(50)).is_none());
        assert!(windowed.decide(&call(2, "x", Value::Null), Duration::from_millis(150)).is_some());
        assert!(windowed.decide(&call(3, "x", Value::Null), Duration::from_millis(250)).is_none());
    }

    #[test]
    fn a_burst_fails_consecutive_matching_requests_and_ends() {
        let mut set = rules(
            "rules:\n  - name: b\n    match: { tool: x, nth: 2 }\n    fault: { type: burst_failure, count: 3 }\n",
        );
        let t = Duration::ZERO;
        let fired: Vec<bool> = (1..=6).map(|i| set.decide(&call(i, "x", Value::Null), t).is_some()).collect();
        assert_eq!(fired, [false, true, true, true, false, false]);
        assert!(set.decide(&call(9, "y", Value::Null), t).is_none(), "other tools are not in the burst");
    }

    #[test]
    fn an_outage_fails_every_request_for_its_window() {
        let mut set = rules(
            "rules:\n  - name: down\n    match: { tool: x }\n    fault: { type: server_outage, duration_ms: 100 }\n",
        );
        let at = Duration::from_millis;
        assert!(set.decide(&call(1, "y", Value::Null), at(0)).is_none());
        assert_eq!(set.decide(&call(2, "x", Value::Null), at(10)).unwrap().rule, "down");
        let other = set.decide(&call(3, "y", Value::Null), at(50)).unwrap();
        assert_eq!((other.rule.as_str(), other.mode), ("down", Mode::Instead), "any tool fails during the outage");
        assert!(set.decide(&call(4, "y", Value::Null), at(111)).is_none(), "service resumes after the window");
    }

    #[test]
    fn a_restarting_outage_is_handed_to_the_front_once_and_never_forwards_its_request() {
        let mut set = rules(
            "rules:\n  - name: crash\n    match: { tool: x, nth: 1 }\n    fault: { type: server_outage, duration_ms: 300, restart: true }\n",
        );
        let at = Duration::from_millis;
        let fired = set.decide(&call(1, "x", Value::Null), at(20)).unwrap();
        assert_eq!(fired.mode, Mode::Instead, "the default mode `after` would forward it to a dying upstream");
        let restart = set.take_restart().unwrap();
        assert_eq!((restart.rule.as_str(), restart.until), ("crash", at(320)));
        assert_eq!(set.take_restart(), None, "handed over once");
        assert!(set.decide(&call(2, "y", Value::Null), at(100)).is_some(), "inside the window");
        assert_eq!(set.take_restart(), None, "a request inside the window starts nothing");
        assert!(set.decide(&call(3, "y", Value::Null), at(320)).is_none(), "the window has ended");
    }

    #[test]
    fn a_front_that_cannot_restart_refuses_restart_rules_naming_them() {
        let yaml = "rules:\n  - name: ok\n    fault: { type: server_outage, duration_ms: 300 }\n  - name: crash-it\n    fault: { type: server_outage, duration_ms: 300, restart: true }\n";
        let file: RulesFile = yaml_serde::from_str(yaml).unwrap();
        let err = RuleSet::for_front(file.clone(), false).err().expect("refused").to_string();
        assert!(err.contains("\"crash-it\"") && err.contains("restart"), "{err}");
        assert!(RuleSet::for_front(file, true).is_ok(), "the stdio front with a child upstream can");

        let mut http = RuleSet::for_front(RulesFile::default(), false).unwrap();
        let live: Rule =
            yaml_serde::from_str("{name: live, fault: {type: server_outage, duration_ms: 5, restart: true}}").unwrap();
        let Err(ControlError::Invalid(message)) = http.add(live.clone()) else { panic!("added") };
        assert!(message.contains("\"live\""), "{message}");
        let plain = Rule { fault: ServerOutage { duration_ms: 5, restart: false }.into(), ..live };
        assert_eq!(http.add(plain), Ok(()), "an outage without restart is fine anywhere");
    }

    #[test]
    fn an_mcp_front_refuses_a_model_hop_fault_in_its_file_and_through_the_control_api() {
        let file: RulesFile =
            yaml_serde::from_str("rules:\n  - name: cut\n    fault: {type: tool_call_cut}\n").unwrap();
        let err = RuleSet::for_front(file.clone(), true).err().expect("refused").to_string();
        assert!(err.contains("\"cut\"") && err.contains("faultlab model"), "{err}");
        assert!(RuleSet::for_model(file, false).is_ok(), "faultlab model carries it");
        let mut proxy = RuleSet::for_front(RulesFile::default(), true).unwrap();
        let live: Rule = yaml_serde::from_str("{name: live, fault: {type: refusal}}").unwrap();
        let Err(ControlError::Invalid(message)) = proxy.add(live.clone()) else { panic!("added") };
        assert!(message.contains("\"live\""), "{message}");
        let mut model = RuleSet::for_model(RulesFile::default(), false).unwrap();
        assert_eq!(model.add(live), Ok(()));
    }

    #[test]
    fn every_front_refuses_a_fault_only_faultlab_serve_commits_and_says_why() {
        for (fault, params, tool) in [
            ("task_lifecycle", "variant: stuck_working", "task_work"),
            ("input_required", "variant: tampered_state", "input_rounds"),
            ("ask_back", "ask: roots, variant: never_finish", "ask_client"),
            ("progress_stream", "shape: backwards, every_ms: 10, count: 3", "progress_stream tool"),
        ] {
            let yaml = format!("rules:\n  - name: stuck\n    fault: {{type: {fault}, {params}}}\n");
            let file: RulesFile = yaml_serde::from_str(&yaml).unwrap();
            for refused in [RuleSet::for_front(file.clone(), true).err(), RuleSet::for_model(file, false).err()] {
                let err = refused.expect("refused").to_string();
                assert!(err.contains("\"stuck\"") && err.contains(fault) && err.contains(tool), "{err}");
            }
        }
        let mut proxy = RuleSet::for_front(RulesFile::default(), true).unwrap();
        let live: Rule = yaml_serde::from_str("{name: live, fault: {type: task_lifecycle, variant: failed}}").unwrap();
        let Err(ControlError::Invalid(message)) = proxy.add(live) else { panic!("added") };
        assert!(message.contains("\"live\"") && message.contains("cannot be applied by a proxy"), "{message}");
        // The synchronous refusal is an error on the wire, which a proxy can send.
        let required: Rule = yaml_serde::from_str("{name: required, fault: {type: task_required}}").unwrap();
        assert_eq!(proxy.add(required), Ok(()));
    }

    #[test]
    fn a_cascade_takes_down_the_next_requests_whatever_their_tool() {
        let mut set =
            rules("rules:\n  - name: c\n    match: { tool: db }\n    fault: { type: cascading_failure, spread: 2 }\n");
        let t = Duration::ZERO;
        let tools = ["web", "db", "web", "cache", "web"];
        let fired: Vec<bool> = tools
            .iter()
            .enumerate()
            .map(|(i, tool)| set.decide(&call(i as i64, tool, Value::Null), t).is_some())
            .collect();
        assert_eq!(fired, [false, true, true, true, false]);
    }

    #[test]
    fn a_rule_schedule_runs_over_any_fault_as_the_presets_do() {
        let scheduled = |schedule: &str, fault: &str| {
            let yaml = format!(
                "rules:\n  - name: s\n    match: {{ tool: x, nth: 2 }}\n    schedule: {schedule}\n    fault: {fault}\n"
            );
            let mut set = rules(&yaml);
            let fired: Vec<Option<Fired>> =
                (1..=5).map(|i| set.decide(&call(i, "x", Value::Null), Duration::ZERO)).collect();
            fired
        };
        let burst = scheduled("{ type: burst, count: 3 }", "{ type: timeout }");
        let which: Vec<bool> = burst.iter().map(Option::is_some).collect();
        assert_eq!(which, [false, true, true, true, false]);
        assert!(burst.iter().flatten().all(|f| f.fault.name() == "timeout" && f.mode == Mode::After));
        let preset = scheduled("null", "{ type: burst_failure, count: 3 }");
        assert_eq!(preset.iter().map(Option::is_some).collect::<Vec<_>>(), which, "the preset is the same schedule");
        let outage = scheduled("{ type: outage, duration_ms: 5 }", "{ type: duplicate }");
        assert!(
            outage[2].as_ref().is_some_and(|f| f.mode == Mode::Instead),
            "an outage answers in the upstream's place"
        );

        let both = "{name: twice, schedule: {type: burst, count: 2}, fault: {type: burst_failure, count: 3}}";
        let err = RulesFile::parse_spec(both, 0).unwrap_err().to_string();
        assert!(err.contains("\"twice\"") && err.contains("own schedule"), "{err}");
        let err = RulesFile::parse_spec("{schedule: {type: burst, count: 0}, fault: {type: timeout}}", 0).unwrap_err();
        assert!(err.to_string().contains("schedule: count must be between 1 and 10000"), "{err}");
    }

    #[test]
    fn a_rule_at_a_resume_leaves_the_request_to_the_others_and_is_handed_to_the_front_once() {
        let mut set = rules(
            "rules:\n  - name: late\n    match: { tool: x, nth: 2, at: resume }\n    fault: { type: http_status, status: 503 }\n  - name: cut\n    match: { tool: x }\n    fault: { type: stream_cut }\n",
        );
        let t = Duration::ZERO;
        assert_eq!(set.decide(&call(1, "x", Value::Null), t).unwrap().rule, "cut");
        assert!(set.take_at_resume().is_empty(), "nth: 2 counts the requests, the first is not it");
        let fired = set.decide(&call(2, "x", Value::Null), t).unwrap();
        assert_eq!(fired.rule, "cut", "the resume rule listed first does not take the request");
        let armed = set.take_at_resume();
        assert_eq!(armed.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>(), ["late"]);
        assert_eq!(armed[0].fault.name(), "http_status");
        assert!(set.take_at_resume().is_empty(), "handed over once");
        assert!(set.decide(&call(3, "y", Value::Null), t).is_none());
        assert!(set.take_at_resume().is_empty());
    }

    #[test]
    fn every_example_rules_file_loads_and_the_http_front_takes_those_without_an_auth_fault() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rules");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let file = RulesFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
            // The run's auth fault is the authorization server's (`--auth`), which takes it out first.
            let file = RulesFile { auth: None, ..file };
            RuleSet::for_front(file, false).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            loaded += 1;
        }
        assert!(loaded >= 2, "{loaded} files in {}", folder.display());
        let resume = RulesFile::load(&folder.join("stream-resume-503.yaml")).unwrap();
        assert_eq!(resume.rules[1].matcher.at, Some(At::Resume), "the example times its 503 at the resume");
    }

    #[test]
    fn probability_is_repeatable_under_a_seed() {
        let yaml = "seed: 42\nrules:\n  - name: p\n    match: { probability: 0.5 }\n    fault: { type: timeout }\n";
        let draws = |mut set: RuleSet| -> Vec<bool> {
            (0..64).map(|i| set.decide(&call(i, "x", Value::Null), Duration::ZERO).is_some()).collect()
        };
        let a = draws(rules(yaml));
        assert_eq!(a, draws(rules(yaml)));
        let hits = a.iter().filter(|h| **h).count();
        assert!((16..=48).contains(&hits), "{hits} of 64");
    }

    #[test]
    fn bad_rules_name_the_rule_and_key() {
        let dir = std::env::temp_dir().join(format!("faultlab-rules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.yaml");
        std::fs::write(&path, "rules:\n  - name: r\n    match: { toool: echo }\n    fault: { type: timeout }\n")
            .unwrap();
        let err = RulesFile::load(&path).unwrap_err().to_string();
        assert!(err.contains("bad.yaml") && err.contains("toool") && err.contains("line 3"), "{err}");
        std::fs::write(&path, "rules:\n  - name: r\n    match: { probability: 2 }\n    fault: { type: timeout }\n")
            .unwrap();
        assert!(RulesFile::load(&path).unwrap_err().to_string().contains("probability"));
        assert!(RulesFile::parse_spec("{fault: {type: latency, delay_ms: 5}}", 1).is_ok());
        assert!(RulesFile::parse_spec("{fault: {type: nope}}", 1).is_err());
    }
}
