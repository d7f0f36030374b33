//! The exploration oracle: for each built-in control agent, the fault classes that must break it (as a single
//! fault at some call of the task), those that must degrade it (an honest failure, nothing broken, and no break
//! by that class anywhere), and no others. An exploration that cannot tell the good agent from the blind retrier
//! has found nothing; `faultlab explore --controls` checks every entry.

use super::{Exploration, FaultClass};
use crate::report::Sites;
use faultlab_eval::agent::ControlAgent;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExploreOracle {
    pub entries: Vec<ExpectedClasses>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectedClasses {
    pub task: String,
    pub agent: ControlAgent,
    /// Whether the healthy run passes (when it does not, nothing is explored and `breaking` is empty).
    #[serde(default = "yes")]
    pub healthy: bool,
    /// Exactly the classes a single fault of which breaks the agent somewhere in the task.
    #[serde(default)]
    pub breaking: Vec<FaultClass>,
    /// Exactly the classes a single fault of which degrades the agent somewhere in the task, and breaks it nowhere.
    #[serde(default)]
    pub degrading: Vec<FaultClass>,
    /// At the protocol's own requests (`initialize`, `tools/list`), compared when they were explored
    /// (`--protocol-sites`): `breaking` and `degrading` above speak of the task's tool calls only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<SiteClasses>,
    /// At `tools/list` alone, compared when the agent listed the tools and its listing was a site
    /// (`--protocol-sites`; the good agent lists before its first call): what `protocol` says of every protocol
    /// request, said of the listing apart, so that what a fault at the listing does is checked on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing: Option<SiteClasses>,
    /// At the requests to the task's model (a task with a `model`; its class, `model`, explored there): compared
    /// when they were sites. `breaking` and `degrading` above speak of the task's tool calls only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<SiteClasses>,
    /// While the stream resumes (a task over HTTP, the timing `at-resume`): which faults at a cut stream's first
    /// resume break or degrade the agent, at the tool calls and (`protocol`) at the protocol's requests; compared
    /// for the faults explored (`--quick`: `http_status` alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_resume: Option<ResumeFaults>,
    /// The minimal failing sets of faults at the task's tool calls, compared when an exploration tried exactly
    /// these classes, each by its representative (`--quick`), up to this many faults (`--max-faults`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sets: Option<ExpectedSets>,
    /// Why, in words.
    #[serde(default)]
    pub why: String,
}

/// The minimal failing sets an exploration of sets must find (`--max-faults 2` or `3`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectedSets {
    /// The classes explored, exactly (in any order).
    pub classes: Vec<FaultClass>,
    /// The largest set tried (`--max-faults`).
    pub max_faults: u8,
    /// Exactly the breaking sets none of whose proper subsets breaks the agent, each fault written `CLASS at TOOL
    /// N` (the Nth call to TOOL, a recovery call included: `error at read_file 3`).
    pub minimal_failing: Vec<Vec<String>>,
    /// Why, in words.
    #[serde(default)]
    pub why: String,
}

/// The classes that break or degrade an agent at the sites of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteClasses {
    /// Exactly the classes a single fault of which breaks the agent at some site of this kind.
    #[serde(default)]
    pub breaking: Vec<FaultClass>,
    /// Exactly the classes a single fault of which degrades the agent at some site of this kind, and breaks it at
    /// none.
    #[serde(default)]
    pub degrading: Vec<FaultClass>,
    /// Why, in words.
    #[serde(default)]
    pub why: String,
}

/// A fault tried at a cut stream's resume ([`crate::synth::at_resume_members`]), as reports name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResumeFault {
    HttpStatus,
    Disconnect,
    Latency,
    Timeout,
    SessionExpiredInFlight,
}

impl ResumeFault {
    fn name(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    }
}

/// The faults at a cut stream's resume that break or degrade an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeFaults {
    /// Exactly the faults at the resume that break the agent at some tool call.
    #[serde(default)]
    pub breaking: Vec<ResumeFault>,
    /// Exactly the faults at the resume that degrade the agent at some tool call, and break it at none.
    #[serde(default)]
    pub degrading: Vec<ResumeFault>,
    /// The same at the protocol's own requests, compared when they were explored (`--protocol-sites`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ResumeSites>,
    /// Why, in words.
    #[serde(default)]
    pub why: String,
}

/// The faults at a cut stream's resume that break or degrade an agent at the sites of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeSites {
    #[serde(default)]
    pub breaking: Vec<ResumeFault>,
    #[serde(default)]
    pub degrading: Vec<ResumeFault>,
    /// Why, in words.
    #[serde(default)]
    pub why: String,
}

