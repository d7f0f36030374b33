//! The reference client against the real `faultlab serve`: it reaches the right outcome for each fault and counts
//! what SDK clients hide (duplicates, late and unknown-id responses, unparsable frames) on every transport.

use crate::common::BIN;
use crate::common::Lab;
use faultlab_client::{Anomalies, Connection, Era, ErrorKind, Outcome, Target};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;

const SETUP: Duration = Duration::from_secs(10);
const DEADLINE: Duration = Duration::from_secs(5);

fn stdio_target() -> Target {
    Target::Stdio { command: BIN.into(), args: vec!["serve".into()], cwd: None, env: Default::default() }
}

async fn http_server() -> (Lab, Target) {
    let (lab, url) = Lab::serve(&[]).await;
    (lab, Target::Http { url, headers: Default::default() })
}

/// Opens a connection to `target` in `era` and runs the faults every transport shares on it; returns it with the
/// anomalies seen (one duplicate response on every transport). A reply with a wrong id answers nothing: on stdio
/// the call times out; over HTTP the response ends without an answer, which the client knows at once.
async fn common_faults(target: &Target, era: Era, unanswered: Outcome) -> (Connection, Anomalies) {
    let connection = Connection::open(target, era, SETUP).await.unwrap();
    let ping = connection.call_tool("ping", json!({}), DEADLINE).await;
    assert_eq!(ping.outcome, Outcome::Success, "{ping:?}");

    let dup = connection.call_tool("duplicate_response", json!({}), DEADLINE).await;
    assert_eq!(dup.outcome, Outcome::Success);
    let malformed = connection.call_tool("malformed_message", json!({"variant": "result-with-error"}), DEADLINE).await;
    assert_eq!(malformed.error_kind, Some(ErrorKind::InvalidResponse), "{malformed:?}");

    let wrong = connection.call_tool("wrong_id", json!({}), Duration::from_millis(300)).await;
    assert_eq!(wrong.outcome, unanswered, "a reply to an unknown id answers nothing");

    let noisy = connection.call_tool("non_json_line", json!({}), DEADLINE).await;
    assert_eq!(noisy.outcome, Outcome::Success, "a stray line is skipped");

    let hung = connection.call_tool("hang", json!({}), Duration::from_millis(200)).await;
    assert_eq!(hung.outcome, Outcome::Timeout);

    let after = connection.call_tool("ping", json!({}), DEADLINE).await;
    assert_eq!(after.outcome, Outcome::Success, "the connection survives all of it");
    assert_eq!(connection.responses_for(&dup.request_id), 2, "both copies were seen");
    let anomalies = connection.anomalies();
    assert_eq!(anomalies.duplicate_responses, 1);
    (connection, anomalies)
}

#[tokio::test]
async fn stdio_legacy() {
    let (connection, anomalies) = common_faults(&stdio_target(), Era::Legacy, Outcome::Timeout).await;
    assert_eq!(anomalies.unknown_id_responses, 1);
    assert_eq!(anomalies.unparsable_frames, 1, "{anomalies:?}");

    let cut = connection.call_tool("truncated_response", json!({}), Duration::from_millis(300)).await;
    assert_eq!(cut.outcome, Outcome::Timeout);
    assert_eq!(connection.anomalies().unparsable_frames, 2);

    let late = connection.call_tool("response_after_cancellation", json!({}), Duration::from_millis(200)).await;
    assert_eq!(late.outcome, Outcome::Timeout);
    // The late result arrives after the cancel; the next call's reply follows it on the same pipe.
    connection.call_tool("ping", json!({}), DEADLINE).await;
    assert_eq!(connection.anomalies().late_responses, 1);

    let gone = connection.call_tool("disconnect", json!({}), DEADLINE).await;
    assert_eq!(gone.outcome, Outcome::TransportLoss);
    assert!(!connection.is_alive());
}

#[tokio::test]
async fn stdio_modern() {
    common_faults(&stdio_target(), Era::Modern, Outcome::Timeout).await;
}

