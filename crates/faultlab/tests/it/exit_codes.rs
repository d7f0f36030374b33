//! The exit-code table (README, `faultlab SUBCOMMAND --help`), row by row for every subcommand: 0 all as expected;
//! 1 could not run (a bad flag or input file for the commands that check; a target, upstream or agent that could
//! not start or died); 2 a check failed. `serve` and `proxy`: 0 clean, 1 could not run, 2 bad input. Rows that
//! take a whole lab to reach are tested where that lab runs anyway (named in each test).

use crate::common::{PATIENCE, control_agent, exits, faultlab, read_json, repo};
use predicates::prelude::PredicateBooleanExt as _;
use predicates::str::contains;
use std::process::Stdio;

const CHECKS: [&str; 9] = ["run", "demo", "diagnose", "eval", "replay", "report", "compare", "completions", "man"];

#[test]
fn every_subcommand_help_ends_with_its_table() {
    for sub in CHECKS.map(|s| vec![s]).into_iter().chain([vec!["report", "merge"]]) {
        exits(0, sub.iter().chain(&["--help"]))
            .stdout(contains("Exit codes:\n  0  everything as expected\n  1  could not run: a bad flag"))
            .stdout(contains("\n  2  a check failed: "));
    }
    for sub in ["serve", "proxy"] {
        exits(0, [sub, "--help"])
            .stdout(contains("Exit codes:\n  0  the session ended cleanly"))
            .stdout(contains("\n  2  bad input: "));
    }
}

/// A flag clap refuses: the bad-input code of the subcommand's table, naming the flag.
#[test]
fn a_bad_flag_is_1_for_a_check_and_2_for_a_service() {
    for sub in CHECKS {
        exits(1, [sub, "--no-such-flag"]).stderr(contains("--no-such-flag"));
    }
    exits(1, ["diagnose", "x.json", "--format", "xml"]).stderr(contains("--format"));
    for sub in ["serve", "proxy"] {
        exits(2, [sub, "--no-such-flag"]).stderr(contains("--no-such-flag"));
    }
    // No subcommand it could be for: clap's own usage code.
    exits(2, ["--no-such-flag"]);
}

#[test]
fn run_0_passed_2_expectation_failed_1_bad_file() {
    exits(0, ["run", repo("examples/scenarios/ping.yaml").to_str().unwrap()]);
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.yaml");
    std::fs::write(&wrong, "name: wrong\ncall: {tool: ping}\ntimeoutMs: 5000\nexpect: {outcome: error}\n").unwrap();
    exits(2, ["run", wrong.to_str().unwrap()]).stdout(contains("FAIL  wrong"));
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "name: bad\ncall: {tool: ping}\nexpekt: {}\n").unwrap();
    exits(1, ["run", bad.to_str().unwrap()]).stderr(contains("bad.yaml").and(contains("expekt")));
}