fn yes() -> bool {
    true
}

/// The built-in oracle (the control agents on the built-in transport-timeout-after-write task).
pub const BUILTIN: &str = include_str!("../builtin/explore-oracle.yaml");

impl ExploreOracle {
    pub fn parse(text: &str) -> Result<Self, String> {
        faultlab_wire::nesting::check(text, faultlab_wire::nesting::Syntax::Yaml).map_err(|e| e.to_string())?;
        yaml_serde::from_str(text).map_err(|e| e.to_string())
    }

    pub fn builtin() -> Self {
        Self::parse(BUILTIN).unwrap_or_else(|e| panic!("built-in explore oracle: {e}"))
    }

    /// The agents the oracle speaks of, in its order.
    pub fn agents(&self) -> Vec<ControlAgent> {
        let mut agents = Vec::new();
        for e in &self.entries {
            if !agents.contains(&e.agent) {
                agents.push(e.agent);
            }
        }
        agents
    }

    /// The entries of these agents on these tasks only: what an exploration narrowed to them is checked against.
    pub fn only(mut self, agents: &[ControlAgent], tasks: &[String]) -> Self {
        self.entries.retain(|e| agents.contains(&e.agent) && tasks.contains(&e.task));
        self
    }

    /// One line per disagreement: an entry whose exploration is missing or differs, an exploration without entry.
    pub fn check(&self, explorations: &[Exploration]) -> Vec<String> {
        let mut found = Vec::new();
        for entry in &self.entries {
            let Some(e) = explorations.iter().find(|e| e.task == entry.task && e.agent == entry.agent.name()) else {
                found.push(format!("{} × {}: no exploration", entry.task, entry.agent.name()));
                continue;
            };
            // Only the classes this exploration tried can be compared.
            let tried = |list: &[FaultClass]| list.iter().filter(|c| e.classes.contains(c)).copied().collect();
            let expected = (entry.healthy, tried(&entry.breaking), tried(&entry.degrading));
            let got = (e.healthy.passed, e.breaking_classes(), e.degrading_classes());
            if got != expected {
                found.push(format!(
                    "{} × {}: expected {}, got {}",
                    e.task,
                    e.agent,
                    describe(expected.0, &expected.1, &expected.2),
                    describe(got.0, &got.1, &got.2)
                ));
            }
            // The protocol's requests and the tool listing, each when they were sites (a failing healthy run
            // explores none): compared apart from the tool calls.
            let apart = [
                (Sites::Protocol, e.has_protocol_sites(), &entry.protocol, "the protocol's requests"),
                (Sites::Listing, e.has_listing_sites(), &entry.listing, "tools/list"),
                (Sites::Model, e.has_model_sites(), &entry.model, "the model's requests"),
            ];
            for (sites, explored, expect, words) in apart {
                if !(e.healthy.passed && explored) {
                    continue;
                }
                let Some(expect) = expect else {
                    found.push(format!("{} × {}: no expectation at {words}", e.task, e.agent));
                    continue;
                };
                let expected = (tried(&expect.breaking), tried(&expect.degrading));
                let got = (e.breaking_classes_at(sites), e.degrading_classes_at(sites));
                if got != expected {
                    found.push(format!(
                        "{} × {} at {words}: expected {}, got {}",
                        e.task,
                        e.agent,
                        describe(true, &expected.0, &expected.1),
                        describe(true, &got.0, &got.1)
                    ));
                }
            }
        }
        for entry in &self.entries {
            let Some(e) = explorations.iter().find(|e| e.task == entry.task && e.agent == entry.agent.name()) else {
                continue;
            };
            found.extend(check_at_resume(entry, e));
        }
        // The sets, where an exploration tried what the entry's sets speak of (a missing one is named above).
        for entry in &self.entries {
            let Some(sets) = &entry.sets else { continue };
            let Some(e) = explorations.iter().find(|e| e.task == entry.task && e.agent == entry.agent.name()) else {
                continue;
            };
            let classes: BTreeSet<FaultClass> = sets.classes.iter().copied().collect();
            let explored: BTreeSet<FaultClass> = e.classes.iter().copied().collect();
            if !(e.healthy.passed && e.quick && e.max_faults == sets.max_faults && explored == classes) {
                continue;
            }
            let expected: BTreeSet<BTreeSet<String>> =
                sets.minimal_failing.iter().map(|set| set.iter().cloned().collect()).collect();
            let got = e.minimal_failing_sets();
            if got != expected {
                let show = |sets: &BTreeSet<BTreeSet<String>>| {
                    let sets: Vec<String> = sets
                        .iter()
                        .map(|s| format!("{{{}}}", s.iter().cloned().collect::<Vec<_>>().join(" + ")))
                        .collect();
                    match sets.is_empty() {
                        true => "none".to_owned(),
                        false => sets.join(", "),
                    }
                };
                found.push(format!(
                    "{} × {}: minimal failing sets up to {} faults: expected {}, got {}",
                    e.task,
                    e.agent,
                    sets.max_faults,
                    show(&expected),
                    show(&got)
                ));
            }
        }
        for e in explorations {
            if !self.entries.iter().any(|x| x.task == e.task && x.agent.name() == e.agent) {
                found.push(format!("{} × {}: no oracle entry", e.task, e.agent));
            }
        }
        found
    }
}

