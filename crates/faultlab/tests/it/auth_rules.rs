//! A rules file's `auth` on the real binary: the HTTP proxy's authorization server plays the auth fault at the
//! requests its `match` names, on the wire and in the trajectory, and the reference client recovers; the mistakes
//! of writing one are usage errors naming the file and the key.

use crate::auth::{auth_proxy, client, ended, run_flow};
use crate::common::{Lab, faultlab, mcp_post, repo};
use faultlab_engine::trajectory::Trajectory;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::Path;

const EXAMPLE: &str = "examples/rules/auth-token-expired-at-write.yaml";

/// `faultlab proxy --listen 127.0.0.1:0 --auth --rules RULES` in front of a workspace server on `root`, recording
/// to `record`.
async fn proxy(rules: &Path, root: &Path, record: &Path) -> (Lab, tokio::task::JoinHandle<String>, String) {
    let bin = crate::common::bin();
    let upstream = [bin.as_str(), "workspace-server", "--root", root.to_str().unwrap()];
    auth_proxy(record, &["--rules", rules.to_str().unwrap()], &upstream).await
}

/// The refused requests of a trajectory.
fn refused(trajectory: &str) -> Vec<Refused> {
    let read = Trajectory::parse(trajectory).unwrap();
    read.exchanges()
        .iter()
        .filter_map(|e| {
            let r = e.refused()?;
            Some((e.method().to_owned(), e.tool().map(str::to_owned), r.status, r.error.clone(), r.fault.clone()))
        })
        .collect()
}

/// A refused request: method, tool, status, challenge error and the auth fault that refused it.
type Refused = (String, Option<String>, u16, Option<String>, Option<String>);

/// The client's first request, sent without credentials to discover the authorization server.
fn discovery() -> Refused {
    ("initialize".into(), None, 401, None, None)
}

fn expired_write() -> Refused {
    ("tools/call".into(), Some("write_file".into()), 401, Some("invalid_token".into()), Some("token_expired".into()))
}

#[tokio::test]
async fn the_token_expires_at_the_first_write_and_calls_before_it_pass_with_the_same_token() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let (mut lab, rest, url) = proxy(&repo(EXAMPLE), &root, &record).await;
    let http = client();
    let flow = run_flow(&http, &url).await;
    let post = |body: Value| {
        let mut request = mcp_post(&http, &url, body.to_string()).bearer_auth(&flow.access);
        if let Some(session) = &flow.session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let initialized = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.unwrap();
    assert!(initialized.status().is_success(), "{}", initialized.status());
    for id in [2, 3] {
        let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "list_dir", "arguments": {"path": "."}}});
        let answer = post(list).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "the same token passes before the write");
        assert!(answer.text().await.unwrap().contains("\"result\""));
    }
    let write = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}});
    let answer = post(write).await.unwrap();
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    let challenge = answer.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata=\""), "{challenge}");
    assert!(!root.join("a.txt").exists(), "the refused write never reached the server");
    let stderr = ended(&mut lab, rest).await;
    assert!(stderr.contains("auth fault token_expired at the requests the rules file's auth.match names"), "{stderr}");
    assert!(stderr.contains("\"auth\":\"fault_matched\""), "{stderr}");
    let trajectory = std::fs::read_to_string(&record).unwrap();
    assert_eq!(refused(&trajectory), [discovery(), expired_write()], "{trajectory}");
    let read = Trajectory::parse(&trajectory).unwrap();
    let failed: Vec<_> =
        read.tool_calls().iter().filter(|c| c.failed()).filter_map(|c| c.tool().map(str::to_owned)).collect();
    assert_eq!(failed, ["write_file"], "the refused write is the one failed call: {trajectory}");
}

/// `faultlab run` of `scenario` (the reference client's auth mode) against the proxy at `url`: its JSON report.
async fn run_scenario(dir: &Path, url: &str, scenario: &str) -> Value {
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, scenario).unwrap();
    let target = dir.join("http.yaml");
    std::fs::write(&target, format!("adapter: mcp\nconfig:\n  http:\n    url: {url}\n")).unwrap();
    let out = dir.join("out");
    let args: Vec<String> = [&path, &target, &out].iter().map(|p| p.to_str().unwrap().to_owned()).collect();
    let output = tokio::task::spawn_blocking(move || {
        faultlab()
            .args(["run", &args[0], "--target", &args[1], "--out", &args[2], "--format", "json"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)))
}

#[tokio::test]
async fn the_reference_client_refreshes_at_the_expired_write_and_every_write_lands() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let (mut lab, rest, url) = proxy(&repo(EXAMPLE), &root, &record).await;
    let report = run_scenario(
        dir.path(),
        &url,
        "name: the token expires at the first write\nprotocolVersion: \"2025-11-25\"\ntransports: [http]\nauth: {}\n\
         steps:\n\
         - call: {tool: list_dir, args: {path: .}}\n  expect: {outcome: success, auth: {authorizations: 1}}\n\
         - call: {tool: list_dir, args: {path: .}}\n  expect: {outcome: success, auth: {authorizations: 0, refreshes: 0}}\n\
         - call: {tool: write_file, args: {path: a.txt, content: one}}\n  \
           expect: {outcome: success, auth: {refreshes: 1, reauthorizations: 0, failures: 0, maxTokenRequests: 1}}\n\
         - call: {tool: write_file, args: {path: b.txt, content: two}}\n  expect: {outcome: success, auth: {refreshes: 0}}\n",
    )
    .await;
    ended(&mut lab, rest).await;
    assert_eq!(report["scenarios"][0]["passed"], true, "{report:#}");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "one", "the retried write landed");
    assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "two");
    let trajectory = std::fs::read_to_string(&record).unwrap();
    assert_eq!(refused(&trajectory), [discovery(), expired_write()], "one refused write, then its retry: {trajectory}");
}