/// A target that cannot start is not a failed expectation: exit 1, and an error (not a failure) in every format.
#[test]
fn run_a_target_that_cannot_start_is_1_and_an_error_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.json");
    std::fs::write(&target, r#"{"adapter": "mcp", "config": {"stdio": {"command": "/nonexistent/mcp-server"}}}"#)
        .unwrap();
    let run = |format: &str| {
        let output = faultlab()
            .args(["run", "--format", format, "--target"])
            .arg(&target)
            .arg(repo("examples/scenarios/ping.yaml"))
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{format}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let console = run("console");
    assert!(console.starts_with("ERROR  ping answers"), "{console}");
    assert!(console.contains("the target could not start: ") && console.contains("1 could not run"), "{console}");
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let scenario = &json["scenarios"][0];
    assert!(scenario["error"].as_str().unwrap().contains("/nonexistent/mcp-server"), "{json}");
    assert_eq!(scenario["failures"], serde_json::json!([]), "not a failed expectation: {json}");
    let junit = run("junit");
    assert!(junit.contains(r#"failures="0" errors="1""#) && junit.contains("<error message=\"the target"), "{junit}");
}

/// Eval's 0 and 2 rows: the good control agent passes the data task, the one that gives up fails it; with
/// `--format junit` stdout is the JUnit (a `<failure>` naming the layers), also written as junit.xml. `--report`,
/// the flag's old name, still works; the count on stderr agrees with its noun.
#[test]
fn eval_0_passed_2_grade_failed() {
    let dir = tempfile::tempdir().unwrap();
    for (agent, flag, code, junit) in [
        ("good", "--report", 0, r#"tests="1" failures="0" errors="0""#),
        ("gives-up", "--format", 2, r#"<failure message="failed its grade: outcome, side_effects, recovery">"#),
    ] {
        let out = dir.path().join(agent);
        let output = faultlab()
            .args(["eval", flag, "junit", "--agent", &control_agent(agent), "--out"])
            .arg(&out)
            .arg(repo("examples/eval/tasks/data-empty-read.yaml"))
            .assert()
            .code(code)
            .stderr(contains("faultlab: eval: 1 run\n"))
            .stdout(contains(junit).and(contains(format!("data-empty-read × {agent} #1"))));
        let stdout = String::from_utf8(output.get_output().stdout.clone()).unwrap();
        assert!(stdout.starts_with("<?xml"), "only JUnit on stdout: {stdout}");
        assert_eq!(std::fs::read_to_string(out.join("junit.xml")).unwrap(), stdout);
    }
}

/// Bad arguments are exit 1 like every other input eval cannot run with (its help always said so); a bad task
/// file, a missing agent program and a server that never starts are covered in `eval`.
#[test]
fn eval_bad_arguments_are_1() {
    for bad in ["0/2", "3/2", "a/b"] {
        exits(1, ["eval", "--controls", "--shard", bad]).stderr(contains("--shard"));
    }
    exits(1, ["eval"]).stderr(contains("--agent 'CMD ARGS' or --controls"));
    exits(1, ["eval", "--controls", "--repeat", "0"]).stderr(contains("--repeat"));
}

/// An HTTP server that nothing listens on: the proxy answers every request with an error and keeps running, so
/// the agent "aborts safely with 0 calls". That is the set-up failing, not a verdict: an ERROR, exit 1.
#[test]
fn eval_an_http_server_that_is_not_there_is_a_run_error_not_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    // A port that was free a moment ago: nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let task = std::fs::read_to_string(repo("examples/eval/tasks/data-empty-read.yaml")).unwrap();
    let task = format!("{task}server: {{url: 'http://127.0.0.1:{port}/mcp'}}\n");
    std::fs::write(dir.path().join("task.yaml"), task).unwrap();
    faultlab()
        .args(["eval", "--agent", &control_agent("good"), "--out"])
        .arg(dir.path().join("out"))
        .arg(dir.path().join("task.yaml"))
        .assert()
        .code(1)
        .stdout(contains("ERROR data-empty-read"))
        .stderr(contains("could not be graded").and(contains(format!("127.0.0.1:{port}"))));
    let report = read_json(dir.path().join("out/report.json"));
    assert!(report["runs"][0]["error"].as_str().unwrap().contains("never answered"), "{report}");
}

/// `replay`, `report merge` and `compare` with inputs they cannot read or arguments they refuse: 1. Their 0 and 2
/// rows run on real eval reports in `eval` (replay) and `eval_report` (merge with an oracle, compare with
/// --fail-on-regression).
#[test]
fn replay_report_and_compare_unreadable_inputs_and_bad_arguments_are_1() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    exits(1, ["replay", missing]).stderr(contains("missing.json"));
    exits(1, ["report", "merge", "out.json", missing]).stderr(contains("missing.json"));
    exits(1, ["report", "merge", "out.md", missing]).stderr(contains("name the JSON"));
    exits(1, ["compare", missing, missing]).stderr(contains("missing.json"));
}

/// Diagnose's rows run in `diagnose` (0, 1 naming the file and message index, 2 for --fail-on); the demo's 0 in
/// `diagnose` too. Here: an unknown finding is an input diagnose cannot run with.
#[test]
fn diagnose_and_demo_bad_input_is_1() {
    let trace = repo("crates/faultlab-diagnose/tests/corpus/demo-healthy.json");
    exits(1, ["diagnose", trace.to_str().unwrap(), "--fail-on", "nonsense"]);
    exits(1, ["demo", "--out"]).stderr(contains("--out"));
}

#[test]
fn serve_0_clean_1_could_not_run_2_bad_input() {
    faultlab().arg("serve").write_stdin("").assert().code(0);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    exits(1, ["serve", "--transport", "http", "--port", &port]);
    exits(2, ["serve", "--transport", "http", "--host", "0.0.0.0"]);
}

#[test]
fn proxy_0_clean_1_upstream_could_not_start_or_died_2_bad_rules() {
    faultlab().args(["proxy", "--", "cat"]).write_stdin("").assert().code(0);
    faultlab()
        .args(["proxy", "--", "/nonexistent/mcp-server"])
        .write_stdin("")
        .assert()
        .code(1)
        .stderr(contains("/nonexistent/mcp-server"));
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, "rules:\n  - name: r\n    fault: {type: nonsense}\n").unwrap();
    exits(2, ["proxy", "--rules", rules.to_str().unwrap(), "--", "cat"]).stderr(contains("rules.yaml"));
}

/// The upstream exits while the client is still connected (stdin open).
#[tokio::test]
async fn proxy_upstream_that_exits_on_its_own_is_1() {
    let mut child = crate::common::spawn(&["proxy", "--", "false"], [Stdio::piped(), Stdio::null(), Stdio::piped()]);
    let _connected = child.stdin.take();
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output()).await.expect("the proxy exits").unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("exited on its own"), "{output:?}");
}