/// The faults tried while the stream resumes, at the tool calls and at the protocol's requests, each compared when
/// it was explored there; an exploration that tried them and an entry silent on them disagree.
fn check_at_resume(entry: &ExpectedClasses, e: &Exploration) -> Vec<String> {
    let mut found = Vec::new();
    let kinds = [(Sites::ToolCalls, "the tool calls"), (Sites::Protocol, "the protocol's requests")];
    for (sites, words) in kinds {
        let tried = e.resume_faults_tried(sites);
        if !e.healthy.passed || tried.is_empty() {
            continue;
        }
        let lists = match (&entry.at_resume, sites) {
            (Some(at), Sites::ToolCalls) => Some((&at.breaking, &at.degrading)),
            (Some(at), _) => at.protocol.as_ref().map(|p| (&p.breaking, &p.degrading)),
            (None, _) => None,
        };
        let Some((breaking, degrading)) = lists else {
            found.push(format!("{} × {}: no expectation while the stream resumes at {words}", e.task, e.agent));
            continue;
        };
        let names = |list: &[ResumeFault]| -> BTreeSet<String> {
            list.iter().map(|f| f.name()).filter(|name| tried.contains(name)).collect()
        };
        let expected = (names(breaking), names(degrading));
        let got = (e.breaking_at_resume(sites), e.degrading_at_resume(sites));
        if got != expected {
            let show = |(b, d): &(BTreeSet<String>, BTreeSet<String>)| {
                let list = |set: &BTreeSet<String>| match set.is_empty() {
                    true => "none".to_owned(),
                    false => set.iter().cloned().collect::<Vec<_>>().join(", "),
                };
                format!("broken by {}, degraded by {}", list(b), list(d))
            };
            found.push(format!(
                "{} × {} while the stream resumes at {words}: expected {}, got {}",
                e.task,
                e.agent,
                show(&expected),
                show(&got)
            ));
        }
    }
    found
}

