//! The batch report: every run with its verdict and tool calls, and the statistics over them: pass rates with
//! 95% Wilson intervals per task, per fault category and per agent, pass^k over repeats, and an honesty note when
//! repeats could not differ. The report model and its statistics live here; each format has a writer of its own:
//! [`markdown`], [`html`] (the self-contained page) and [`compare`] (two reports side by side).

use crate::runner::RunRecord;
use crate::task::Category;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod compare;
pub mod html;
mod markdown;

pub use markdown::markdown;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub meta: Meta,
    /// The shard of the batch this report covers (`faultlab eval --shard I/N`); absent for a whole batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::merge::Shard>,
    /// What `faultlab report merge` joined into this report; absent for a report `faultlab eval` wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::merge::MergeInfo>,
    /// How the verdicts compare with an oracle (`faultlab eval --controls`, `--oracle`): the headline of a batch
    /// of control agents, most of which fail on purpose. Absent when no oracle was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleAgreement>,
    /// Why the batch stopped before every run ended (`interrupted by SIGINT`): the report holds only the runs
    /// that ended. Absent for a batch that ran to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    pub stats: Stats,
    pub runs: Vec<RunRecord>,
}

/// Verdicts checked against an oracle, and how many were the ones it expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OracleAgreement {
    pub checked: usize,
    pub as_expected: usize,
}

impl OracleAgreement {
    /// `91 of 91 verdicts as expected`.
    pub fn summary(&self) -> String {
        format!("{} of {} verdicts as expected", self.as_expected, self.checked)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub faultlab: String,
    pub seed: u64,
    pub repeat: u32,
    pub jobs: usize,
    /// Wall time of the whole batch, in milliseconds. For a merged report: the longest input's (the elapsed time
    /// when the shards ran side by side); `merged.wall_ms_sum` in the report has the total.
    pub wall_ms: u64,
}

/// A pass rate with its 95% Wilson score interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub passed: u32,
    pub runs: u32,
    pub rate: f64,
    pub low: f64,
    pub high: f64,
}

impl Rate {
    pub fn new(passed: u32, runs: u32) -> Self {
        let (low, high) = wilson(passed, runs);
        let rate = if runs == 0 { 0.0 } else { f64::from(passed) / f64::from(runs) };
        Self { passed, runs, rate, low, high }
    }
}

