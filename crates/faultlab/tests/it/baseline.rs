//! `--baseline FILE` / `--update-baseline` on `run` and `eval`: listed failures are expected; a new failure fails
//! the run, and so does a listed one that now passes (stale) until it is removed; an unchanged set passes.

use crate::common::{control_agent, exits, faultlab, repo};
use predicates::prelude::PredicateBooleanExt as _;
use predicates::str::contains;
use std::path::{Path, PathBuf};

/// Two scenarios on the built-in server: `pass` passes; `wrong` fails (ping expected to error).
fn scenarios(dir: &Path) -> [PathBuf; 2] {
    let pass = dir.join("pass.yaml");
    std::fs::write(&pass, "name: pass\ncall: {tool: ping}\nexpect: {outcome: success}\n").unwrap();
    let wrong = dir.join("wrong.yaml");
    std::fs::write(&wrong, "name: wrong\ncall: {tool: ping}\nexpect: {outcome: error}\n").unwrap();
    [pass, wrong]
}

fn run_with(dir: &Path, baseline: &str) -> assert_cmd::assert::Assert {
    let file = dir.join("baseline.yaml");
    std::fs::write(&file, baseline).unwrap();
    run_against(dir, &file, &[])
}

/// `run` of the two [`scenarios`] against the baseline `file`.
fn run_against(dir: &Path, file: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    faultlab().arg("run").args(scenarios(dir)).arg("--baseline").arg(file).args(extra).assert()
}

#[test]
fn update_writes_the_failures_and_an_unchanged_run_passes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known.yaml");
    run_against(dir.path(), &file, &["--update-baseline"]).code(0).stderr(contains("1 known failure written"));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("failures:\n  - \"wrong [2026-07-28]\"\n"), "{written}");
    run_against(dir.path(), &file, &[]).code(0).stderr(contains("1 known failure failed as expected"));
}

#[test]
fn a_new_failure_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    run_with(dir.path(), "failures: []\n").code(2).stderr(contains("new failure: wrong [2026-07-28]"));
}

#[test]
fn a_listed_failure_that_now_passes_is_stale_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    run_with(dir.path(), "failures: ['wrong [2026-07-28]', 'pass [2026-07-28]', 'not run [2026-07-28]']\n")
        .code(2)
        .stderr(
            contains("stale: pass [2026-07-28] passes now; remove it").and(contains("baseline: new failure").not()),
        );
}

#[test]
fn a_bad_baseline_names_the_file_and_key_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    run_with(dir.path(), "failure: []\n").code(1).stderr(contains("baseline.yaml").and(contains("failure")));
    exits(1, ["run", "x.yaml", "--update-baseline"]).stderr(contains("--baseline"));
}

/// Eval: the agent that gives up fails the data task; listed, the batch passes.
#[test]
fn eval_failures_listed_by_task_and_agent_are_expected() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known.yaml");
    std::fs::write(&file, "failures: ['data-empty-read × quitter']\n").unwrap();
    faultlab()
        .args(["eval", "--agent", &control_agent("gives-up"), "--agent-name", "quitter", "--out"])
        .arg(dir.path().join("out"))
        .arg("--baseline")
        .arg(&file)
        .arg(repo("examples/eval/tasks/data-empty-read.yaml"))
        .assert()
        .code(0)
        .stdout(contains("FAIL data-empty-read × quitter #1"))
        .stderr(contains("1 known failure failed as expected"));
}