#[tokio::test]
async fn insufficient_scope_at_a_matched_tool_makes_the_reference_client_step_up_there() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "auth:\n  fault: { type: insufficient_scope, scope: \"mcp:write\" }\n  match: { tool: \"write_*\" }\n",
    )
    .unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let (mut lab, rest, url) = proxy(&rules, &root, &record).await;
    let report = run_scenario(
        dir.path(),
        &url,
        "name: a write needs mcp:write\nprotocolVersion: \"2025-11-25\"\ntransports: [http]\nauth: {}\nsteps:\n\
         - call: {tool: list_dir, args: {path: .}}\n  expect: {outcome: success, auth: {authorizations: 1, stepUps: 0}}\n\
         - call: {tool: write_file, args: {path: a.txt, content: one}}\n  expect: {outcome: success, auth: {stepUps: 1, failures: 0}}\n\
         - call: {tool: write_file, args: {path: b.txt, content: two}}\n  expect: {outcome: success, auth: {stepUps: 0}}\n",
    )
    .await;
    ended(&mut lab, rest).await;
    assert_eq!(report["scenarios"][0]["passed"], true, "{report:#}");
    assert!(root.join("a.txt").exists() && root.join("b.txt").exists());
    let trajectory = std::fs::read_to_string(&record).unwrap();
    let step_up = (
        "tools/call".into(),
        Some("write_file".into()),
        403,
        Some("insufficient_scope".into()),
        Some("insufficient_scope".into()),
    );
    assert_eq!(refused(&trajectory), [discovery(), step_up], "{trajectory}");
}

#[test]
fn an_auth_key_is_refused_where_nothing_would_play_it() {
    let example = repo(EXAMPLE);
    let example = example.to_str().unwrap();
    let usage = |args: &[&str], code: i32, wanted: &[&str]| {
        let out = faultlab().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        for want in wanted {
            assert!(stderr.contains(want), "{want:?} not in {stderr}");
        }
    };
    usage(&["proxy", "--rules", example, "--", "true"], 2, &[example, "`auth`", "--auth"]);
    usage(
        &[
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--auth",
            "--auth-fault",
            "token_revoked",
            "--rules",
            example,
            "--",
            "true",
        ],
        2,
        &[example, "`auth`", "--auth-fault"],
    );
    // `faultlab config` writes a stdio proxy, which has no authorization server (exit 1: bad input to a command
    // that checks, docs/reference.md).
    usage(&["config", "--client", "cursor", "--rules", example], 1, &[example, "`auth`", "--listen ADDR --auth"]);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "auth:\n  fault: { type: refresh_slow }\n  match: { tool: write_file }\n").unwrap();
    let bad = bad.to_str().unwrap();
    usage(
        &["proxy", "--listen", "127.0.0.1:0", "--auth", "--rules", bad, "--", "true"],
        2,
        &[bad, "auth.match", "refresh_slow"],
    );
    usage(&["config", "--client", "cursor", "--rules", bad], 1, &[bad, "auth.match"]);
}

/// The shipped schema says what the loader says: an `auth.match` only for the three faults that act at a request,
/// never with the fault's own `after`, and without `probability` or `window`.
#[test]
fn the_rules_schema_takes_and_refuses_the_auth_keys_the_loader_does() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(repo("schemas/rules.schema.json")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let cases = [
        (json!({"auth": {"fault": {"type": "token_expired"}, "match": {"tool": "write_file", "nth": 1}}}), true),
        (json!({"auth": {"fault": {"type": "insufficient_scope", "scope": "mcp:admin"}, "match": {"every": 2}}}), true),
        (json!({"auth": {"fault": {"type": "refresh_slow", "delay_ms": 3000}}}), true),
        (json!({"auth": {"fault": {"type": "token_expired", "after": 3}}}), true),
        (json!({"auth": {"fault": {"type": "refresh_slow"}, "match": {"tool": "write_file"}}}), false),
        (json!({"auth": {"fault": {"type": "token_expired", "after": 3}, "match": {"nth": 1}}}), false),
        (json!({"auth": {"fault": {"type": "token_expired"}, "match": {"probability": 0.5}}}), false),
        (json!({"auth": {"fault": {"type": "token_expired"}, "match": {"window": {"from_ms": 1}}}}), false),
        (json!({"auth": {"fault": {"type": "token_expired"}, "extra": 1}}), false),
    ];
    for (file, valid) in cases {
        assert_eq!(validator.is_valid(&file), valid, "schema: {file}");
        let loaded = serde_json::from_value::<faultlab_proxy::rules::RulesFile>(file.clone());
        assert_eq!(loaded.is_ok(), valid, "loader: {file}");
    }
}
