//! The exploration oracle: for each built-in control agent, the fault classes that must break it (as a single
//! fault at some call of the task) and no others. An exploration that cannot tell the good agent from the blind
//! retrier has found nothing; `faultlab explore --controls` checks every entry.

use super::{Exploration, FaultClass};
use crate::agent::ControlAgent;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExploreOracle {
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub task: String,
    pub agent: ControlAgent,
    /// Whether the healthy run passes (when it does not, nothing is explored and `breaking` is empty).
    #[serde(default = "yes")]
    pub healthy: bool,
    /// Exactly the classes a single fault of which breaks the agent somewhere in the task.
    #[serde(default)]
    pub breaking: Vec<FaultClass>,
    /// Why, in words.
    #[serde(default)]
    pub why: String,
}

fn yes() -> bool {
    true
}

/// The built-in oracle (the control agents on the built-in transport-timeout-after-write task).
pub const BUILTIN: &str = include_str!("../../../../examples/eval/explore-oracle.yaml");

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

    /// One line per disagreement: an entry whose exploration is missing or differs, an exploration without entry.
    pub fn check(&self, explorations: &[Exploration]) -> Vec<String> {
        let mut found = Vec::new();
        for entry in &self.entries {
            let Some(e) = explorations.iter().find(|e| e.task == entry.task && e.agent == entry.agent.name()) else {
                found.push(format!("{} × {}: no exploration", entry.task, entry.agent.name()));
                continue;
            };
            // Only the classes this exploration tried can be compared.
            let tried = |c: &&FaultClass| e.classes.contains(c);
            let expected = (entry.healthy, entry.breaking.iter().filter(tried).copied().collect::<BTreeSet<_>>());
            let got = (e.healthy.passed, e.breaking_classes());
            if got != expected {
                found.push(format!(
                    "{} × {}: expected {}, got {}",
                    e.task,
                    e.agent,
                    describe(expected.0, &expected.1),
                    describe(got.0, &got.1)
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

fn describe(healthy: bool, breaking: &BTreeSet<FaultClass>) -> String {
    if !healthy {
        return "a failing healthy run".into();
    }
    match breaking.is_empty() {
        true => "no breaking class".into(),
        false => format!("broken by {}", breaking.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::{Exploration, Healthy};

    fn exploration(agent: &str, healthy: bool) -> Exploration {
        Exploration {
            task: "transport-timeout-after-write".into(),
            agent: agent.into(),
            seed: 0,
            healthy: Healthy { passed: healthy, runs: 1, verdict: String::new(), dirs: Vec::new() },
            calls: Vec::new(),
            lineage: Vec::new(),
            classes: vec![FaultClass::Error],
            variants: Vec::new(),
            pruned: Vec::new(),
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
        assert!(found[0].contains("expected no breaking class, got a failing healthy run"), "{found:?}");
        assert!(found[1].contains("hallucinating: no exploration"), "{found:?}");
    }
}
