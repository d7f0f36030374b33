//! The `faultlab` binary end to end: exit codes and messages for bad input, stdio and HTTP serving, lab_probe.

use crate::common::{Lab, http_client};
use assert_cmd::Command;
use predicates::str::contains;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const PATIENCE: Duration = Duration::from_secs(20);

fn faultlab() -> Command {
    let mut cmd = Command::cargo_bin("faultlab").unwrap();
    for var in ["LAB_SCENARIO", "LAB_DELAY_MS", "LAB_FAILURES"] {
        cmd.env_remove(var);
    }
    cmd
}

#[test]
fn bad_flags_and_values_exit_2_naming_what_to_fix() {
    faultlab().arg("--bogus").assert().code(2).stderr(contains("--bogus"));
    faultlab().args(["serve", "--transport", "carrier-pigeon"]).assert().code(2).stderr(contains("--transport"));
    faultlab().args(["serve", "--transport", "http", "--port", "70000"]).assert().code(2).stderr(contains("--port"));
    faultlab().args(["serve", "--port", "3000"]).assert().code(2).stderr(contains("require --transport http"));
    for host in ["0.0.0.0", "::", "0", "[::]", "0:0:0:0:0:0:0:0"] {
        faultlab().args(["serve", "--transport", "http", "--host", host]).assert().code(2).stderr(contains("wildcard"));
    }
    faultlab()
        .args(["serve", "--transport", "http", "--host", "192.168.1.9"])
        .assert()
        .code(2)
        .stderr(contains("loopback"));
    faultlab().args(["serve", "--transport", "http", "--path", "mcp"]).assert().code(2).stderr(contains("--path"));
}

/// The message names the flag the user typed, once; an OS error's text appears once, not again as its cause.
#[test]
fn an_error_names_the_flag_typed_and_says_its_cause_once() {
    for (flag, value) in [("--listen", "0.0.0.0:8080"), ("--control", "[::]:0"), ("--listen", "10.1.2.3:80")] {
        let output = faultlab().args(["proxy", flag, value, "--", "cat"]).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(&format!("{flag} {value}")) && !stderr.contains("--host"), "{stderr}");
    }
    let output = faultlab().args(["proxy", "--rules", "no-such-rules.yaml", "--", "cat"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("no-such-rules.yaml"), "{stderr}");
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
}

/// Verdicts and the error prefix are coloured only where colour is wanted: never in a pipe, never under NO_COLOR
/// (even with CLICOLOR_FORCE), and when forced, with the text unchanged around the styles.
#[test]
fn colour_only_where_it_is_wanted() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("ping.yaml");
    std::fs::write(&scenario, "name: ping\ncall: {tool: ping}\ntimeoutMs: 5000\nexpect: {outcome: success}\n").unwrap();
    let run = |env: &[(&str, &str)]| {
        let mut command = faultlab();
        command.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE").envs(env.iter().copied());
        let out = command.arg("run").arg(&scenario).output().unwrap();
        let error = faultlab().envs(env.iter().copied()).args(["faults", "nope"]).output().unwrap();
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(error.stderr).unwrap())
    };
    let (plain, plain_error) = run(&[]);
    assert!(plain.starts_with("PASS  ping") && plain_error.starts_with("faultlab: "), "{plain}{plain_error}");
    let (forced, forced_error) = run(&[("CLICOLOR_FORCE", "1")]);
    assert!(forced.starts_with("\x1b[32mPASS\x1b[0m  ping"), "{forced:?}");
    assert!(forced_error.contains("faultlab:\x1b[0m no fault is called"), "{forced_error:?}");
    let (declined, declined_error) = run(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!declined.contains('\x1b') && !declined_error.contains('\x1b'), "{declined:?}");
}

