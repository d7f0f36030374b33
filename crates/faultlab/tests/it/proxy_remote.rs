//! `faultlab proxy --upstream https://…`: what is wrong with the upstream's TLS trust or headers is a usage error
//! (exit code 2) naming the flag, printed once, with no credential in it and no trajectory file written.

use assert_cmd::Command;
use predicates::prelude::*;
use predicates::str::contains;

const SECRET: &str = "tok-5ecret-6f1d2c";

fn proxy(extra: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("faultlab").unwrap();
    cmd.env_remove("MCP_TOKEN").arg("proxy").args(extra);
    cmd
}

#[test]
fn a_missing_environment_variable_or_ca_file_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let record = record.to_str().unwrap();
    let missing_env = ["--upstream", "https://127.0.0.1:9/mcp", "--record", record];
    proxy(&missing_env)
        .args(["--upstream-header-env", "Authorization: Bearer ${MCP_TOKEN}"])
        .assert()
        .code(2)
        .stderr(contains("--upstream-header-env authorization: the environment variable MCP_TOKEN is not set"));
    assert!(!dir.path().join("trajectory.jsonl").exists(), "nothing recorded for a run that never started");

    let ca = dir.path().join("no-such-ca.pem");
    proxy(&["--upstream", "https://127.0.0.1:9/mcp", "--upstream-ca", ca.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("--upstream-ca").and(contains("no-such-ca.pem")).and(contains("cannot read")));
}

#[test]
fn credentials_are_refused_where_they_would_leak_and_never_echoed() {
    // In the URL: it would be printed and logged; headers are the place.
    let in_url = format!("https://me:{SECRET}@mcp.example.com/mcp");
    let refused = proxy(&["--upstream", &in_url]).assert().code(2).stderr(contains("--upstream-header-env"));
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(!stderr.contains(SECRET), "{stderr}");
    // In clear to a remote host over plain http.
    let header = format!("Authorization: Bearer {SECRET}");
    let refused = proxy(&["--upstream", "http://mcp.example.com/mcp", "--upstream-header", &header])
        .assert()
        .code(2)
        .stderr(contains("https://"));
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(!stderr.contains(SECRET), "{stderr}");
}
