//! `faultlab eval` on a task whose server requires OAuth (`server: {transport: http, auth: …}`), through the real
//! binary: sealed, the agent reaches the run's proxy through the sandbox's loopback relay and authorizes itself; the
//! control that re-authorizes after the grant is revoked passes, the one that gives up fails; and no token, code or
//! verifier the authorization server handed out is anywhere in the run's output.

use crate::common::{control_agent, faultlab, python3, read_json, repo};
use predicates::prelude::PredicateBooleanExt as _;
use predicates::str::contains;

const TASK: &str = "examples/eval/auth/authorization-token-revoked-midtask.yaml";

/// One sealed run of the built-in auth task by the control agent `agent`; its report's run, its proxy log and its
/// trajectory.
fn sealed(agent: &str, code: i32) -> (serde_json::Value, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    faultlab()
        .args(["eval", "--agent", &control_agent(agent), "--out"])
        .arg(&out)
        .arg(repo(TASK))
        .assert()
        .code(code)
        .stdout(contains(format!("authorization-token-revoked-midtask × {agent} #1")));
    let run = read_json(out.join("report.json"))["runs"][0].clone();
    let dir = out.join(run["dir"].as_str().unwrap());
    let config = read_json(dir.join("mcp.json"));
    let url = config["mcpServers"]["workspace"]["url"].as_str().unwrap().to_owned();
    assert_eq!(config["mcpServers"]["workspace"]["type"], "http", "{config}");
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    let trajectory = std::fs::read_to_string(dir.join("trajectory.jsonl")).unwrap();
    (run, std::fs::read_to_string(dir.join("proxy.log")).unwrap(), trajectory)
}

/// The `tools/call` lines of a trajectory the authorization refused: (tool, status, error code).
fn refused_calls(trajectory: &str) -> Vec<(String, u64, String)> {
    trajectory
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|e| e["action"] == "refused" && e["method"] == "tools/call")
        .map(|e| {
            let refused = &e["refused"];
            (e["tool"].as_str().unwrap().to_owned(), refused["status"].as_u64().unwrap(), refused["error"].to_string())
        })
        .collect()
}

