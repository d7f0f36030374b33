//! A recording as the upstream (`faultlab proxy --replay`): each request answered with the recorded reply to the
//! same call, whatever order its arguments come in, the rules applied on top, and a clear error for a call the
//! recording lacks.

use faultlab_engine::Recorder;
use faultlab_engine::recording::Recording;
use faultlab_engine::trajectory::Trajectory as Recorded;
use faultlab_proxy::front::stdio;
use faultlab_proxy::recording::{self, NOT_RECORDED};
use faultlab_proxy::relay::ProxyOptions;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// A recorded session: `initialize`, `tools/list`, and `echo` called twice with the same arguments.
fn recording() -> Recording {
    let request = |id: u32, method: &str, extra: &str| {
        format!(
            r#"{{"tsMs":1,"scope":"stdio","event":"frame","direction":"client_to_server","action":"forwarded","id":{id},"method":"{method}","bytes":1{extra}}}"#
        )
    };
    let reply = |id: u32, result: Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
        format!(
            r#"{{"tsMs":2,"scope":"stdio","event":"frame","direction":"server_to_client","action":"forwarded","id":{id},"bytes":1,"body":{body}}}"#
        )
    };
    let echo = r#","tool":"echo","arguments":{"a":1,"b":{"y":2,"x":3}}"#;
    let lines = [
        request(0, "initialize", ""),
        reply(0, json!({"protocolVersion": "2025-11-25", "serverInfo": {"name": "recorded"}})),
        request(1, "tools/list", ""),
        reply(1, json!({"tools": [{"name": "echo"}]})),
        request(2, "tools/call", echo),
        reply(2, json!({"content": [{"type": "text", "text": "first"}]})),
        request(3, "tools/call", echo),
        reply(3, json!({"content": [{"type": "text", "text": "second"}]})),
    ];
    Recording::from_trajectory(&Recorded::parse(&lines.join("\n")).unwrap())
}

#[tokio::test]
async fn requests_are_answered_from_the_recording_with_the_rules_on_top() {
    let rules: RulesFile = yaml_serde::from_str(
        "rules:\n  - name: twice\n    match: { method: tools/list }\n    fault: { type: duplicate }\n",
    )
    .unwrap();
    let (client, proxy_side) = tokio::io::duplex(1 << 16);
    let (input, output) = tokio::io::split(proxy_side);
    let recorder = Recorder::memory();
    let trajectory = Arc::new(Trajectory::new(recorder.clone()));
    let stop = CancellationToken::new();
    let options = ProxyOptions { max_frame_bytes: 1 << 20, ..ProxyOptions::default() };
    let rules = RuleSet::new(rules).shared();
    let proxy =
        tokio::spawn(stdio::run(options, recording::Replay(recording()), rules, trajectory, input, output, stop));

    let (read, mut write) = tokio::io::split(client);
    let echo = |id: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#
        )
    };
    let lines = [
        r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":10,"method":"tools/list"}"#.to_owned(),
        // The same arguments, keys in another order: the same call.
        echo("11", r#"{"b":{"x":3,"y":2},"a":1}"#),
        echo("12", r#"{"a":1,"b":{"x":3,"y":2}}"#),
        // Asked once more than recorded: the last reply again.
        echo("13", r#"{"a":1,"b":{"x":3,"y":2}}"#),
        echo("14", r#"{"a":2,"b":{"x":3,"y":2}}"#),
        r#"{"jsonrpc":"2.0","id":15,"method":"ping"}"#.to_owned(),
    ];
    for line in &lines {
        write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    write.shutdown().await.unwrap();
    let mut answers = Vec::new();
    let mut reader = BufReader::new(read).lines();
    while let Some(line) = reader.next_line().await.unwrap() {
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    proxy.await.unwrap().unwrap();

    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!("i"), &json!(10), &json!(10), &json!(11), &json!(12), &json!(13), &json!(14), &json!(15)]);
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "recorded");
    assert_eq!(answers[1], answers[2], "the duplicate rule applies to the recorded reply");
    let text = |i: usize| answers[i]["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!([text(3), text(4), text(5)], ["first", "second", "second"]);
    let error = &answers[6]["error"];
    assert_eq!(error["code"], NOT_RECORDED);
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(r#"no reply for tools/call echo {"a":2,"b":{"x":3,"y":2}}"#), "{message}");
    assert!(message.contains(r#"the closest recorded call is tools/call echo {"a":1,"b":{"x":3,"y":2}}"#), "{message}");
    assert_eq!(answers[7]["result"], json!({}));
    // The trajectory of the replayed session is a trajectory like any other, ledger included.
    let records = recorder.records();
    assert!(matches!(records.last().unwrap().event, faultlab_engine::Event::Ledger { frames_in: 15, .. }));
}

/// `--replay TRAJECTORY -- CMD` (what `faultlab replay` runs): every request reaches the live server, the recorded
/// reply to the same call replaces its reply once, and a call the recording no longer holds gets the live reply;
/// the log says which was which.
#[tokio::test]
async fn a_recording_laid_over_a_live_server_replaces_its_replies_to_recorded_calls() {
    let lines = [
        r#"{"tsMs":1,"scope":"stdio","event":"frame","direction":"client_to_server","action":"forwarded","id":5,"method":"tools/call","tool":"delay","arguments":{"delayMs":0},"bytes":1}"#,
        r#"{"tsMs":2,"scope":"stdio","event":"frame","direction":"server_to_client","action":"forwarded","id":5,"bytes":1,"body":{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"from the recording"}]}}}"#,
    ];
    let recording = Recording::from_trajectory(&Recorded::parse(&lines.join("\n")).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("replay.jsonl");
    let over = recording::Over {
        recording,
        live: crate::harness::lab_server(),
        log: Some(std::fs::File::create(&log).unwrap()),
    };
    let mut client = crate::harness::Client::with_upstream(RulesFile::default(), over);
    client.initialize().await;
    let text = |reply: &Value| reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    let first = client.ask(&crate::harness::call(7, "delay", json!({"delayMs": 0}))).await;
    assert_eq!((first["id"].clone(), text(&first)), (json!(7), "from the recording".to_owned()), "{first}");
    let second = client.ask(&crate::harness::call(8, "delay", json!({"delayMs": 0}))).await;
    assert_eq!(second["id"], 8, "{second}");
    assert!(!text(&second).is_empty() && text(&second) != "from the recording", "the live reply: {second}");
    client.finish_clean().await;
    let froms: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["from"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(froms, ["live", "recorded", "live"], "initialize, then the recorded call, then the same call again");
}
