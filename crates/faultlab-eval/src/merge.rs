//! Shards of a batch and joining their reports: `faultlab eval --shard I/N` runs one shard, `faultlab report
//! merge` joins the shard reports into the report the whole batch would have written.
//!
//! A shard is chosen by run index in batch order (see [`crate::batch`]), so every machine computes the same
//! partition from the same tasks, agents and `--repeat`; the merge restores that order and recomputes every
//! statistic from the joined runs (rates and intervals cannot be averaged across shards).

use crate::report::{Meta, Report};
use crate::runner::RunRecord;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Shard `index` of `count`, 1-based as on the command line (`--shard 2/4`) and in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The `(i, n)` of [`crate::batch::Batch::shard`]: 0-based index.
    pub fn zero_based(self) -> (u32, u32) {
        (self.index - 1, self.count)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = || format!("{text:?} is not I/N (shard I of N, 1-based, e.g. 2/4)");
        let (index, count) = text.split_once('/').ok_or_else(usage)?;
        let index: u32 = index.trim().parse().map_err(|_| usage())?;
        let count: u32 = count.trim().parse().map_err(|_| usage())?;
        if count == 0 {
            return Err(format!("{text}: N must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(format!(
                "{text}: I must be between 1 and {count} (shards count from 1; from a 0-based index such as \
                 JOB_COMPLETION_INDEX, pass $((JOB_COMPLETION_INDEX+1))/{count})"
            ));
        }
        Ok(Self { index, count })
    }
}

/// What a merged report was made from, in its `merged`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeInfo {
    /// The inputs' wall times added up: the machine time the batch took. The merged report's `meta.wall_ms` is
    /// the longest input's, the elapsed time when the shards ran side by side.
    pub wall_ms_sum: u64,
    pub inputs: Vec<MergeInput>,
    /// The differences `--force` merged anyway, in words (seeds, versions, repeat counts, missing shards).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forced: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeInput {
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    pub faultlab: String,
    pub seed: u64,
    pub runs: usize,
    pub wall_ms: u64,
}

/// One report to merge and the file it came from (for messages).
#[derive(Debug, Clone)]
pub struct Input {
    pub file: String,
    pub report: Report,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MergeError {
    #[error("no reports to merge")]
    Empty,
    /// Never overridable: a run counted twice skews every rate.
    #[error(
        "{task} × {agent} #{repeat} is in both {first} and {second} (the same shard twice, or overlapping batches)"
    )]
    Duplicate { task: String, agent: String, repeat: u32, first: String, second: String },
    #[error("{first} and {second} differ in {what} ({first_value} and {second_value}); merge anyway with --force")]
    Mismatch { what: &'static str, first: String, first_value: String, second: String, second_value: String },
    #[error("shard(s) {} of {count} missing (got {}); merge anyway with --force", join(missing), join(present))]
    MissingShards { count: u32, missing: Vec<u32>, present: Vec<u32> },
}