#[tokio::test]
async fn http_legacy_session() {
    let (_server, target) = http_server().await;
    let (connection, _) = common_faults(&target, Era::Legacy, Outcome::TransportLoss).await;

    let limited = connection.call_tool("http_status", json!({"status": 429, "retryAfterSec": 3}), DEADLINE).await;
    assert_eq!((limited.error_kind, limited.http_status), (Some(ErrorKind::HttpStatus), Some(429)));
    assert_eq!(limited.error.as_ref().unwrap()["retryAfter"], "3");

    let cut = connection.call_tool("disconnect", json!({}), DEADLINE).await;
    assert_eq!(cut.outcome, Outcome::TransportLoss);
    let lost = connection.call_tool("session_loss", json!({"activation": "after_response"}), DEADLINE).await;
    assert_eq!(lost.outcome, Outcome::Success);
    let after = connection.call_tool("ping", json!({}), DEADLINE).await;
    assert_eq!((after.error_kind, after.http_status), (Some(ErrorKind::HttpStatus), Some(404)));
    connection.close().await;
}

#[tokio::test]
async fn http_modern() {
    let (_server, target) = http_server().await;
    let (connection, _) = common_faults(&target, Era::Modern, Outcome::TransportLoss).await;
    let cut = connection.call_tool("disconnect", json!({}), DEADLINE).await;
    assert_eq!(cut.outcome, Outcome::TransportLoss);
    assert_eq!(connection.call_tool("ping", json!({}), DEADLINE).await.outcome, Outcome::Success);
}

#[tokio::test]
async fn the_demo_passes_and_writes_its_reports() {
    let out = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(BIN)
        .args(["demo", "--out"])
        .arg(out.path())
        .stderr(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    // The control agents' failures are the expected ones, and said to be; the tool-error run says what diagnose
    // will make of its trace.
    let console = String::from_utf8(output.stdout).unwrap();
    for agent in ["blind-retrier", "hallucinating", "gives-up"] {
        let line = console.lines().find(|l| l.contains(agent)).unwrap_or_else(|| panic!("{console}"));
        assert!(line.trim_start().starts_with("EXPECTED"), "{line}");
    }
    // It ends with one verdict line, the eval part's oracle agreement in it.
    let last = console.lines().rev().find(|l| !l.is_empty()).unwrap();
    assert!(last.starts_with("Verdict: as expected (") && last.contains("eval 4 of 4 verdicts as expected"), "{last}");
    let eval_html = std::fs::read_to_string(out.path().join("eval/report.html")).unwrap();
    assert!(eval_html.contains("<p class=\"headline\">4 of 4 verdicts as expected</p>"));
    let tool_error = console.lines().find(|l| l.contains("tool-error ")).unwrap();
    assert!(tool_error.contains("retry storm"), "{tool_error}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("demo.json")).unwrap()).unwrap();
    assert_eq!(report["passed"], true);
    assert_eq!(report["results"].as_array().unwrap().len(), 7);
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("traces/tool-error.json")).unwrap()).unwrap();
    let calls = trace.as_array().unwrap().iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(calls, 5, "the tool-error trace shows every retried call");
    let junit = std::fs::read_to_string(out.path().join("junit.xml")).unwrap();
    assert!(junit.contains("tests=\"7\" failures=\"0\""));
    // It ends with an exploration of the blind retrier, which a timeout after its write breaks.
    let explored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("explore/report.json")).unwrap()).unwrap();
    let broke: Vec<&serde_json::Value> = explored["explorations"][0]["variants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["broke"] == true)
        .flat_map(|v| v["faults"].as_array().unwrap())
        .collect();
    assert!(broke.iter().any(|f| f["class"] == "timeout-after" && f["tool"] == "write_file"), "{broke:?}");
    // index.html makes the folder a static site: it links every file the demo wrote, each link resolves, and it
    // carries the verdict the console ends with.
    let index = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    let links: Vec<&str> = index.split("href=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]).collect();
    for link in &links {
        assert!(out.path().join(link).is_file(), "index.html links {link}, which is not a file");
    }
    let mut written = Vec::new();
    let mut dirs = vec![out.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if !path.ends_with("index.html") {
                written.push(path.strip_prefix(out.path()).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    for file in ["demo.json", "junit.xml", "eval/report.html", "explore/report.html", "suite/report.json"] {
        assert!(written.iter().any(|w| w == file), "the demo wrote no {file}");
    }
    for file in &written {
        // The demo's file names are plain slugs: their links need no percent-encoding.
        assert!(links.contains(&file.as_str()), "index.html does not link {file}");
    }
    assert!(index.contains(&last.replace('\'', "&#39;")), "index.html does not carry the verdict: {last}");
}
