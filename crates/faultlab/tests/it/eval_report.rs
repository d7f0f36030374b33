//! `faultlab eval --shard`, `faultlab report merge` and `faultlab compare` end to end: the control agents on two
//! built-in tasks, in two shards, merged and compared.

use crate::common::{exits_in, faultlab};
use faultlab_eval::agent::ControlAgent;
use faultlab_eval::report::Report;
use predicates::prelude::*;
use predicates::str::contains;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const TASKS: [&str; 2] = ["data-empty-read", "authorization-forbidden-write"];

fn task_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval/tasks");
    TASKS.iter().map(|t| dir.join(format!("{t}.yaml"))).collect()
}

fn read(path: &Path) -> Report {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Shard `index` of 2, into `shard-INDEX` (relative, as CI passes it); exit 0 means the shard's own oracle
/// entries agree, and none of the other shard's entries were held against it.
fn run_shard(root: &Path, index: u32) {
    faultlab()
        .current_dir(root)
        .args(["eval", "--controls", "--jobs", "4", "--shard", &format!("{index}/2"), "--out"])
        .arg(format!("shard-{index}"))
        .args(task_files())
        .assert()
        .success()
        .stdout(contains("oracle: all 15 verdicts as expected"))
        // The summary opens with the oracle's agreement: the controls fail on purpose, so the rate is a detail.
        .stdout(contains("\n15 of 15 verdicts as expected (pass rate "))
        // The failures the oracle calls for read EXPECTED, and no run reads FAIL.
        .stdout(contains("EXPECTED "))
        .stdout(predicates::str::contains("FAIL ").not());
}

#[test]
fn bad_shards_exit_1_naming_the_flag() {
    let root = tempfile::tempdir().unwrap();
    for bad in ["0/2", "3/2", "2", "a/b", "1/0"] {
        exits_in(root.path(), 1, ["eval", "--controls", "--shard", bad]).stderr(contains("--shard"));
    }
    exits_in(root.path(), 1, ["eval", "--controls", "--shard", "0/4"])
        .stderr(contains("$((JOB_COMPLETION_INDEX+1))/4"));
}

#[test]
fn two_shards_merge_into_every_pair_once_pass_the_oracle_and_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::thread::scope(|s| {
        s.spawn(|| run_shard(root, 1));
        s.spawn(|| run_shard(root, 2));
    });
    let shards = [read(&root.join("shard-1/report.json")), read(&root.join("shard-2/report.json"))];
    for (i, shard) in shards.iter().enumerate() {
        let shard_of = shard.shard.unwrap();
        assert_eq!((shard_of.index, shard_of.count), (i as u32 + 1, 2));
        assert_eq!(shard.runs.len(), TASKS.len() * ControlAgent::ALL.len() / 2);
    }

    let shards_and_oracle = ["shard-1/report.json", "shard-2/report.json", "--oracle", "builtin"];
    exits_in(root, 0, [&["report", "merge", "merged/report.json"][..], &shards_and_oracle].concat())
        .stdout(contains("merged 2 reports: 30 runs"))
        .stdout(contains("oracle: all 30 verdicts as expected"))
        .stdout(contains(
            "oracle: not checked, no runs in the merged report: authorization-token-revoked-midtask, \
             elicitation-confirm-overwrite, model-tool-call-cut-read, protocol-malformed-read",
        ));
    let merged = read(&root.join("merged/report.json"));
    let html = std::fs::read_to_string(root.join("merged/report.html")).unwrap();
    let failed = merged.runs.iter().filter(|r| !r.verdict.passed).count();
    assert!(failed > 0 && html.contains(&format!("{failed} failed ({failed} of them EXPECTED")), "{failed}");
    assert_eq!(html.matches("<span class=\"verdict\">EXPECTED</span>").count(), failed);
    assert!(html.contains("<b>Expected failure.</b>"));
    assert!(root.join("merged/report.md").is_file());
    let mut pairs: BTreeMap<(String, String), usize> = BTreeMap::new();
    for run in &merged.runs {
        *pairs.entry((run.task.clone(), run.agent.clone())).or_default() += 1;
        assert!(root.join("merged").join(&run.dir).is_dir(), "{}: not relative to the merged report", run.dir);
    }
    let expected: BTreeMap<(String, String), usize> =
        TASKS.iter().flat_map(|t| ControlAgent::ALL.map(|a| ((t.to_string(), a.name().to_string()), 1))).collect();
    assert_eq!(pairs, expected, "every (task, agent) pair exactly once");
    let info = merged.merged.as_ref().unwrap();
    assert_eq!(info.inputs.len(), 2);
    assert_eq!(info.wall_ms_sum, shards[0].meta.wall_ms + shards[1].meta.wall_ms);
    assert_eq!(merged.meta.wall_ms, shards[0].meta.wall_ms.max(shards[1].meta.wall_ms));
    assert_eq!(merged.stats.overall.runs, 30);

    // A shard given twice, a missing shard, inputs that are not reports, an OUT that is the Markdown name.
    exits_in(
        root,
        1,
        ["report", "merge", "twice.json", "shard-1/report.json", "shard-2/report.json", "shard-1/report.json"],
    )
    .stderr(contains("is in both shard-1/report.json and shard-1/report.json"));
    exits_in(root, 1, ["report", "merge", "half.json", "shard-1/report.json"])
        .stderr(contains("shard(s) 2 of 2 missing (got 1); merge anyway with --force"));
    exits_in(root, 2, ["report", "merge", "half.json", "shard-1/report.json", "--force", "--oracle", "builtin"])
        .stderr(contains("merged with --force despite: shard(s) 2 of 2 missing"))
        .stdout(contains("got no run"));
    exits_in(root, 1, ["report", "merge", "x.json", "nowhere.json"]).stderr(contains("nowhere.json"));
    exits_in(root, 1, ["report", "merge", "x.json", "shard-1/report.md"])
        .stderr(contains("shard-1/report.md is not a faultlab eval report"));
    exits_in(root, 1, ["report", "merge", "x.md", "shard-1/report.json"]).stderr(contains("name the JSON report"));

    // Compare: shards mix agents and tasks, so both ran every agent and there are per-agent rows; always exit 0
    // without the flag.
    exits_in(root, 0, ["compare", "shard-1/report.json", "shard-2/report.json"])
        .stdout(contains("Fisher's exact test, two-sided, α = 0.05"))
        .stdout(contains("category data"))
        .stdout(contains("agent good"));
    let output = exits_in(
        root,
        0,
        ["compare", "merged/report.json", "merged/report.json", "--format", "json", "--fail-on-regression"],
    );
    let json: serde_json::Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    let labels: Vec<String> =
        json["rows"].as_array().unwrap().iter().map(|r| format!("{} {}", r["group"], r["key"])).collect();
    // overall, two categories, two faults (one per task), the tasks, the agents.
    assert_eq!(labels.len(), 1 + 2 + 2 + TASKS.len() + ControlAgent::ALL.len(), "{labels:?}");
    assert!(json["rows"].as_array().unwrap().iter().all(|r| r["change"] == "not_significant"));

    // B: the same runs, every one failed. Each passing row of A is now worse; overall significantly so.
    let mut failed = merged.clone();
    for run in &mut failed.runs {
        run.verdict.passed = false;
    }
    let failed = Report { merged: None, ..Report::new(failed.meta, failed.runs) };
    std::fs::write(root.join("failed.json"), serde_json::to_string(&failed).unwrap()).unwrap();
    exits_in(root, 0, ["compare", "merged/report.json", "failed.json", "--format", "md"])
        .stdout(contains("| overall |"))
        .stdout(contains("yes: B worse"));
    exits_in(root, 2, ["compare", "merged/report.json", "failed.json", "--fail-on-regression"])
        .stderr(contains("B (failed.json) is significantly worse than A (merged/report.json) on: overall"));
    exits_in(root, 1, ["compare", "merged/report.json", "nowhere.json"]).stderr(contains("nowhere.json"));
}