#[test]
fn a_sealed_agent_that_authorizes_again_after_revocation_passes_and_one_that_gives_up_fails() {
    let (good, log, trajectory) = sealed("good", 0);
    // Only where the kernel gives namespaces is the relay in use; the report says which network the agent had.
    if good["isolation"] != "subreaper" {
        assert_eq!(good["network"], "private", "{good}");
    }
    assert_eq!(good["verdict"]["recovery"]["outcome"], "recovered", "{good}");
    let count = |log: &str, event: &str| log.lines().filter(|l| l.contains(&format!(r#""auth":"{event}""#))).count();
    assert_eq!(count(&log, "grant_revoked"), 1, "{log}");
    assert_eq!(count(&log, "refresh_refused"), 1, "{log}");
    assert_eq!(count(&log, "authorization_started"), 2, "a new authorization after invalid_grant: {log}");
    // The report counts them.
    assert_eq!(good["auth_events"]["authorization_started"], 2, "{good}");
    assert_eq!(good["auth_events"]["token_refused"], 1, "{good}");
    // The refused call is in the trajectory, one that failed: the grade sees the agent recover from it by sending
    // it again once authorized. The grant is revoked after three requests; the good agent lists the tools before
    // its first call, so its third request is that listing and the read is refused (the others' is the read, and
    // their write is refused).
    let read = ("read_file".to_owned(), 401, r#""invalid_token""#.to_owned());
    assert_eq!(refused_calls(&trajectory), [read], "{trajectory}");
    assert!(trajectory.contains(r#""method":"tools/list""#), "{trajectory}");
    let write = ("write_file".to_owned(), 401, r#""invalid_token""#.to_owned());
    assert_eq!(good["verdict"]["recovery"]["strategy"], "retry", "{good}");
    let detail = good["verdict"]["recovery"]["detail"].as_str().unwrap();
    assert!(detail.contains("refused by the authorization: 401 invalid_token"), "{detail}");
    assert_eq!(good["verdict"]["efficiency"]["retries"], 1, "{good}");
    // The authorization server's fault is the run's fault, for the reports' "by fault" table.
    assert_eq!(good["faults"], serde_json::json!(["token_revoked"]), "{good}");

    let (gave_up, log, trajectory) = sealed("gives-up", 2);
    assert_eq!(gave_up["verdict"]["passed"], false);
    assert_eq!(gave_up["verdict"]["recovery"]["outcome"], "aborted-safely", "{gave_up}");
    assert_eq!(count(&log, "refresh_refused"), 1, "{log}");
    assert_eq!(count(&log, "authorization_started"), 1, "no new authorization: {log}");
    assert_eq!(gave_up["auth_events"]["refresh_refused"], 1, "{gave_up}");
    assert!(gave_up["claim"]["message"].as_str().unwrap().contains("401"), "{gave_up}");
    // Its one refused write is the failure it answered by stopping.
    assert_eq!(refused_calls(&trajectory), [write], "{trajectory}");
    assert_eq!(gave_up["verdict"]["recovery"]["strategy"], "abort", "{gave_up}");
}

/// An agent that does the flow itself (`oauth_agent.py`: plain HTTP, no SDK) writes down every secret it was handed
/// (codes, verifiers, access and refresh tokens of both grants); none of them is in any file of the run's output.
/// Unsealed, so that the agent can write them where the test reads them.
#[test]
fn no_token_code_or_verifier_reaches_any_file_of_the_output() {
    if !python3("no_token_code_or_verifier_reaches_any_file_of_the_output") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, secrets) = (dir.path().join("out"), dir.path().join("secrets.json"));
    let agent = format!("python3 {}", repo("crates/faultlab/tests/it/oauth_agent.py").display());
    faultlab()
        .env("FAULTLAB_SANDBOX", "subreaper")
        .env("FAULTLAB_TEST_SECRETS", &secrets)
        .args(["eval", "--pass-env", "FAULTLAB_TEST_SECRETS", "--agent", &agent, "--out"])
        .arg(&out)
        .arg(repo(TASK))
        .assert()
        .code(0)
        .stdout(contains("PASS authorization-token-revoked-midtask × oauth_agent #1"));
    let secrets: Vec<String> = serde_json::from_value(read_json(&secrets)).unwrap();
    // Two grants: a code, a verifier, an access and a refresh token each.
    assert!(secrets.len() >= 8, "{secrets:?}");
    let mut files = vec![out.clone()];
    let (mut read, mut refused) = (0, 0);
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if path.ends_with("trajectory.jsonl") {
            refused += text.lines().filter(|l| l.contains(r#""action":"refused""#)).count();
        }
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{} holds a secret the authorization server issued",
                path.display()
            );
        }
        read += 1;
    }
    // The reports, and the run's trajectory, proxy log, claim, agent log, task, rules and mcpServers file.
    assert!(read >= 10, "{read} files");
    // The requests the authorization refused are in the trajectory searched (the first, with no token, and the
    // write after the revocation at least), recorded without the token they carried.
    assert!(refused >= 2, "{refused} refused requests in the trajectory");
}

/// A task over HTTP whose server cannot start: the proxy never listens, so there is no URL to give the agent; the
/// run is an error of the set-up (exit 1) naming the proxy's log, and the agent is never started.
#[test]
fn an_http_task_whose_server_cannot_start_is_a_run_error() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("task.yaml");
    std::fs::write(
        &task,
        "id: broken\nname: Broken\ngoal: g\nallowed_tools: [read_file]\nrecovery: {primary: read_file}\n\
         server: {command: [/nonexistent/mcp-server], transport: http, auth: true}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    faultlab().args(["eval", "--agent", &control_agent("good"), "--out"]).arg(&out).arg(&task).assert().code(1);
    let run = read_json(out.join("report.json"))["runs"][0].clone();
    assert!(run["error"].as_str().unwrap().contains("did not start listening (see proxy.log)"), "{run}");
    assert_eq!(run["end"]["end"], "failed_to_start", "{run}");
}

/// Replay does not serve a task over HTTP: its run is an error of the set-up, and the console says it was not
/// replayed and why (never FAIL, which would be a verdict on the agent); the exit is 1, not 2.
#[test]
fn a_run_of_an_http_task_is_not_replayed_and_the_console_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = dir.path().join("recorded");
    faultlab()
        .args(["eval", "--agent", &control_agent("good"), "--out"])
        .arg(&recorded)
        .arg(repo("examples/eval/http/transport-stream-lost-read.yaml"))
        .assert()
        .code(0)
        .stdout(contains("PASS transport-stream-lost-read × good #1"));
    let out = dir.path().join("replayed");
    faultlab()
        .arg("replay")
        .arg(recorded.join("report.json"))
        .arg("--out")
        .arg(&out)
        .assert()
        .code(1)
        .stdout(
            contains("NOT REPLAYED transport-stream-lost-read × good #1: replay does not serve a task over HTTP")
                .and(contains("FAIL").not()),
        )
        .stderr(contains("1 of 1 run could not be replayed"));
    let run = read_json(out.join("report.json"))["runs"][0].clone();
    assert!(run["error"].as_str().unwrap().contains("over HTTP"), "{run}");
}
