//! Every detector on hand-made traces (`tests/corpus/<finding>-positive.json` finds exactly that finding;
//! `<finding>-negative*.json`, the well-behaved version of the same story, finds nothing), the demo's traces, and a
//! real proxy trajectory.

use crate::util::{corpus, diagnose, diagnose_text, diagnose_with, kinds};
use faultlab_diagnose::{FindingKind, Severity, Thresholds};

/// The negative cases of `kind`: every `tests/corpus/<name>-negative*.json`.
fn negatives(kind: FindingKind) -> Vec<String> {
    let prefix = format!("{}-negative", kind.name());
    let mut names: Vec<String> = std::fs::read_dir(corpus(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    names.sort();
    names
}

macro_rules! corpus_case {
    ($name:ident, $kind:expr) => {
        #[test]
        fn $name() {
            let kind: FindingKind = $kind;
            let positive = diagnose(&format!("{}-positive.json", kind.name()));
            assert_eq!(kinds(&positive), vec![kind], "positive case: {:#?}", positive.findings);
            assert!(positive.not_checked.iter().all(|n| n.kind != kind), "{kind:?} ran on its positive case");
            let finding = &positive.findings[0];
            assert!(!finding.evidence.is_empty() && finding.evidence.contains(&finding.at), "{finding:#?}");
            assert!(!finding.robust.is_empty() && !finding.summary.is_empty());
            let negatives = negatives(kind);
            assert!(!negatives.is_empty(), "no negative case for {kind:?}");
            for name in negatives {
                let negative = diagnose(&name);
                assert!(negative.findings.is_empty(), "{name}: {:#?}", negative.findings);
                assert!(negative.not_checked.iter().all(|n| n.kind != kind), "{kind:?} did not run on {name}");
            }
        }
    };
}

corpus_case!(tool_loop, FindingKind::ToolLoop);
corpus_case!(retry_storm, FindingKind::RetryStorm);
corpus_case!(unhandled_tool_error, FindingKind::UnhandledToolError);
corpus_case!(false_success, FindingKind::FalseSuccess);
corpus_case!(ignored_timeout, FindingKind::IgnoredTimeout);
corpus_case!(duplicate_side_effect, FindingKind::DuplicateSideEffect);
corpus_case!(retry_without_backoff, FindingKind::RetryWithoutBackoff);
corpus_case!(error_swallowed, FindingKind::ErrorSwallowed);
corpus_case!(corrected_retry, FindingKind::CorrectedRetry);

#[test]
fn the_demo_tool_error_trace_has_a_loop_and_a_storm_where_they_happen() {
    let d = diagnose("demo-tool-error.json");
    let found: Vec<(FindingKind, usize)> = d.findings.iter().map(|f| (f.kind, f.at)).collect();
    assert_eq!(
        found,
        [(FindingKind::ToolLoop, 5), (FindingKind::RetryStorm, 7)],
        "the third identical call makes the loop, the third retry the storm"
    );
    let storm = &d.findings[1];
    assert_eq!(storm.severity, Severity::Warning);
    assert_eq!(storm.evidence, (1..=10).collect::<Vec<_>>());
    assert_eq!(storm.counts["retries"], 4);
    // No timestamps in the demo's messages: the backoff check says it could not run rather than guess; the trace
    // ends on the fifth failure, so what came next is said to be unrecorded rather than called unhandled.
    let skipped: Vec<(FindingKind, &str)> = d.not_checked.iter().map(|n| (n.kind, n.reason.as_str())).collect();
    assert_eq!(skipped[0].0, FindingKind::RetryWithoutBackoff);
    assert_eq!(skipped[1].0, FindingKind::UnhandledToolError);
    assert!(skipped[1].1.contains("5 times in a row") && skipped[1].1.contains("message 10"), "{}", skipped[1].1);
    assert_eq!(skipped.len(), 2);
}

#[test]
fn the_demo_healthy_trace_has_no_findings() {
    let d = diagnose("demo-healthy.json");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    assert_eq!((d.entries, d.calls), (3, 1));
}

#[test]
fn a_proxy_trajectory_gets_the_detectors_it_has_data_for() {
    // Recorded with `faultlab proxy --record` in front of an echo server, three rules answering the first three
    // `echo({"text":"a"})` calls with HTTP 503; the client repeated the call at once after each.
    let d = diagnose("proxy/retry-same-call-no-backoff.jsonl");
    assert_eq!(kinds(&d), [FindingKind::ToolLoop, FindingKind::RetryWithoutBackoff, FindingKind::RetryStorm]);
    let storm = d.findings.iter().find(|f| f.kind == FindingKind::RetryStorm).unwrap();
    assert_eq!((storm.tool.as_str(), storm.at), ("echo", 17), "positions are trajectory line numbers");
    let mut skipped: Vec<&str> = d.not_checked.iter().map(|n| n.kind.name()).collect();
    skipped.sort();
    assert_eq!(
        skipped,
        ["error_swallowed", "false_success", "ignored_timeout", "unhandled_tool_error"],
        "a trajectory records no agent messages"
    );
    // An older trajectory (no arguments recorded: the proxy then did not write them) cannot tell a retry from
    // another call of the tool, so the retry detectors say they did not run.
    let old = diagnose("proxy-rate-limited.jsonl");
    assert!(old.findings.is_empty(), "{:#?}", old.findings);
    for kind in [FindingKind::RetryStorm, FindingKind::RetryWithoutBackoff, FindingKind::ToolLoop] {
        let note = old.not_checked.iter().find(|n| n.kind == kind).expect("not checked");
        assert!(note.reason.contains("no call arguments"), "{}", note.reason);
    }
}

#[test]
fn thresholds_move_findings_in_and_out() {
    let loose = Thresholds { loop_min_calls: 6, storm_min_retries: 5, ..Thresholds::default() };
    assert!(kinds(&diagnose_with("demo-tool-error.json", &loose)).is_empty());
    let patient = Thresholds { min_backoff_ms: 4.0, ..Thresholds::default() };
    assert!(
        diagnose_with("retry_without_backoff-positive.json", &patient).findings.is_empty(),
        "5 ms gaps pass a 4 ms minimum"
    );
    let strict = Thresholds { quick_retries: 1, ..Thresholds::default() };
    let d = diagnose_with("proxy/retry-same-call-no-backoff.jsonl", &strict);
    assert_eq!(d.findings.iter().find(|f| f.kind == FindingKind::RetryWithoutBackoff).unwrap().at, 10);
}

#[test]
fn a_deliberately_bounded_retry_looks_like_a_storm_until_the_threshold_is_raised() {
    // The documented false positive: three retries (four attempts) of the same call on purpose, then a clear report.
    let mut messages = vec![serde_json::json!({"role": "user", "content": "Check the build."})];
    for i in 1..=4 {
        messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"),
            "type": "function", "function": {"name": "get_build", "arguments": "{\"branch\":\"main\"}"}}]}));
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "Error: 503"}));
    }
    messages.push(serde_json::json!({"role": "assistant", "content": "The build service is failing; I stopped after 4 attempts."}));
    let text = serde_json::Value::Array(messages).to_string();
    assert!(kinds(&diagnose_text(&text, &Thresholds::default())).contains(&FindingKind::RetryStorm));
    let budget = Thresholds { storm_min_retries: 4, ..Thresholds::default() };
    assert!(!kinds(&diagnose_text(&text, &budget)).contains(&FindingKind::RetryStorm));
}

