//! `faultlab diagnose` end to end: the demo's own traces, the exit-code contract (0, 1 naming file and message
//! index, 2 for --fail-on), every report format, thresholds from the command line.

use crate::common::{exits, faultlab};
use predicates::str::contains;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../faultlab-diagnose/tests/corpus").join(name)
}

/// `faultlab diagnose TRACES EXTRA`.
fn diagnose(traces: &[&Path], extra: &[&str]) -> assert_cmd::assert::Assert {
    faultlab().arg("diagnose").args(traces).args(extra).assert()
}

/// `diagnose --format json` on `traces`: the report and the exit code.
fn json_report(traces: &[&Path], extra: &[&str]) -> (Value, Option<i32>) {
    let output = diagnose(traces, &[&["--format", "json"], extra].concat()).get_output().clone();
    (serde_json::from_slice(&output.stdout).unwrap(), output.status.code())
}

fn kinds(trace: &Value) -> Vec<String> {
    trace["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn the_traces_the_demo_writes_are_diagnosed_as_the_issue_says() {
    let out = tempfile::tempdir().unwrap();
    faultlab().args(["demo", "--out"]).arg(out.path()).assert().success();
    let traces = out.path().join("traces");
    let (report, code) = json_report(&[&traces.join("tool-error.json"), &traces.join("healthy.json")], &[]);
    assert_eq!(code, Some(0), "findings alone do not fail");
    // The demo's traces carry timestamps, and its reference client retries without a backoff by design. The trace
    // ends on the last failure (the reference client is not an agent and writes no turn): not an unhandled error.
    assert_eq!(kinds(&report["traces"][0]), ["tool_loop", "retry_without_backoff", "retry_storm"]);
    assert_eq!(kinds(&report["traces"][1]), Vec::<String>::new(), "the healthy run has nothing to report");
}

#[test]
fn fail_on_exits_2_only_when_a_named_finding_is_present() {
    let tool_error = corpus("demo-tool-error.json");
    diagnose(&[&tool_error], &["--fail-on", "retry_storm", "--fail-on", "tool_loop,false_success"])
        .code(2)
        .stderr(contains("--fail-on: tool_loop, retry_storm present"));
    diagnose(&[&tool_error], &["--fail-on", "unhandled_tool_error"]).code(0);
    diagnose(&[&tool_error], &["--fail-on", "false_success,corrected_retry"]).code(0);
    diagnose(&[&corpus("demo-healthy.json")], &["--fail-on", "any"]).code(0);
    diagnose(&[&tool_error], &["--fail-on", "any"]).code(2);
    diagnose(&[&tool_error], &[]).code(0);
}

#[test]
fn a_malformed_trace_exits_1_naming_the_file_and_the_message_index() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("agent-run.json");
    std::fs::write(
        &bad,
        r#"[{"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"}]"#,
    )
    .unwrap();
    diagnose(&[&corpus("demo-healthy.json"), &bad], &[])
        .code(1)
        .stdout("")
        .stderr(contains(format!("{}: message 2: `tool_call_id` `c2` answers no tool call", bad.display())));
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "[{\"role\": \"user\", \"content\": \"hi\"},\n {\"role\": \"user\" \"content\": 1}]")
        .unwrap();
    diagnose(&[&broken], &[]).code(1).stderr(contains(format!("{}: message 1 (line 2, column", broken.display())));
    let trajectory = dir.path().join("proxy.jsonl");
    std::fs::write(&trajectory, "{\"tsMs\": 1, \"scope\": \"\", \"event\": \"run_started\", \"seed\": 0, \"rules\": 0}\n{\"tsMs\": \"x\", \"event\": \"frame\"}\n")
        .unwrap();
    diagnose(&[&trajectory], &[]).code(1).stderr(contains("proxy.jsonl: line 2: `tsMs`"));
    exits(1, ["diagnose", "no-such-trace.json"]).stderr(contains("no-such-trace.json: cannot read"));
}

#[test]
fn bad_finding_names_and_thresholds_exit_1_naming_the_flag() {
    let trace = corpus("demo-healthy.json");
    diagnose(&[&trace], &["--fail-on", "tool_lop"])
        .code(1)
        .stderr(contains("unknown finding `tool_lop` (known: tool_loop, retry_storm"));
    diagnose(&[&trace], &["--loop-min-calls", "1"]).code(1).stderr(contains("--loop-min-calls must be 2 or more"));
}

#[test]
fn every_format_shows_the_findings() {
    let trace = corpus("demo-tool-error.json");
    diagnose(&[&trace], &[])
        .code(0)
        .stdout(contains("WARNING retry_storm at message 7"))
        .stdout(contains("evidence: messages 1–10"))
        .stdout(contains("not checked: unhandled_tool_error — lab_probe failed 5 times in a row"))
        .stdout(contains("2 findings in 1 trace: tool_loop 1, retry_storm 1"));
    diagnose(&[&trace], &["--format", "md"]).code(0).stdout(contains("| warning | `tool_loop` | message 5 |"));
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    diagnose(&[&trace], &["--format", "html", "--out", page.to_str().unwrap()])
        .code(0)
        .stdout("")
        .stderr(contains("report written to"));
    let html = std::fs::read_to_string(&page).unwrap();
    for kind in ["tool_loop", "retry_storm"] {
        assert!(html.contains("class=\"finding sev-warning\" id=\"t0-f"), "finding boxes on the page");
        assert!(html.contains(&format!("data-kind=\"{kind}\"")), "{kind} on the page");
    }
}

#[test]
fn thresholds_from_the_command_line_change_what_is_found() {
    let (report, _) = json_report(
        &[&corpus("demo-tool-error.json"), &corpus("proxy/retry-same-call-no-backoff.jsonl")],
        &["--loop-min-calls", "6", "--storm-min-retries", "5", "--quick-retries", "4", "--min-backoff-ms", "50"],
    );
    assert_eq!(kinds(&report["traces"][0]), Vec::<String>::new());
    assert_eq!(kinds(&report["traces"][1]), Vec::<String>::new(), "three retries cannot make four quick ones");
    assert_eq!(report["thresholds"]["minBackoffMs"], 50.0);
    let (report, _) = json_report(&[&corpus("corrected_retry-positive.json")], &["--write-tool", "create_event"]);
    assert_eq!(report["thresholds"]["writeTools"][0], "create_event");
}

#[test]
fn the_help_states_the_library_defaults_and_every_finding() {
    let output = faultlab().args(["diagnose", "--help"]).output().unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    let defaults = faultlab_diagnose::Thresholds::default();
    for (flag, value) in [
        ("--loop-min-calls", defaults.loop_min_calls.to_string()),
        ("--storm-min-retries", defaults.storm_min_retries.to_string()),
        ("--min-backoff-ms", defaults.min_backoff_ms.to_string()),
        ("--quick-retries", defaults.quick_retries.to_string()),
    ] {
        let line = help.lines().find(|l| l.trim_start().starts_with(flag)).unwrap();
        assert!(line.ends_with(&format!("[default: {value}]")), "{line}");
    }
    for kind in faultlab_diagnose::FindingKind::ALL {
        assert!(help.contains(kind.name()), "{} missing from --help", kind.name());
    }
}