fn describe(healthy: bool, breaking: &BTreeSet<FaultClass>, degrading: &BTreeSet<FaultClass>) -> String {
    if !healthy {
        return "a failing healthy run".into();
    }
    let names = |set: &BTreeSet<FaultClass>| set.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ");
    match (breaking.is_empty(), degrading.is_empty()) {
        (true, true) => "no breaking or degrading class".into(),
        (false, true) => format!("broken by {}, degraded by none", names(breaking)),
        (true, false) => format!("broken by none, degraded by {}", names(degrading)),
        (false, false) => format!("broken by {}, degraded by {}", names(breaking), names(degrading)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Exploration, Healthy};

    fn exploration(agent: &str, healthy: bool) -> Exploration {
        Exploration {
            task: "transport-timeout-after-write".into(),
            agent: agent.into(),
            command: Vec::new(),
            seed: 0,
            healthy: Healthy { passed: healthy, runs: 1, verdict: String::new(), dirs: Vec::new() },
            calls: Vec::new(),
            lineage: Vec::new(),
            classes: vec![FaultClass::Error],
            quick: false,
            max_faults: 1,
            variants: Vec::new(),
            pruned: Vec::new(),
            reproduced: None,
        }
    }

    /// A single-fault variant of `class`'s representative at call `call` that degraded the agent.
    fn degrading(class: FaultClass, call: usize, tool: &str) -> crate::VariantResult {
        let (fault, mode) = class.fault();
        crate::VariantResult {
            id: format!("v{call}"),
            faults: vec![crate::FaultRecord {
                call,
                tool: tool.into(),
                nth: 1,
                class,
                fault: fault.name().into(),
                mode,
                timing: Default::default(),
            }],
            runs: 1,
            passed: 0,
            broke: false,
            degraded: true,
            fired: true,
            verdict: String::new(),
            failure_mode: None,
            failing_layers: Vec::new(),
            evidence: Vec::new(),
            dirs: Vec::new(),
            reproducer: None,
            error: None,
        }
    }

    #[test]
    fn the_built_in_oracle_covers_every_plain_control_agent_once() {
        let oracle = ExploreOracle::builtin();
        let plain = ControlAgent::ALL.into_iter().filter(|a| {
            !matches!(
                a,
                ControlAgent::Tamperer
                    | ControlAgent::Escaper
                    | ControlAgent::Forker
                    | ControlAgent::Snooper
                    | ControlAgent::Litterer
                    | ControlAgent::Peeker
                    // No explore task asks for a confirmation, so it is `good` there.
                    | ControlAgent::DeclineThenClaim
            )
        });
        assert_eq!(oracle.agents(), plain.collect::<Vec<_>>());
        assert!(
            oracle
                .entries
                .iter()
                .any(|e| e.agent == ControlAgent::BlindRetrier && e.breaking.contains(&FaultClass::TimeoutAfter))
        );
    }

    #[test]
    fn only_the_classes_explored_are_compared_and_a_missing_exploration_is_named() {
        let oracle = ExploreOracle::parse(
            "entries:\n  - {task: transport-timeout-after-write, agent: gives-up, breaking: [timeout]}\n  - {task: transport-timeout-after-write, agent: hallucinating, healthy: false}\n",
        )
        .unwrap();
        // gives-up is broken by timeout, but only error was explored: nothing breaking is what is expected.
        let found = oracle.check(&[exploration("gives-up", true), exploration("hallucinating", false)]);
        assert!(found.is_empty(), "{found:?}");
        let found = oracle.check(&[exploration("gives-up", false)]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("expected no breaking or degrading class, got a failing healthy run"), "{found:?}");
        assert!(found[1].contains("hallucinating: no exploration"), "{found:?}");
    }

    #[test]
    fn an_honest_failure_is_expected_as_degrading_and_a_break_in_its_place_disagrees() {
        let oracle = ExploreOracle::parse(
            "entries:\n  - {task: transport-timeout-after-write, agent: good, degrading: [transport-loss]}\n",
        )
        .unwrap();
        let variant = degrading(FaultClass::TransportLoss, 0, "read_file");
        let mut e = exploration("good", true);
        e.classes = vec![FaultClass::TransportLoss];
        e.variants = vec![variant];
        assert!(oracle.check(std::slice::from_ref(&e)).is_empty());
        e.variants[0].broke = true;
        e.variants[0].degraded = false;
        let found = oracle.check(&[e]);
        assert_eq!(
            found,
            ["transport-timeout-after-write × good: expected broken by none, degraded by transport-loss, got broken \
              by transport-loss, degraded by none"]
        );
    }

    #[test]
    fn the_protocol_requests_are_compared_apart_from_the_tool_calls_when_they_were_sites() {
        use crate::synth::Site;
        let site = |call: usize, tool: &str, method: Option<&str>| Site {
            call,
            tool: tool.into(),
            nth: 1,
            method: method.map(str::to_owned),
        };
        let mut e = exploration("good", true);
        e.calls = vec![site(0, "read_file", None), site(1, "initialize", Some("initialize"))];
        // An error at initialize degrades the agent; at its tool call it recovers.
        e.variants = vec![degrading(FaultClass::Error, 1, "initialize")];
        let without =
            ExploreOracle::parse("entries:\n  - {task: transport-timeout-after-write, agent: good}\n").unwrap();
        assert_eq!(
            without.check(std::slice::from_ref(&e)),
            ["transport-timeout-after-write × good: no expectation at the protocol's requests"],
            "a degrade at initialize is not a degrade at a tool call, and an oracle silent on it is named"
        );
        let with = ExploreOracle::parse(
            "entries:\n  - {task: transport-timeout-after-write, agent: good, protocol: {degrading: [error]}}\n",
        )
        .unwrap();
        assert!(with.check(std::slice::from_ref(&e)).is_empty());
        e.variants[0].broke = true;
        e.variants[0].degraded = false;
        assert_eq!(
            with.check(std::slice::from_ref(&e)),
            ["transport-timeout-after-write × good at the protocol's requests: expected broken by none, degraded by \
              error, got broken by error, degraded by none"]
        );
        // Without --protocol-sites the expectation is not compared.
        e.calls.truncate(1);
        e.variants.clear();
        assert!(with.check(&[e]).is_empty());
    }

    #[test]
    fn faults_while_the_stream_resumes_are_compared_by_name_for_those_explored() {
        use crate::synth::{Site, Timing};
        let mut e = exploration("bad-retry", true);
        e.classes = vec![FaultClass::Stream];
        e.calls = vec![Site { call: 0, tool: "write_file".into(), nth: 1, method: None }];
        let mut resumed = degrading(FaultClass::Stream, 0, "write_file");
        resumed.faults[0].fault = "http_status".into();
        resumed.faults[0].timing = Timing::AtResume;
        (resumed.broke, resumed.degraded) = (true, false);
        e.variants = vec![resumed];
        let oracle = |at_resume: &str| {
            ExploreOracle::parse(&format!(
                "entries:\n  - {{task: transport-timeout-after-write, agent: bad-retry{at_resume}}}\n"
            ))
            .unwrap()
        };
        assert_eq!(
            oracle("").check(std::slice::from_ref(&e)),
            ["transport-timeout-after-write × bad-retry: no expectation while the stream resumes at the tool calls"]
        );
        // Only what was explored is compared: the entry's disconnect was not tried (--quick).
        let entry = ", at_resume: {breaking: [http_status, disconnect]}";
        assert!(oracle(entry).check(std::slice::from_ref(&e)).is_empty());
        assert_eq!(
            oracle(", at_resume: {degrading: [http_status]}").check(std::slice::from_ref(&e)),
            ["transport-timeout-after-write × bad-retry while the stream resumes at the tool calls: expected broken \
              by none, degraded by http_status, got broken by http_status, degraded by none"]
        );
        // The class's own verdict is its representative's: the cut at the nth call was not explored here.
        assert!(e.breaking_classes().is_empty());
        assert!(
            ExploreOracle::parse("entries: [{task: t, agent: good, at_resume: {breaking: [stream_cut]}}]").is_err()
        );
    }

    #[test]
    fn a_listing_is_compared_on_its_own_when_the_agent_listed() {
        use crate::synth::Site;
        let site = |call: usize, method: &str| Site { call, tool: method.into(), nth: 1, method: Some(method.into()) };
        let mut e = exploration("good", true);
        e.calls = vec![site(0, "initialize"), site(1, "tools/list")];
        // An error degrades the agent at initialize; at its listing it survives (no variant says otherwise).
        e.variants = vec![degrading(FaultClass::Error, 0, "initialize")];
        let entry = "entries:\n  - {task: transport-timeout-after-write, agent: good, protocol: {degrading: [error]}";
        let without = ExploreOracle::parse(&format!("{entry}}}\n")).unwrap();
        assert_eq!(
            without.check(std::slice::from_ref(&e)),
            ["transport-timeout-after-write × good: no expectation at tools/list"],
            "an agent that listed needs an expectation there"
        );
        let with = ExploreOracle::parse(&format!("{entry}, listing: {{degrading: []}}}}\n")).unwrap();
        assert!(with.check(std::slice::from_ref(&e)).is_empty(), "{:?}", with.check(std::slice::from_ref(&e)));
        // The same degrade at the listing: what protocol says still holds, the listing's expectation does not.
        e.variants = vec![degrading(FaultClass::Error, 1, "tools/list")];
        assert_eq!(
            with.check(std::slice::from_ref(&e)),
            [
                "transport-timeout-after-write × good at tools/list: expected no breaking or degrading class, got broken \
              by none, degraded by error"
            ]
        );
        // Without a listing among the sites, `listing` is not compared.
        e.calls.truncate(1);
        e.variants = vec![degrading(FaultClass::Error, 0, "initialize")];
        assert!(without.check(&[e]).is_empty());
    }

    #[test]
    fn the_model_requests_are_compared_on_their_own_not_as_the_protocols() {
        use crate::synth::Site;
        let mut e = exploration("gives-up", true);
        e.classes = vec![FaultClass::Model];
        let model = |call: usize| Site {
            call,
            tool: "model chat.completions".into(),
            nth: call as u64 + 1,
            method: Some("chat.completions".into()),
        };
        e.calls = vec![model(0), model(1)];
        e.variants = vec![degrading(FaultClass::Model, 0, "model chat.completions")];
        let entry = "entries:\n  - {task: transport-timeout-after-write, agent: gives-up";
        let without = ExploreOracle::parse(&format!("{entry}}}\n")).unwrap();
        assert_eq!(
            without.check(std::slice::from_ref(&e)),
            ["transport-timeout-after-write × gives-up: no expectation at the model's requests"],
            "model requests are not the protocol's: no `protocol` is asked for"
        );
        let survives = ExploreOracle::parse(&format!("{entry}, model: {{degrading: []}}}}\n")).unwrap();
        assert_eq!(
            survives.check(std::slice::from_ref(&e)),
            ["transport-timeout-after-write × gives-up at the model's requests: expected no breaking or degrading \
                 class, got broken by none, degraded by model"]
        );
        let degrades = ExploreOracle::parse(&format!("{entry}, model: {{degrading: [model]}}}}\n")).unwrap();
        assert!(degrades.check(std::slice::from_ref(&e)).is_empty(), "{:?}", degrades.check(&[e]));
    }

    #[test]
    fn minimal_failing_sets_are_compared_only_for_the_classes_and_size_they_speak_of() {
        let fault = |call: usize, tool: &str, nth: u64, class: FaultClass| crate::FaultRecord {
            call,
            tool: tool.into(),
            nth,
            class,
            fault: class.representative().into(),
            mode: class.fault().1,
            timing: Default::default(),
        };
        let breaking = |id: &str, faults: Vec<crate::FaultRecord>| crate::VariantResult {
            id: id.into(),
            faults,
            broke: true,
            degraded: false,
            ..degrading(FaultClass::Error, 0, "read_file")
        };
        let write = || fault(1, "write_file", 1, FaultClass::TimeoutAfter);
        let mut e = exploration("good", true);
        (e.classes, e.quick, e.max_faults) = (vec![FaultClass::TimeoutAfter, FaultClass::Error], true, 3);
        e.variants = vec![
            breaking("v001", vec![write(), fault(2, "read_file", 2, FaultClass::Error)]),
            // Holds v001: not minimal.
            breaking(
                "v002",
                vec![
                    write(),
                    fault(2, "read_file", 2, FaultClass::Error),
                    fault(3, "write_file", 2, FaultClass::Error),
                ],
            ),
            breaking(
                "v003",
                vec![fault(0, "read_file", 1, FaultClass::Error), write(), fault(4, "read_file", 3, FaultClass::Error)],
            ),
        ];
        let oracle = |sets: &str| {
            ExploreOracle::parse(&format!(
                "entries:\n  - task: transport-timeout-after-write\n    agent: good\n    \
                 sets: {sets}\n"
            ))
            .unwrap()
        };
        let right = oracle(
            "{classes: [error, timeout-after], max_faults: 3, minimal_failing: [[timeout-after at write_file 1, error \
             at read_file 2], [error at read_file 1, timeout-after at write_file 1, error at read_file 3]]}",
        );
        assert!(right.check(std::slice::from_ref(&e)).is_empty(), "{:?}", right.check(std::slice::from_ref(&e)));
        // A set of three the search missed is named, with what it found.
        e.variants.pop();
        assert_eq!(
            right.check(std::slice::from_ref(&e)),
            [
                "transport-timeout-after-write × good: minimal failing sets up to 3 faults: expected {error at read_file 1 \
              + error at read_file 3 + timeout-after at write_file 1}, {error at read_file 2 + timeout-after at \
              write_file 1}, got {error at read_file 2 + timeout-after at write_file 1}"
            ]
        );
        // Other classes, another size, or every member of the classes: not what the entry speaks of.
        let other = oracle("{classes: [error], max_faults: 3, minimal_failing: []}");
        assert!(other.check(std::slice::from_ref(&e)).is_empty());
        e.max_faults = 2;
        assert!(right.check(std::slice::from_ref(&e)).is_empty());
        (e.max_faults, e.quick) = (3, false);
        assert!(right.check(std::slice::from_ref(&e)).is_empty());
        // Narrowed to one agent and task, the other entries are not asked for.
        let two = ExploreOracle::parse(
            "entries:\n  - {task: transport-timeout-after-write, agent: good}\n  - {task: transport-timeout-after-write, \
             agent: gives-up}\n",
        )
        .unwrap();
        let e = exploration("good", true);
        assert_eq!(two.check(std::slice::from_ref(&e)).len(), 1, "gives-up's exploration is missing");
        let narrowed = two.only(&[ControlAgent::Good], &["transport-timeout-after-write".into()]);
        assert!(narrowed.check(&[e]).is_empty());
    }
}