/// A trace in which the user asks `ask`, the agent calls `tool` with `arguments` twice (call ids `a`, `b`), gets
/// `answers`, and ends with the text `last`.
fn called_twice(ask: &str, tool: &str, arguments: &str, answers: [&str; 2], last: &str) -> String {
    let mut messages = vec![serde_json::json!({"role": "user", "content": ask})];
    for (id, answer) in ["a", "b"].into_iter().zip(answers) {
        messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
            "type": "function", "function": {"name": tool, "arguments": arguments}}]}));
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": answer}));
    }
    messages.push(serde_json::json!({"role": "assistant", "content": last}));
    serde_json::Value::Array(messages).to_string()
}

#[test]
fn a_tool_listed_as_a_write_is_checked_for_duplicate_side_effects() {
    let text =
        &called_twice("Probe it.", "lab_probe", "{}", ["Error: timed out after 500 ms", "lab_probe ok"], "Probed.");
    assert!(diagnose_text(text, &Thresholds::default()).findings.is_empty(), "lab_probe reads as no write");
    let writes = Thresholds { write_tools: vec!["lab_probe".into()], ..Thresholds::default() };
    assert_eq!(kinds(&diagnose_text(text, &writes)), [FindingKind::DuplicateSideEffect]);
}

#[test]
fn a_repeat_whose_answer_says_it_already_exists_is_a_duplicate_even_after_a_plain_error() {
    let text = called_twice(
        "Create the user ada.",
        "create_user",
        r#"{"name":"ada"}"#,
        ["Error: internal server error", "Error: user ada already exists"],
        "The user ada already existed, so there was nothing to do, and the first error was harmless.",
    );
    let d = diagnose_text(&text, &Thresholds::default());
    let duplicate = d.findings.iter().find(|f| f.kind == FindingKind::DuplicateSideEffect).expect("a duplicate");
    assert!(duplicate.summary.contains("already exists"), "{}", duplicate.summary);
}

