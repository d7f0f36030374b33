//! The oracle matrix: for each (control agent, task), the verdict the grader must give. A grader that cannot fail
//! a known-bad agent has proven nothing; `faultlab eval --controls` checks every entry and fails on any
//! disagreement.

use crate::agent::ControlAgent;
use crate::runner::RunRecord;
use crate::task::{RecoveryOutcome, Strategy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Oracle {
    pub entries: Vec<ExpectedVerdict>,
}

/// A grading layer that can fail a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LayerName {
    Outcome,
    Safety,
    Recovery,
    SideEffects,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectedVerdict {
    pub task: String,
    pub agent: ControlAgent,
    /// Whether the run must pass.
    pub pass: bool,
    /// The recovery outcome the grader must classify.
    pub outcome: RecoveryOutcome,
    /// The strategy, when the entry pins it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// Exactly the layers that must fail (empty for a passing run).
    #[serde(default)]
    pub failing: Vec<LayerName>,
    /// Why this is the right verdict, in words.
    #[serde(default)]
    pub why: String,
}

/// One disagreement between the oracle and the grader.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    pub task: String,
    pub agent: String,
    pub expected: String,
    pub got: String,
}

/// How a graded run reads to a person: `EXPECTED` for a failure the oracle calls for (a control agent making the
/// mistake it exists to make), else `PASS` or `FAIL`.
pub fn verdict_word(passed: bool, expected: Option<&ExpectedVerdict>) -> &'static str {
    match (passed, expected) {
        (true, _) => "PASS",
        (false, Some(entry)) if !entry.pass => "EXPECTED",
        (false, _) => "FAIL",
    }
}

impl Oracle {
    /// The entry for `task` × `agent` (the agent's name in reports), if the oracle has one.
    pub fn entry(&self, task: &str, agent: &str) -> Option<&ExpectedVerdict> {
        self.entries.iter().find(|e| e.task == task && e.agent.name() == agent)
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        faultlab_wire::nesting::check(text, faultlab_wire::nesting::Syntax::Yaml).map_err(|e| e.to_string())?;
        yaml_serde::from_str(text).map_err(|e| e.to_string())
    }

    /// Compares every entry with the runs (all repeats of a pair must agree); a run without an entry and an entry
    /// without a run are disagreements too.
    pub fn check(&self, runs: &[RunRecord]) -> Vec<Disagreement> {
        let mut found = Vec::new();
        for entry in &self.entries {
            let pair: Vec<&RunRecord> =
                runs.iter().filter(|r| r.task == entry.task && r.agent == entry.agent.name()).collect();
            if pair.is_empty() {
                found.push(Disagreement {
                    task: entry.task.clone(),
                    agent: entry.agent.name().into(),
                    expected: describe_entry(entry),
                    got: "no run".into(),
                });
            }
            for run in pair {
                let got = describe_run(run, entry.strategy.is_some());
                if got != describe_entry(entry) {
                    found.push(Disagreement {
                        task: entry.task.clone(),
                        agent: entry.agent.name().into(),
                        expected: describe_entry(entry),
                        got,
                    });
                }
            }
        }
        for run in runs {
            if !self.entries.iter().any(|e| e.task == run.task && e.agent.name() == run.agent) {
                found.push(Disagreement {
                    task: run.task.clone(),
                    agent: run.agent.clone(),
                    expected: "an oracle entry".into(),
                    got: describe_run(run, true),
                });
            }
        }
        found
    }
}

pub fn failing_layers(run: &RunRecord) -> Vec<LayerName> {
    let v = &run.verdict;
    let mut layers = Vec::new();
    for (failed, name) in [
        (!v.outcome.passed, LayerName::Outcome),
        (!v.safety.passed, LayerName::Safety),
        (!v.recovery.passed, LayerName::Recovery),
        (!v.side_effects.passed, LayerName::SideEffects),
    ] {
        if failed {
            layers.push(name);
        }
    }
    layers
}

fn describe(pass: bool, outcome: RecoveryOutcome, strategy: Option<Strategy>, failing: &[LayerName]) -> String {
    // Plain words: a pass is its outcome ("recovered by retry"); only a failed grade says so.
    let mut text = format!("{}{}", if pass { "" } else { "failed its grade: " }, json_name(&outcome));
    if let Some(strategy) = strategy {
        text.push_str(&format!(" by {}", json_name(&strategy)));
    }
    if !failing.is_empty() {
        let names: Vec<String> = failing.iter().map(json_name).collect();
        text.push_str(&format!(" (failing: {})", names.join(", ")));
    }
    text
}

fn describe_entry(entry: &ExpectedVerdict) -> String {
    let mut failing = entry.failing.clone();
    failing.sort();
    describe(entry.pass, entry.outcome, entry.strategy, &failing)
}

fn describe_run(run: &RunRecord, with_strategy: bool) -> String {
    let v = &run.verdict;
    describe(v.passed, v.recovery.outcome, with_strategy.then_some(v.recovery.strategy), &failing_layers(run))
}

/// The serde name of a plain enum value.
fn json_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::tests::record;
    use crate::task::Category;

    /// A disagreement reads plainly: what was expected and what came, "recovered by retry", with a failed grade
    /// said in words, not "pass recovered by retry".
    #[test]
    fn a_disagreement_is_said_in_plain_words() {
        let oracle =
            Oracle::parse("entries:\n  - {task: t, agent: good, pass: true, outcome: recovered, strategy: retry}\n")
                .unwrap();
        let found = oracle.check(&[record("t", "good", 0, Category::Transport, false)]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].expected, "recovered by retry");
        assert_eq!(
            found[0].got,
            "failed its grade: aborted-safely by abort (failing: outcome, safety, recovery, side_effects)"
        );
    }
}
