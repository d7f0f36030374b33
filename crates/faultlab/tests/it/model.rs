//! `faultlab model` end to end: bad input exits 2 naming what to fix, once; the endpoint prints its address,
//! answers from the script with the rules' faults, records every request, and exits 0 on SIGTERM.

use crate::common::{Lab, faultlab, http_client};
use predicates::str::contains;
use serde_json::{Value, json};

/// The line `faultlab model` prints when it serves.
const READY: &str = "faultlab: model listening at ";

const SCRIPT: &str = "steps:\n  - call: echo\n    arguments: {text: hi}\nanswer: done\n";

#[test]
fn a_bad_script_or_rule_exits_2_naming_what_to_fix_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.yaml");
    std::fs::write(&script, "answer: x\nsteps:\n  - call: echo\n    argument: {}\n").unwrap();
    let out = faultlab().args(["model", "--script"]).arg(&script).assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("script.yaml is invalid: steps[0]: unknown field `argument`"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "printed once: {stderr}");
    std::fs::write(&script, SCRIPT).unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, "rules:\n  - name: twice\n    fault: {type: duplicate}\n").unwrap();
    faultlab()
        .args(["model", "--script"])
        .arg(&script)
        .arg("--rules")
        .arg(&rules)
        .assert()
        .code(2)
        .stderr(contains("rule \"twice\": fault duplicate does not apply on the model hop"));
}

#[tokio::test]
async fn serves_the_script_with_the_rules_faults_records_and_exits_0_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (script, rules, record) = (dir.path().join("s.yaml"), dir.path().join("r.yaml"), dir.path().join("m.jsonl"));
    std::fs::write(&script, SCRIPT).unwrap();
    std::fs::write(
        &rules,
        "rules:\n  - name: first\n    match: {nth: 1}\n    fault: {type: rate_limit, retry_after_sec: 1}\n",
    )
    .unwrap();
    let args = ["model", "--port", "0", "--script", script.to_str().unwrap(), "--rules", rules.to_str().unwrap()];
    let mut args = args.to_vec();
    args.extend(["--record", record.to_str().unwrap()]);
    let mut lab = Lab::start(&args, "faultlab: model listening at ").await;
    let base = lab.after("faultlab: model listening at ");
    assert!(base.ends_with("/v1"), "{base}");
    let client = http_client();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "go"}]});
    let limited = client.post(format!("{base}/chat/completions")).json(&body).send().await.unwrap();
    assert_eq!((limited.status().as_u16(), limited.headers()["retry-after"].to_str().unwrap()), (429, "1"));
    let answer: Value =
        client.post(format!("{base}/chat/completions")).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "echo");
    let recording = std::fs::read_to_string(&record).unwrap();
    let lines: Vec<Value> = recording.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{recording}");
    assert_eq!(lines[0]["fault"]["rule"], "first");
    lab.terminate();
    let status = tokio::time::timeout(crate::common::PATIENCE, lab.child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// `--record-from` with `faultlab model` itself as the real model, then `--script recording.jsonl` offline.
#[tokio::test]
async fn record_from_a_real_endpoint_then_replay_the_recording_offline() {
    let dir = tempfile::tempdir().unwrap();
    let (script, record) = (dir.path().join("s.yaml"), dir.path().join("rec.jsonl"));
    std::fs::write(&script, SCRIPT).unwrap();
    let mut real = Lab::start(&["model", "--port", "0", "--script", script.to_str().unwrap()], READY).await;
    let real_base = real.after("faultlab: model listening at ");
    let args = ["model", "--port", "0", "--record-from", &real_base, "--record", record.to_str().unwrap()];
    let mut recorder = Lab::start(&args, READY).await;
    let base = recorder.after("faultlab: model listening at ");
    let client = http_client();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "go"}]});
    let live: Value =
        client.post(format!("{base}/chat/completions")).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(live["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "echo");
    recorder.terminate();
    real.terminate();
    for lab in [&mut recorder, &mut real] {
        let status = tokio::time::timeout(crate::common::PATIENCE, lab.child.wait()).await.unwrap().unwrap();
        assert_eq!(status.code(), Some(0));
    }

    let mut offline = Lab::start(&["model", "--port", "0", "--script", record.to_str().unwrap()], READY).await;
    let base = offline.after("faultlab: model listening at ");
    let replayed: Value =
        client.post(format!("{base}/chat/completions")).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(replayed, live, "the recorded answer, offline");
    offline.terminate();
    let status = tokio::time::timeout(crate::common::PATIENCE, offline.child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));

    // --record-from needs --record, and a URL.
    faultlab().args(["model", "--record-from", "http://127.0.0.1:1/v1"]).assert().code(2).stderr(contains("--record"));
    let out =
        faultlab().args(["model", "--record-from", "ftp://x", "--record"]).arg(dir.path().join("r2.jsonl")).assert();
    out.code(2).stderr(contains("--record-from ftp://x: an http:// or https:// base URL is required"));
}