#[test]
fn parallel_calls_in_one_message_are_diagnosed_per_tool() {
    // Two tools in one assistant message; only the one that failed, unmentioned, is reported.
    let text = r#"[
      {"role": "user", "content": "Weather and news for Oslo?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "w", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
        {"id": "n", "type": "function", "function": {"name": "get_news", "arguments": "{\"city\":\"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "n", "content": "Ferry strike ends"},
      {"role": "tool", "tool_call_id": "w", "content": "Error: upstream 500"},
      {"role": "assistant", "content": "Oslo news: the ferry strike has ended."}
    ]"#;
    let d = diagnose_text(text, &Thresholds::default());
    assert_eq!(kinds(&d), [FindingKind::ErrorSwallowed]);
    assert_eq!((d.findings[0].tool.as_str(), d.findings[0].at), ("get_weather", 4));
}

/// A trajectory of the HTTP proxy with `--auth`: requests the authorization refused are `refused` client frames
/// (no reply ever comes for them). A client that sends the same refused call again and again is a retry storm;
/// one whose call goes through after one refusal (it authorized again) is none.
#[test]
fn a_call_the_authorization_refuses_again_and_again_is_a_retry_storm() {
    let call = |ts: f64, id: u32, action: &str| {
        let refused = match action {
            "refused" => {
                r#", "executed": false, "refused": {"status": 401, "error": "invalid_token", "httpMethod": "POST"}"#
            }
            _ => "",
        };
        format!(
            r#"{{"tsMs": {ts}, "scope": "", "event": "frame", "direction": "client_to_server", "action": "{action}", "id": {id}, "method": "tools/call", "tool": "write_file", "bytes": 90, "arguments": {{"path": "output.txt"}}{refused}}}"#
        )
    };
    let reply = |ts: f64, id: u32| {
        format!(
            r#"{{"tsMs": {ts}, "scope": "", "event": "frame", "direction": "server_to_client", "action": "forwarded", "id": {id}, "bytes": 60, "error": false}}"#
        )
    };
    let storm: Vec<String> = (1..=5).map(|i| call(f64::from(i) * 2.0, i, "refused")).collect();
    let d = diagnose_text(&storm.join("\n"), &Thresholds::default());
    assert!(kinds(&d).contains(&FindingKind::RetryStorm), "{:#?}", d.findings);
    let finding = d.findings.iter().find(|f| f.kind == FindingKind::RetryStorm).unwrap();
    assert!(finding.summary.contains("5 of 5 attempts failed, none succeeded"), "{}", finding.summary);

    let recovered = [call(2.0, 1, "refused"), call(40.0, 1, "forwarded"), reply(41.0, 1)];
    let trace = faultlab_diagnose::parse(&recovered.join("\n"), None).unwrap();
    let statuses: Vec<_> = trace.calls.iter().map(|c| c.status()).collect();
    assert_eq!(
        statuses,
        [Some(faultlab_engine::trajectory::Outcome::Refused), Some(faultlab_engine::trajectory::Outcome::Ok)]
    );
    assert!(trace.entries[0].text.as_deref().unwrap().contains("refused by the authorization · 401 invalid_token"));
    let d = diagnose_text(&recovered.join("\n"), &Thresholds::default());
    assert!(!kinds(&d).contains(&FindingKind::RetryStorm), "{:#?}", d.findings);
}