#[test]
fn bad_shutdown_grace_and_frame_limits_exit_2_naming_the_flag() {
    for bad in ["-1", "abc", "NaN", "inf", "3601", ""] {
        faultlab()
            .args(["proxy", &format!("--shutdown-grace={bad}"), "--", "cat"])
            .assert()
            .code(2)
            .stderr(contains("--shutdown-grace"));
    }
    for bad in ["0", "1023", "1073741825", "-5", "1k"] {
        faultlab()
            .args(["proxy", &format!("--max-frame-bytes={bad}"), "--", "cat"])
            .assert()
            .code(2)
            .stderr(contains("--max-frame-bytes"));
        faultlab()
            .args(["serve", &format!("--max-frame-bytes={bad}")])
            .assert()
            .code(2)
            .stderr(contains("--max-frame-bytes"));
    }
    faultlab()
        .args(["proxy", "--listen", "127.0.0.1:0", "--max-frame-bytes", "4096", "--", "cat"])
        .assert()
        .code(2)
        .stderr(contains("--max-frame-bytes applies to the stdio fronts only"));
    faultlab()
        .args(["serve", "--transport", "http", "--max-frame-bytes", "4096"])
        .assert()
        .code(2)
        .stderr(contains("--max-frame-bytes applies to --transport stdio only"));
}

#[test]
fn bad_lab_variables_exit_2_naming_the_variable() {
    faultlab().args(["serve"]).env("LAB_SCENARIO", "flaky").assert().code(2).stderr(contains("LAB_SCENARIO"));
    for bad in ["0x10", "1e3", " 7", "10001"] {
        faultlab()
            .args(["serve"])
            .env("LAB_SCENARIO", "delay")
            .env("LAB_DELAY_MS", bad)
            .assert()
            .code(2)
            .stderr(contains("LAB_DELAY_MS"));
    }
    faultlab()
        .args(["serve"])
        .env("LAB_SCENARIO", "transient-error")
        .env("LAB_FAILURES", "11")
        .assert()
        .code(2)
        .stderr(contains("LAB_FAILURES"));
}

/// A `faultlab serve` child on stdio.
struct Child {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<tokio::process::ChildStdout>,
}

impl Child {
    fn spawn(env: &[(&str, &str)]) -> Self {
        let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("faultlab"));
        cmd.arg("serve").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
        for var in ["LAB_SCENARIO", "LAB_DELAY_MS", "LAB_FAILURES"] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout }
    }

    async fn send(&mut self, value: Value) {
        let mut line = serde_json::to_vec(&value).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
    }

    async fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n =
            tokio::time::timeout(PATIENCE, self.stdout.read_line(&mut line)).await.expect("a line in time").unwrap();
        (n > 0).then(|| serde_json::from_str(&line).unwrap())
    }

    async fn initialize(&mut self) {
        self.send(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
            "capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}))
            .await;
        assert_eq!(self.recv().await.unwrap()["result"]["serverInfo"]["name"], "faultlab");
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    }

    async fn call(&mut self, id: i64, tool: &str, args: Value) -> Option<Value> {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})).await;
        self.recv().await
    }

    async fn exit_code(mut self) -> Option<i32> {
        drop(self.stdin);
        tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("exit in time").unwrap().code()
    }
}

#[tokio::test]
async fn stdio_serves_then_disconnect_ends_the_process() {
    let mut child = Child::spawn(&[]);
    child.initialize().await;
    let ping = child.call(1, "ping", json!({})).await.unwrap();
    assert!(ping["result"]["content"][0]["text"].as_str().unwrap().contains("ok"));
    assert_eq!(child.call(2, "disconnect", json!({})).await, None, "EOF instead of a result");
    assert_eq!(child.exit_code().await, Some(0));
}

#[tokio::test]
async fn stdio_exits_0_when_the_client_closes_stdin() {
    let mut child = Child::spawn(&[]);
    child.initialize().await;
    assert_eq!(child.exit_code().await, Some(0));
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn lab_probe_scenarios() {
    let message = json!({"message": "probe"});
    let mut healthy = Child::spawn(&[("LAB_SCENARIO", "healthy")]);
    healthy.initialize().await;
    healthy.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})).await;
    let tools = healthy.recv().await.unwrap();
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 1, "only lab_probe");
    assert_eq!(text(&healthy.call(2, "lab_probe", message.clone()).await.unwrap()), "lab_probe ok: probe");

    let mut failing = Child::spawn(&[("LAB_SCENARIO", "tool-error")]);
    failing.initialize().await;
    assert_eq!(failing.call(1, "lab_probe", message.clone()).await.unwrap()["result"]["isError"], true);

    let mut transient = Child::spawn(&[("LAB_SCENARIO", "transient-error"), ("LAB_FAILURES", "2")]);
    transient.initialize().await;
    let outcomes: Vec<bool> = {
        let mut v = Vec::new();
        for id in 1..=3 {
            v.push(transient.call(id, "lab_probe", message.clone()).await.unwrap()["result"]["isError"] == true);
        }
        v
    };
    assert_eq!(outcomes, [true, true, false]);

    let mut delayed = Child::spawn(&[("LAB_SCENARIO", "delay"), ("LAB_DELAY_MS", "10")]);
    delayed.initialize().await;
    assert_eq!(text(&delayed.call(1, "lab_probe", message.clone()).await.unwrap()), "lab_probe ok: probe");

    let mut malformed = Child::spawn(&[("LAB_SCENARIO", "malformed")]);
    malformed.initialize().await;
    let reply = malformed.call(1, "lab_probe", message.clone()).await.unwrap();
    assert_eq!(reply["jsonrpc"], "2.0");
    assert!(reply["result"]["content"][0]["text"].is_number(), "{reply}");

    let mut gone = Child::spawn(&[("LAB_SCENARIO", "disconnect")]);
    gone.initialize().await;
    assert_eq!(gone.call(1, "lab_probe", message).await, None);
    assert_eq!(gone.exit_code().await, Some(0));
}