/// The HTTP front's stdio child exits: every later request would fail, so the proxy stops and exits 1, as the
/// stdio front does (it used to serve on and exit 0 at the next signal).
#[test]
fn proxy_http_front_whose_child_exits_ends_with_1() {
    faultlab()
        .args(["proxy", "--listen", "127.0.0.1:0", "--", "false"])
        .timeout(PATIENCE)
        .assert()
        .code(1)
        .stderr(contains("the upstream exited on its own"));
}

/// A signal sent the moment a listener says it is listening (as a script that waits for that line and stops it
/// does) stops it cleanly: exit 0, for each command that listens. The handlers are in place before the line.
#[tokio::test]
async fn sigterm_at_the_listening_line_exits_0() {
    let script = repo("examples/model/script.yaml");
    let listeners: [(&[&str], &str); 3] = [
        (&["serve", "--transport", "http", "--port", "0"], "faultlab: listening at "),
        (
            &["proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp"],
            "faultlab: proxy listening at ",
        ),
        (&["model", "--script", script.to_str().unwrap()], "faultlab: model listening at "),
    ];
    for (args, ready) in listeners {
        let mut lab = crate::common::Lab::start(args, ready).await;
        lab.terminate();
        let status = tokio::time::timeout(PATIENCE, lab.child.wait()).await.expect("exits in time").unwrap();
        assert_eq!(status.code(), Some(0), "faultlab {args:?}: {status}");
        // The same with nobody left reading stderr (the program that started it has gone): the line it writes on
        // the signal fails, and it must still stop, cleanly.
        let mut lab = crate::common::Lab::start_deaf(args, ready).await;
        lab.terminate();
        let status = tokio::time::timeout(PATIENCE, lab.child.wait())
            .await
            .unwrap_or_else(|_| panic!("faultlab {args:?} with its stderr closed did not stop on SIGTERM"))
            .unwrap();
        assert_eq!(status.code(), Some(0), "faultlab {args:?} with its stderr closed: {status}");
    }
}
