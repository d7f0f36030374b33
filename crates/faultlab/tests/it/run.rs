//! `faultlab run` end to end: every example scenario against the built-in server (both eras), against the
//! faultlab binary as an external stdio target and as an external HTTP target; bad files; report snapshots.

use crate::common::BIN;
use crate::common::Lab;
use crate::common::{exits, faultlab};
use predicates::str::contains;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// The two eras every example runs in.
const ERAS: [&str; 2] = ["2026-07-28", "2025-11-25"];

/// Runs every example in both eras at once, with `extra(era)` arguments, and returns each era's JSON report; every
/// run must pass. Two `faultlab run` processes at once: about 16 s of an era's 22 s are examples that wait on purpose
/// (a progress stream, held calls), so the eras overlap at little CPU cost.
fn run_examples_in_both_eras(extra: impl Fn(&str) -> Vec<String>) -> Vec<Value> {
    let runs: Vec<std::process::Child> = ERAS
        .iter()
        .map(|era| {
            std::process::Command::new(BIN)
                .arg("run")
                .args(examples())
                .args(["--format", "json", "--protocol-version", era])
                .args(extra(era))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    runs.into_iter()
        .zip(ERAS)
        .map(|(run, era)| {
            let output = run.wait_with_output().unwrap();
            let report: Value = serde_json::from_slice(&output.stdout)
                .unwrap_or_else(|e| panic!("{era}: {e}; stderr: {}", String::from_utf8_lossy(&output.stderr)));
            let failed: Vec<&Value> =
                report["scenarios"].as_array().unwrap().iter().filter(|s| s["passed"] != true).collect();
            assert!(failed.is_empty(), "{era}: failed scenarios: {failed:#?}");
            assert_eq!(output.status.code(), Some(0), "{era}");
            report
        })
        .collect()
}

fn ran(report: &Value) -> usize {
    report["scenarios"].as_array().unwrap().iter().filter(|s| s.get("skipped").is_none()).count()
}

/// The examples with task-augmented steps (`task:` in a step).
fn task_examples() -> usize {
    examples().iter().filter(|p| std::fs::read_to_string(p).unwrap().contains("\n    task: ")).count()
}

fn auth_examples() -> usize {
    examples().iter().filter(|p| p.to_str().unwrap().contains("/auth-")).count()
}

#[test]
fn every_example_passes_against_the_builtin_server_in_both_eras() {
    assert!(task_examples() >= 7, "a task example per task fault");
    for (report, era) in run_examples_in_both_eras(|_| vec![]).into_iter().zip(ERAS) {
        // Over HTTP: the stdio disconnect, the URL-mode elicitation whose completion HTTP does not carry on the
        // call's stream, and the 2026-07-28 tool list paged with "" (its drift needs a connection that outlives
        // a call, which stateless HTTP has not). The task examples run in both eras.
        assert_eq!(
            ran(&report),
            examples().len() - 3,
            "{era}: only the three stdio-only examples are skipped over HTTP"
        );
    }
}

#[test]
fn every_example_passes_against_the_binary_as_an_external_stdio_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("stdio.json");
    let config = serde_json::json!({"adapter": "mcp", "config": {"stdio": {"command": BIN, "args": ["serve"]}}});
    std::fs::write(&target, config.to_string()).unwrap();
    for report in run_examples_in_both_eras(|_| vec!["--target".into(), target.to_str().unwrap().into()]) {
        assert_eq!(
            ran(&report),
            examples().len() - 20 - auth_examples(),
            "the HTTP-only examples (and the auth ones) are skipped"
        );
    }
}

#[tokio::test]
async fn every_example_passes_against_the_binary_as_an_external_http_target() {
    // A server per era: the eras run at once, and a session fault of one (a restart forgets every session) must not
    // reach the other's calls.
    let dir = tempfile::tempdir().unwrap();
    let mut servers = Vec::new();
    for era in ERAS {
        let (server, url) = Lab::serve(&[]).await;
        std::fs::write(
            dir.path().join(format!("{era}.yaml")),
            format!("adapter: mcp\nconfig:\n  http:\n    url: {url}\n"),
        )
        .unwrap();
        servers.push(server);
    }
    let dir_path = dir.path().to_owned();
    let reports = tokio::task::spawn_blocking(move || {
        run_examples_in_both_eras(|era| {
            vec!["--target".into(), dir_path.join(format!("{era}.yaml")).to_str().unwrap().into()]
        })
    })
    .await
    .unwrap();
    for (report, era) in reports.into_iter().zip(ERAS) {
        // The auth examples' faults are played by the built-in server only.
        assert_eq!(ran(&report), examples().len() - 3 - auth_examples(), "{era}");
    }
    drop(servers);
}

#[test]
fn bad_scenario_and_target_files_name_the_file_and_key_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "name: x\ncall: {tool: ping}\nexpect:\n  outcome: success\n  colour: red\n").unwrap();
    exits(1, ["run", bad.to_str().unwrap()]).stderr(contains("bad.yaml")).stderr(contains("colour"));
    let out = faultlab().args(["run", bad.to_str().unwrap(), "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(error["error"]["code"], "scenario_load_failed");
    let out = faultlab().args(["run", bad.to_str().unwrap(), "--format", "junit"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("<testsuite name=\"scenario_load_failed\""));

    let target = dir.path().join("target.json");
    std::fs::write(&target, r#"{"adapter":"mcp","config":{"http":{"url":"http://example.com/mcp"}}}"#).unwrap();
    let ping = examples().into_iter().find(|p| p.ends_with("ping.yaml")).unwrap();
    exits(1, ["run", ping.to_str().unwrap(), "--target", target.to_str().unwrap()])
        .stderr(contains("target.json"))
        .stderr(contains("loopback"));
    exits(1, ["run", "no-such-file.yaml"]).stderr(contains("no-such-file.yaml"));
}

#[test]
fn a_failed_expectation_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.yaml");
    std::fs::write(&wrong, "name: wrong\ncall: {tool: ping}\ntimeoutMs: 5000\nexpect: {outcome: error}\n").unwrap();
    exits(2, ["run", wrong.to_str().unwrap()]).stdout(contains("expected outcome error, received success"));
}

#[test]
fn a_folder_stands_for_its_scenario_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a scenario").unwrap();
    let out = faultlab().arg("run").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!("the folder {} has no .yaml or .yml or .json files", dir.path().display())),
        "{stderr}"
    );
    let ping = "name: ping\ncall: {tool: ping}\ntimeoutMs: 5000\nexpect: {outcome: success}\n";
    std::fs::write(dir.path().join("b.yaml"), ping.replace("name: ping", "name: second")).unwrap();
    std::fs::write(dir.path().join("a.json.yml"), ping.replace("name: ping", "name: first")).unwrap();
    let out = faultlab().arg("run").arg(dir.path()).output().unwrap();
    let console = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{console}");
    let names: Vec<&str> = console.lines().filter_map(|l| l.strip_prefix("PASS  ")?.split("  ").next()).collect();
    assert_eq!(names, ["first", "second"], "in name order");
}