#[tokio::test]
async fn http_prints_its_address_serves_and_exits_0_on_sigterm() {
    let (mut lab, url) = Lab::serve(&[]).await;
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    let response = crate::common::mcp_post(&http_client(), &url, body.to_string())
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "ping")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    lab.terminate();
    let status = tokio::time::timeout(PATIENCE, lab.child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// A subcommand's own `Exit codes:` line (above the common table) says the code it really exits with: bad input is
/// 1 for the commands that are checks (the table), and `faults`, `init` and `config` said 2.
#[test]
fn a_commands_own_exit_codes_line_says_the_code_it_exits_with() {
    let dir = tempfile::tempdir().unwrap();
    faultlab().args(["init"]).arg(dir.path().join("lab")).assert().success();
    let lab = dir.path().join("lab").display().to_string();
    let cases: [(&str, Vec<&str>, &str); 3] = [
        ("faults", vec!["no_such_fault"], "an unknown NAME"),
        ("init", vec![lab.as_str()], "a file it would write exists already"),
        ("config", vec!["--client", "cursor", "--rules", "/no/such/rules.yaml"], "bad input"),
    ];
    for (command, args, case) in cases {
        let code = faultlab().arg(command).args(&args).output().unwrap().status.code().unwrap();
        let help = String::from_utf8(faultlab().args([command, "--help"]).output().unwrap().stdout).unwrap();
        let own = help.lines().find(|l| l.starts_with("Exit codes: ")).unwrap_or_else(|| panic!("{command}: {help}"));
        assert!(
            own.contains(&format!("{code} {case}")),
            "faultlab {command} exits {code} for {case}, its help says: {own}"
        );
    }
}

/// Every subcommand's `--help` as users read it: a change to a flag, its default or its wording shows in review.
/// One vocabulary: every command with an output format takes `--format`; `--report`, its old name on run and eval,
/// is accepted but not shown.
#[test]
fn the_output_format_flag_is_format_everywhere_and_report_is_hidden() {
    for command in ["run", "eval", "compare", "diagnose"] {
        let help = faultlab().args([command, "--help"]).output().unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        assert!(help.contains("--format <"), "faultlab {command} --help has no --format:\n{help}");
        assert!(!help.contains("--report"), "faultlab {command} --help shows --report:\n{help}");
    }
    let ping = crate::common::repo("examples/scenarios/ping.yaml");
    faultlab().arg("run").arg(&ping).args(["--report", "json"]).assert().success().stdout(contains("\"passed\": true"));
}

#[test]
fn every_subcommands_help_is_as_recorded() {
    let top = faultlab().arg("--help").output().unwrap();
    assert!(top.status.success());
    let top = String::from_utf8(top.stdout).unwrap();
    insta::assert_snapshot!("help", top);
    // The subcommands are the indented words of the `Commands:` section (`help` itself aside).
    let commands: Vec<&str> = top
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(commands.len() >= 9, "{commands:?}");
    for command in commands {
        let help = faultlab().args([command, "--help"]).output().unwrap();
        assert!(help.status.success(), "{command} --help");
        insta::assert_snapshot!(format!("help_{command}"), String::from_utf8(help.stdout).unwrap());
    }
}