fn join(numbers: &[u32]) -> String {
    numbers.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// Joins the inputs' runs into one report with freshly computed statistics.
///
/// Refuses a (task, agent, repeat) present twice, always. Refuses inputs with different seeds, faultlab versions
/// or repeat counts, shards of different counts and missing shards (when every input is a shard), unless `force`;
/// forced differences are listed in `merged.forced`. Runs are put back in batch order.
pub fn merge(inputs: Vec<Input>, force: bool) -> Result<Report, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    let mut forced = Vec::new();
    let mut refuse = |error: MergeError| {
        if !force {
            return Err(error);
        }
        forced.push(error.to_string());
        Ok(())
    };
    type Field = (&'static str, fn(&Meta) -> String);
    let fields: [Field; 3] = [
        ("seed", |m| m.seed.to_string()),
        ("faultlab version", |m| m.faultlab.clone()),
        ("repeat count", |m| m.repeat.to_string()),
    ];
    for (what, value) in fields {
        if let Some(other) = inputs.iter().find(|i| value(&i.report.meta) != value(&first.report.meta)) {
            refuse(MergeError::Mismatch {
                what,
                first: first.file.clone(),
                first_value: value(&first.report.meta),
                second: other.file.clone(),
                second_value: value(&other.report.meta),
            })?;
        }
    }
    let shards: Option<Vec<(Shard, &str)>> =
        inputs.iter().map(|i| i.report.shard.map(|s| (s, i.file.as_str()))).collect();
    if let Some(shards) = shards {
        let (shard, file) = shards[0];
        if let Some((other, other_file)) = shards.iter().find(|(s, _)| s.count != shard.count) {
            refuse(MergeError::Mismatch {
                what: "shard count",
                first: file.into(),
                first_value: shard.to_string(),
                second: (*other_file).into(),
                second_value: other.to_string(),
            })?;
        } else {
            let present: BTreeSet<u32> = shards.iter().map(|(s, _)| s.index).collect();
            let missing: Vec<u32> = (1..=shard.count).filter(|i| !present.contains(i)).collect();
            if !missing.is_empty() {
                refuse(MergeError::MissingShards {
                    count: shard.count,
                    missing,
                    present: present.into_iter().collect(),
                })?;
            }
        }
    }

    let mut seen: HashMap<(&str, &str, u32), &str> = HashMap::new();
    for input in &inputs {
        for run in &input.report.runs {
            if let Some(first) = seen.insert((&run.task, &run.agent, run.repeat), &input.file) {
                return Err(MergeError::Duplicate {
                    task: run.task.clone(),
                    agent: run.agent.clone(),
                    repeat: run.repeat + 1,
                    first: first.into(),
                    second: input.file.clone(),
                });
            }
        }
    }

    let info = MergeInfo {
        // A merged input already holds its own inputs' sum: add that, not its elapsed time.
        wall_ms_sum: inputs
            .iter()
            .map(|i| i.report.merged.as_ref().map_or(i.report.meta.wall_ms, |m| m.wall_ms_sum))
            .sum(),
        inputs: inputs
            .iter()
            .map(|i| MergeInput {
                file: i.file.clone(),
                shard: i.report.shard,
                faultlab: i.report.meta.faultlab.clone(),
                seed: i.report.meta.seed,
                runs: i.report.runs.len(),
                wall_ms: i.report.meta.wall_ms,
            })
            .collect(),
        forced,
    };
    let meta = Meta {
        faultlab: first.report.meta.faultlab.clone(),
        seed: first.report.meta.seed,
        // Only differs under --force; pass^k then counts the larger k.
        repeat: inputs.iter().map(|i| i.report.meta.repeat).max().unwrap_or(1),
        jobs: inputs.iter().map(|i| i.report.meta.jobs).max().unwrap_or(1),
        wall_ms: inputs.iter().map(|i| i.report.meta.wall_ms).max().unwrap_or(0),
    };
    let runs = batch_order(inputs.into_iter().map(|i| i.report.runs).collect());
    Ok(Report { merged: Some(info), ..Report::new(meta, runs) })
}

/// The runs in batch order: task, then agent, then repeat. The task and agent orders are those of first
/// appearance when the inputs are read round-robin, one run of each in turn: shard i of n holds batch indices
/// i, i + n, i + 2n, …, so reading shards round-robin replays the batch exactly, and any other input order still
/// keeps every task's and agent's runs together.
fn batch_order(inputs: Vec<Vec<RunRecord>>) -> Vec<RunRecord> {
    let mut task_rank: BTreeMap<String, usize> = BTreeMap::new();
    let mut agent_rank: BTreeMap<String, usize> = BTreeMap::new();
    let longest = inputs.iter().map(Vec::len).max().unwrap_or(0);
    for position in 0..longest {
        for run in inputs.iter().filter_map(|runs| runs.get(position)) {
            let next = task_rank.len();
            task_rank.entry(run.task.clone()).or_insert(next);
            let next = agent_rank.len();
            agent_rank.entry(run.agent.clone()).or_insert(next);
        }
    }
    let mut runs: Vec<RunRecord> = inputs.into_iter().flatten().collect();
    runs.sort_by_key(|r| (task_rank[&r.task], agent_rank[&r.agent], r.repeat));
    runs
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::agent::ControlAgent;
    use crate::batch::Batch;
    use crate::runner::{AgentSpec, RunSettings};
    use crate::task::Category;
    use std::sync::Arc;

    /// A graded run with the fields the statistics read; the rest is empty.
    pub(crate) fn record(task: &str, agent: &str, repeat: u32, category: Category, passed: bool) -> RunRecord {
        RunRecord::sample(task, agent, repeat, category, passed)
    }

    pub(crate) fn meta(wall_ms: u64) -> Meta {
        Meta { faultlab: "0.1.0".into(), seed: 7, repeat: 3, jobs: 2, wall_ms }
    }

    fn batch(shard: Option<Shard>) -> Batch {
        Batch {
            tasks: crate::builtin::tasks().into_iter().map(Arc::new).collect(),
            agents: ControlAgent::ALL.into_iter().map(AgentSpec::Control).collect(),
            settings: RunSettings {
                repeat: 3,
                seed: Some(7),
                shard: shard.map(Shard::zero_based),
                ..RunSettings::new("out".into(), "faultlab".into())
            },
        }
    }

    /// The report of a batch (or one shard of it) whose runs pass by a fixed, uneven pattern, so that per-task,
    /// per-agent and pass^k statistics all differ between shards.
    fn report_of(shard: Option<Shard>, wall_ms: u64) -> Report {
        let runs = batch(shard)
            .specs()
            .iter()
            .map(|s| {
                let label = s.agent.label();
                let passed = !(s.task.id.len() + label.len() + s.repeat as usize).is_multiple_of(3);
                // The run's own categories: a task without a wire fault (the confirmation task) has none.
                let mut run = record(&s.task.id, &label, s.repeat, Category::Transport, passed);
                run.categories = s.task.categories();
                run
            })
            .collect();
        Report { shard, ..Report::new(meta(wall_ms), runs) }
    }

    fn input(file: &str, report: Report) -> Input {
        Input { file: file.into(), report }
    }

    fn shard(text: &str) -> Shard {
        text.parse().unwrap()
    }

    #[test]
    fn shards_parse_one_based_and_reject_what_is_out_of_range() {
        assert_eq!(shard("2/4"), Shard { index: 2, count: 4 });
        assert_eq!(shard("2/4").zero_based(), (1, 4));
        assert_eq!(shard("1/1").to_string(), "1/1");
        for bad in ["0/4", "5/4", "1/0", "0/0", "2", "a/4", "2/b", "-1/4", "2/4/6", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert!("0/4".parse::<Shard>().unwrap_err().contains("JOB_COMPLETION_INDEX+1"));
    }

    #[test]
    fn merging_every_shard_gives_the_unsharded_report() {
        let whole = report_of(None, 100);
        for n in [2u32, 3, 7] {
            let inputs: Vec<Input> = (1..=n)
                .map(|i| {
                    input(&format!("shard-{i}.json"), report_of(Some(Shard { index: i, count: n }), 10 * u64::from(i)))
                })
                .collect();
            assert!(inputs.iter().all(|i| i.report.runs.len() < whole.runs.len()));
            let merged = merge(inputs, false).unwrap();
            assert_eq!(json(&merged.stats), json(&whole.stats), "{n} shards");
            assert_eq!(json(&merged.runs), json(&whole.runs), "{n} shards: the runs come back in batch order");
            let info = merged.merged.as_ref().unwrap();
            assert_eq!(info.wall_ms_sum, (1..=u64::from(n)).map(|i| 10 * i).sum::<u64>());
            assert_eq!(merged.meta.wall_ms, 10 * u64::from(n), "the longest shard's wall time");
            assert_eq!(info.inputs.len(), n as usize);
            assert!(info.forced.is_empty());
        }
        // Inputs out of order still come back in batch order.
        let reversed: Vec<Input> =
            (1..=3).rev().map(|i| input(&format!("{i}"), report_of(Some(Shard { index: i, count: 3 }), 1))).collect();
        let merged = merge(reversed, false).unwrap();
        let order = |r: &Report| r.runs.iter().map(|r| (r.task.clone(), r.agent.clone(), r.repeat)).collect::<Vec<_>>();
        assert_eq!(order(&merged), order(&whole));
    }

    #[test]
    fn a_run_in_two_inputs_is_refused_naming_both_files_even_with_force() {
        let one = report_of(Some(shard("1/2")), 1);
        let two = report_of(Some(shard("2/2")), 1);
        let inputs =
            vec![input("a/report.json", one.clone()), input("b/report.json", two), input("c/report.json", one)];
        for force in [false, true] {
            let error = merge(inputs.clone(), force).unwrap_err();
            assert!(matches!(error, MergeError::Duplicate { .. }), "{error:?}");
            let text = error.to_string();
            assert!(text.contains("a/report.json") && text.contains("c/report.json"), "{text}");
            assert!(text.contains("× good #1"), "{text}");
        }
    }

    #[test]
    fn different_seeds_versions_repeats_and_missing_shards_need_force() {
        let one = report_of(Some(shard("1/2")), 1);
        let two = report_of(Some(shard("2/2")), 1);
        let mut seeded = two.clone();
        seeded.meta.seed = 8;
        let mut newer = two.clone();
        newer.meta.faultlab = "0.2.0".into();
        let mut repeated = two.clone();
        repeated.meta.repeat = 1;
        for (other, what) in [(seeded, "seed"), (newer, "faultlab version"), (repeated, "repeat count")] {
            let inputs = vec![input("a.json", one.clone()), input("b.json", other)];
            let error = merge(inputs.clone(), false).unwrap_err();
            assert!(matches!(&error, MergeError::Mismatch { what: w, .. } if *w == what), "{error:?}");
            assert!(error.to_string().contains("--force") && error.to_string().contains("b.json"), "{error}");
            let merged = merge(inputs, true).unwrap();
            assert_eq!(merged.merged.unwrap().forced, vec![error.to_string()]);
        }
        let error = merge(vec![input("a.json", one.clone())], false).unwrap_err();
        assert_eq!(error, MergeError::MissingShards { count: 2, missing: vec![2], present: vec![1] });
        assert_eq!(error.to_string(), "shard(s) 2 of 2 missing (got 1); merge anyway with --force");
        let four = report_of(Some(shard("2/4")), 1);
        let error = merge(vec![input("a.json", one.clone()), input("d.json", four)], false).unwrap_err();
        assert!(matches!(error, MergeError::Mismatch { what: "shard count", .. }), "{error:?}");
        // Unsharded reports (other task sets, say) merge without a completeness check.
        let mut a = Report::new(meta(1), vec![record("t1", "good", 0, Category::Data, true)]);
        a.meta.repeat = 1;
        let mut b = Report::new(meta(1), vec![record("t2", "good", 0, Category::Data, false)]);
        b.meta.repeat = 1;
        let merged = merge(vec![input("a", a), input("b", b)], false).unwrap();
        assert_eq!((merged.stats.overall.passed, merged.stats.overall.runs), (1, 2));
        assert_eq!(merge(Vec::new(), true).unwrap_err(), MergeError::Empty);
    }

    /// A value as JSON, to compare reports field by field (f64 statistics included) in one assertion.
    fn json<T: Serialize>(value: &T) -> serde_json::Value {
        serde_json::to_value(value).unwrap()
    }
}