/// The 95% Wilson score interval for `passed` successes in `runs` trials (z = 1.96); (0, 0) for no runs.
pub fn wilson(passed: u32, runs: u32) -> (f64, f64) {
    if runs == 0 {
        return (0.0, 0.0);
    }
    let (n, p, z) = (f64::from(runs), f64::from(passed) / f64::from(runs), 1.96_f64);
    let denominator = 1.0 + z * z / n;
    let centre = p + z * z / (2.0 * n);
    let margin = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (((centre - margin) / denominator).max(0.0), ((centre + margin) / denominator).min(1.0))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stats {
    pub overall: Rate,
    pub by_task: BTreeMap<String, Rate>,
    pub by_category: BTreeMap<String, Rate>,
    /// Catalogue fault → rate over the runs whose task has that fault in its rules.
    #[serde(default)]
    pub by_fault: BTreeMap<String, Rate>,
    pub by_agent: BTreeMap<String, Rate>,
    /// agent → category → rate (the heatmap).
    pub heatmap: BTreeMap<String, BTreeMap<String, Rate>>,
    /// pass^k: the share of (task, agent) pairs whose every one of k repeats passed (k = the repeat count).
    pub pass_hat_k: Option<PassHatK>,
    /// Recovery outcome → count.
    pub outcomes: BTreeMap<String, u32>,
    pub data_quality: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PassHatK {
    pub k: u32,
    pub pairs: u32,
    pub all_passed: u32,
    pub rate: f64,
}

impl PassHatK {
    /// `4/13 (task, agent) pairs passed every one of the 3 repeats (31%)`, as the reports say it.
    pub fn summary(&self) -> String {
        let (k, all, pairs, percent) = (self.k, self.all_passed, self.pairs, self.rate * 100.0);
        format!("{all}/{pairs} (task, agent) pairs passed every one of the {k} repeats ({percent:.0}%)")
    }
}

impl Report {
    pub fn new(meta: Meta, runs: Vec<RunRecord>) -> Self {
        // A run whose set-up failed says nothing about the agent: it is counted apart, not in any rate.
        let graded: Vec<RunRecord> = runs.iter().filter(|r| r.error.is_none()).cloned().collect();
        let stats = stats(&graded, meta.repeat);
        Self { meta, shard: None, merged: None, oracle: None, incomplete: None, stats, runs }
    }
}

fn stats(runs: &[RunRecord], repeat: u32) -> Stats {
    let count = |filter: &dyn Fn(&RunRecord) -> bool| {
        let chosen: Vec<&RunRecord> = runs.iter().filter(|r| filter(r)).collect();
        Rate::new(chosen.iter().filter(|r| r.verdict.passed).count() as u32, chosen.len() as u32)
    };
    let mut by_task = BTreeMap::new();
    let mut by_agent = BTreeMap::new();
    let mut by_category = BTreeMap::new();
    let mut by_fault = BTreeMap::new();
    let mut heatmap: BTreeMap<String, BTreeMap<String, Rate>> = BTreeMap::new();
    let mut outcomes = BTreeMap::new();
    for run in runs {
        by_task.entry(run.task.clone()).or_insert_with(|| count(&|r| r.task == run.task));
        by_agent.entry(run.agent.clone()).or_insert_with(|| count(&|r| r.agent == run.agent));
        for fault in &run.faults {
            by_fault.entry(fault.clone()).or_insert_with(|| count(&|r| r.faults.contains(fault)));
        }
        let outcome = serde_json::to_value(run.verdict.recovery.outcome).ok();
        let outcome = outcome.as_ref().and_then(|v| v.as_str()).unwrap_or_default().to_owned();
        *outcomes.entry(outcome).or_insert(0) += 1;
    }
    for &category in Category::ALL {
        let rate = count(&|r| r.categories.contains(&category));
        if rate.runs > 0 {
            by_category.insert(category.name().to_owned(), rate);
        }
        for agent in by_agent.keys() {
            let rate = count(&|r| &r.agent == agent && r.categories.contains(&category));
            if rate.runs > 0 {
                heatmap.entry(agent.clone()).or_default().insert(category.name().to_owned(), rate);
            }
        }
    }
    let mut pairs: BTreeMap<(String, String), Vec<&RunRecord>> = BTreeMap::new();
    for run in runs {
        pairs.entry((run.task.clone(), run.agent.clone())).or_default().push(run);
    }
    let pass_hat_k = (repeat > 1).then(|| {
        let all_passed = pairs.values().filter(|runs| runs.iter().all(|r| r.verdict.passed)).count() as u32;
        let n = pairs.len() as u32;
        PassHatK {
            k: repeat,
            pairs: n,
            all_passed,
            rate: if n == 0 { 0.0 } else { f64::from(all_passed) / f64::from(n) },
        }
    });
    let mut data_quality = Vec::new();
    if repeat > 1 {
        let identical = pairs
            .values()
            .filter(|runs| {
                runs.windows(2).all(|w| {
                    w[0].verdict.passed == w[1].verdict.passed
                        && w[0].verdict.recovery.outcome == w[1].verdict.recovery.outcome
                })
            })
            .count();
        if identical == pairs.len() {
            data_quality.push(format!(
                "Every (task, agent) pair gave the same verdict in all {repeat} repeats: the runs are deterministic, so \
                 the {} runs are not {} independent samples and the intervals overstate the precision. Vary --seed \
                 or use probabilistic fault rules for independent samples.",
                runs.len(),
                runs.len()
            ));
        }
    }
    if runs.len() < 30 {
        data_quality.push(format!("Only {} runs: the intervals are wide.", runs.len()));
    }
    Stats {
        overall: count(&|_| true),
        by_task,
        by_category,
        by_fault,
        by_agent,
        heatmap,
        pass_hat_k,
        outcomes,
        data_quality,
    }
}

/// `83% (5/6; 95% CI 44–97%)`.
pub(crate) fn pct(rate: &Rate) -> String {
    format!(
        "{:.0}% ({}/{}; 95% CI {:.0}–{:.0}%)",
        rate.rate * 100.0,
        rate.passed,
        rate.runs,
        rate.low * 100.0,
        rate.high * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_the_textbook_values() {
        // 8/10: the Wilson 95% interval is 0.490–0.943.
        let (low, high) = wilson(8, 10);
        assert!((low - 0.4902).abs() < 1e-3 && (high - 0.9433).abs() < 1e-3, "{low} {high}");
        let (low, high) = wilson(0, 5);
        assert!(low == 0.0 && (high - 0.4345).abs() < 1e-3, "{high}");
        assert_eq!(wilson(0, 0), (0.0, 0.0));
    }
}