#[test]
fn a_skip_says_why() {
    let stdio_only = examples().into_iter().find(|p| p.ends_with("disconnect-stdio.yaml")).unwrap();
    let out = faultlab().arg("run").arg(stdio_only).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let console = String::from_utf8(out.stdout).unwrap();
    let line = console.lines().find(|l| l.starts_with("SKIP")).unwrap();
    assert!(line.ends_with("skipped: the scenario applies to stdio only; this target speaks http"), "{line}");
}

fn snapshot_files() -> Vec<PathBuf> {
    examples()
        .into_iter()
        .filter(|p| ["duplicate-response.yaml", "malformed-message.yaml", "hang.yaml"].iter().any(|n| p.ends_with(n)))
        .collect()
}

fn report(format: &str) -> String {
    let out = faultlab().arg("run").args(snapshot_files()).args(["--format", format]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn console_json_and_junit_reports_are_stable() {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\d+(\.\d+)? ms", "[ms]");
    settings.add_filter(r#"time="[0-9.]+""#, r#"time="[s]""#);
    settings.add_filter(r"\(\d+\.\d+ ms\)", "([ms])");
    settings.add_filter(r#"\\"timestamp\\":\\"[^\\]+\\""#, "[timestamp]");
    let _bound = settings.bind_to_scope();
    insta::assert_snapshot!("console", report("console"));
    insta::assert_snapshot!("junit", report("junit"));
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    insta::assert_json_snapshot!("json", json, {
        ".scenarios[].durationMs" => "[ms]",
        ".scenarios[].diagnostics[].startedAtMs" => "[ms]",
        ".scenarios[].diagnostics[].endedAtMs" => "[ms]",
        ".scenarios[].diagnostics[].durationMs" => "[ms]",
        ".scenarios[].steps[].durationMs" => "[ms]",
        ".scenarios[].steps[].seen.observation.durationMs" => "[ms]",
        ".scenarios[].steps[].seen.observation.startedMs" => "[ms]",
        ".scenarios[].trace[].ts_ms" => "[ms]",
        ".scenarios[].trace[].content" => "[text]",
    });
}

#[test]
fn a_retry_policy_recovers_from_transient_tool_errors_and_every_attempt_is_traced() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("probe.json");
    let config = serde_json::json!({"adapter": "mcp", "config": {"stdio": {
        "command": BIN, "args": ["serve"],
        "env": {"LAB_SCENARIO": "transient-error", "LAB_FAILURES": "2"}}}});
    std::fs::write(&target, config.to_string()).unwrap();
    let scenario = dir.path().join("retry.yaml");
    std::fs::write(
        &scenario,
        "name: transient errors are retried\ncall: {tool: lab_probe, args: {message: probe}}\ntimeoutMs: 5000\n\
         retry: {maxAttempts: 5, backoff: {kind: exponential, base_ms: 1, max_ms: 4, jitter: 0.5}}\n\
         expect: {outcome: success, attempts: 3}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    exits(0, ["run", scenario.to_str().unwrap(), "--target", target.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let trace_file = std::fs::read_dir(out.join("traces")).unwrap().next().unwrap().unwrap().path();
    let trace: Value = serde_json::from_slice(&std::fs::read(&trace_file).unwrap()).unwrap();
    let calls = trace.as_array().unwrap().iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(calls, 3, "two failed attempts and the recovery");
    // Every message is stamped, in order, so diagnose's timing checks run: a 1-4 ms backoff is no backoff.
    let stamps: Vec<f64> = trace.as_array().unwrap().iter().map(|m| m["ts_ms"].as_f64().expect("ts_ms")).collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
    let diagnosis = faultlab().arg("diagnose").arg(&trace_file).args(["--format", "json"]).output().unwrap();
    let diagnosis: Value = serde_json::from_slice(&diagnosis.stdout).unwrap();
    let kinds: Vec<&str> =
        diagnosis["traces"][0]["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"retry_without_backoff"), "{diagnosis}");
}

/// A scenario for another transport is skipped, and every format says why in words (JUnit: `<skipped>`).
#[test]
fn a_skipped_scenario_says_why_in_every_format() {
    let stdio_only = examples().into_iter().find(|p| p.ends_with("disconnect-stdio.yaml")).unwrap();
    let report = |format: &str| {
        let out = faultlab().arg("run").arg(&stdio_only).args(["--format", format]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "a skipped scenario passes: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let why = "the scenario applies to stdio only; this target speaks http";
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    assert_eq!(json["scenarios"][0]["skipped"], why);
    assert!(report("console").contains("0 passed, 0 failed, 1 skipped"));
    let junit = report("junit");
    assert!(junit.contains(r#"tests="1" failures="0" errors="0" skipped="1""#), "{junit}");
    assert!(junit.contains(&format!(r#"<skipped message="{why}"/>"#)), "{junit}");
}

#[test]
fn a_target_that_dies_before_answering_is_an_error_with_its_stderr_in_every_format_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.json");
    let script = "echo starting >&2; echo 'cannot read faults.yaml: no such file' >&2; exit 3";
    let config = serde_json::json!({"adapter": "mcp", "config": {"stdio": {"command": "sh", "args": ["-c", script]}}});
    std::fs::write(&target, config.to_string()).unwrap();
    let ping = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/ping.yaml");
    for era in ["2026-07-28", "2025-11-25"] {
        let run = |format: &str| {
            let out = faultlab()
                .arg("run")
                .arg(&ping)
                .args(["--target", target.to_str().unwrap(), "--protocol-version", era, "--format", format])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{era} {format}: {}", String::from_utf8_lossy(&out.stdout));
            String::from_utf8(out.stdout).unwrap()
        };
        let console = run("console");
        assert!(console.starts_with("ERROR  ping answers"), "{era}: {console}");
        assert!(console.contains("exit code 3") && console.contains("cannot read faults.yaml"), "{era}: {console}");
        assert!(console.contains("0 passed, 0 failed, 0 skipped, 1 could not run"), "{era}: {console}");
        let json: Value = serde_json::from_str(&run("json")).unwrap();
        let error = json["scenarios"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains("cannot read faults.yaml"), "{era}: {json:#}");
        let junit = run("junit");
        assert!(junit.contains("<error") && junit.contains("cannot read faults.yaml"), "{era}: {junit}");
    }
}

/// An HTTP target nothing listens on never ran: ERROR, exit 1, naming the URL, in both eras (it was FAIL
/// `transport_loss`, exit 2, a verdict on the client).
#[test]
fn an_http_target_nothing_listens_on_is_an_error_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let target = dir.path().join("t.json");
    let url = format!("http://127.0.0.1:{port}/mcp");
    std::fs::write(&target, serde_json::json!({"adapter": "mcp", "config": {"http": {"url": url}}}).to_string())
        .unwrap();
    let ping = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/ping.yaml");
    for era in ["2026-07-28", "2025-11-25"] {
        let out = faultlab()
            .arg("run")
            .arg(&ping)
            .args(["--target", target.to_str().unwrap(), "--protocol-version", era])
            .output()
            .unwrap();
        let console = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{era}: {console}");
        assert!(console.starts_with("ERROR  ping answers"), "{era}: {console}");
        assert!(console.contains(&url), "{era}: {console}");
    }
}

#[test]
fn a_disconnect_on_the_first_call_stays_a_verdict_on_the_client() {
    // The proxy ends with exit 0 after a `disconnect`: the server did start, so the scenario is graded.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rules.yaml"),
        "rules:\n  - name: drop\n    match: { tool: ping }\n    fault: { type: disconnect }\n",
    )
    .unwrap();
    let target = dir.path().join("t.json");
    let args = ["proxy", "--rules", "rules.yaml", "--", BIN, "serve"];
    let config = serde_json::json!({"adapter": "mcp", "config": {"stdio": {"command": BIN, "args": args}}});
    std::fs::write(&target, config.to_string()).unwrap();
    let ping = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/ping.yaml");
    let out = faultlab().arg("run").arg(&ping).args(["--target", target.to_str().unwrap()]).output().unwrap();
    let console = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{console}");
    assert!(console.starts_with("FAIL  ping answers") && console.contains("transport_loss"), "{console}");
}

/// The built-in stream and session scenarios, run against the built-in server: what the reference client did to
/// recover each call is in the report, as a user reads it.
#[test]
fn the_reference_client_resumes_deduplicates_and_reinitialises_and_the_report_says_so() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    let files = ["stream-cut-resume.yaml", "stream-replay-duplicate.yaml", "session-restart.yaml"].map(|f| dir.join(f));
    let output = faultlab().arg("run").args(files).args(["--format", "json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    let recovery = |scenario: usize, step: usize| {
        report["scenarios"][scenario]["steps"][step]["seen"]["observation"]["recovery"].clone()
    };
    // Cut after the priming event: one GET with that event's id, after the stream's 100 ms retry:.
    let cut = recovery(0, 0);
    assert_eq!(cut["reconnects"].as_array().map(Vec::len), Some(1), "{cut}");
    assert_eq!(cut["reconnects"][0]["status"], 200);
    assert_eq!(cut["reconnects"][0]["waitedMs"], 100);
    assert!(cut["reconnects"][0]["lastEventId"].as_str().unwrap().ends_with("-0"), "{cut}");
    // The replayed progress event is dropped, not delivered twice.
    let dup = recovery(1, 0);
    assert_eq!(dup["duplicateEvents"], 1, "{dup}");
    assert_eq!(report["scenarios"][1]["steps"][0]["seen"]["responses"], 1);
    // The restart's 404 makes the client open one new session; the next call works on it.
    assert_eq!(recovery(2, 1)["reinitializations"], 1);
    assert_eq!(report["scenarios"][2]["steps"][2]["seen"]["observation"]["outcome"], "success");
}
