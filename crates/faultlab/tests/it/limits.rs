//! Input limits end to end: every kind of file the binary reads is refused when nested absurdly deep (naming the
//! file and the line), and no command panics when its stdout is a pipe nobody reads any more.

use crate::common::BIN;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The depth from the issue: 100,000 levels cost 39 s of YAML parsing before the error.
const LEVELS: usize = 100_000;

fn faultlab(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdin(Stdio::null());
    for var in ["LAB_SCENARIO", "LAB_DELAY_MS", "LAB_FAILURES"] {
        cmd.env_remove(var);
    }
    cmd
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn deep_yaml() -> String {
    // Block sequences nested on one line, then flow ones: both kinds the YAML parser pays for.
    format!("{}x\n", "- ".repeat(LEVELS))
}

fn deep_flow() -> String {
    format!("{}{}\n", "[".repeat(LEVELS), "]".repeat(LEVELS))
}

#[test]
fn a_hundred_thousand_levels_are_refused_naming_the_file_for_every_loader() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (rules_yaml, rules_json) = (write("rules.yaml", deep_yaml()), write("rules.json", deep_flow()));
    let (scenario_yaml, scenario_json) = (write("scenario.yaml", deep_yaml()), write("scenario.json", deep_flow()));
    let target = write("target.yaml", format!("adapter: mcp\nconfig: {}", deep_flow()));
    let (task_yaml, task_json) = (write("task.yaml", deep_yaml()), write("task.json", deep_flow()));
    let oracle = write("oracle.yaml", format!("entries:\n  {}", deep_flow()));
    let report = write("report.json", deep_flow());
    let (trace, trajectory) = (write("trace.json", deep_flow()), write("proxy.jsonl", deep_flow()));
    let ping = repo("examples/scenarios/ping.yaml");
    let ping = ping.to_str().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let merged = dir.path().join("merged.json");
    let merged = merged.to_str().unwrap();

    let cases: Vec<(Vec<&str>, &str, u32)> = vec![
        (vec!["proxy", "--rules", &rules_yaml, "--", "true"], &rules_yaml, 1),
        (vec!["proxy", "--rules", &rules_json, "--", "true"], &rules_json, 1),
        (vec!["run", &scenario_yaml], &scenario_yaml, 1),
        (vec!["run", &scenario_json], &scenario_json, 1),
        (vec!["run", ping, "--target", &target], &target, 2),
        (vec!["eval", "--agent", "true", "--out", out, &task_yaml], &task_yaml, 1),
        (vec!["eval", "--agent", "true", "--out", out, &task_json], &task_json, 1),
        (vec!["eval", "--controls", "--oracle", &oracle, "--out", out], &oracle, 2),
        (vec!["compare", &report, &report], &report, 1),
        (vec!["report", "merge", merged, &report], &report, 1),
        (vec!["replay", &report], &report, 1),
        (vec!["diagnose", &trace], &trace, 1),
        (vec!["diagnose", &trajectory], &trajectory, 1),
    ];
    for (args, file, line) in cases {
        let output = faultlab(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown = args.join(" ");
        assert!(matches!(output.status.code(), Some(1 | 2)), "{shown}: {:?} {stderr}", output.status);
        assert!(stderr.contains(file), "{shown}: the error names the file: {stderr}");
        assert!(stderr.contains("nested deeper than 128 levels"), "{shown}: {stderr}");
        assert!(stderr.contains(&format!("line {line}")), "{shown}: the error names the line: {stderr}");
        assert_eq!(stderr.matches("nested deeper").count(), 1, "{shown}: printed once: {stderr}");
    }
    assert!(!Path::new(merged).exists());
}

/// Runs the binary with stdout a pipe whose reader is already closed.
fn with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    faultlab(args).stdout(writer).stderr(Stdio::piped()).output().unwrap()
}

#[test]
fn no_command_panics_when_its_stdout_reader_is_gone() {
    let ping = repo("examples/scenarios/ping.yaml");
    let trace = repo("crates/faultlab-diagnose/tests/corpus/demo-healthy.json");
    let (ping, trace) = (ping.to_str().unwrap(), trace.to_str().unwrap());
    for (args, code) in [
        (vec!["run", ping], 0),
        (vec!["run", ping, "--format", "json"], 0),
        (vec!["diagnose", trace, "--format", "json"], 0),
        (vec!["diagnose", trace], 0),
        (vec!["--help"], 0),
        (vec!["eval", "--help"], 0),
    ] {
        let output = with_closed_stdout(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
    }
}
