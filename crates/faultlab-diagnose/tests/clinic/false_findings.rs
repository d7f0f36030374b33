//! The false findings the clinic used to raise on ordinary traces, one test each: the demo's PASS traces (the
//! reference client's trace simply ends after the failure), and real proxy trajectories where distinct calls of
//! one tool met faults (`tests/corpus/proxy/`, recorded with `faultlab proxy --record` in front of an echo server).

use crate::util::{diagnose, diagnose_text, kinds};
use faultlab_diagnose::{FindingKind, Thresholds};

#[test]
fn a_lost_connection_that_ends_the_trace_is_not_an_unhandled_error() {
    // The demo's `disconnect` run (PASS): the reference client reports the closed connection; no agent turn follows
    // because the client is not an agent, and the trace ends there.
    let d = diagnose("demo/traces/disconnect.json");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    let note = d.not_checked.iter().find(|n| n.kind == FindingKind::UnhandledToolError).expect("a note");
    assert!(note.reason.contains("message 2") && note.reason.contains("not recorded"), "{}", note.reason);
}

#[test]
fn a_timeout_that_ends_the_trace_is_not_ignored() {
    // The demo's `delay-past-deadline` run (PASS): time out, cancel, do not retry; the trace ends at the timeout.
    let d = diagnose("demo/traces/delay-past-deadline.json");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    assert!(d.not_checked.iter().any(|n| n.kind == FindingKind::IgnoredTimeout), "{:#?}", d.not_checked);
}

#[test]
fn a_failure_followed_by_a_silent_end_of_turn_is_still_unhandled() {
    // The agent's turn did end (the user speaks next) without a word about the error: that is the finding.
    let text = r#"[
      {"role": "user", "content": "How much do I owe on invoice 42?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_invoice", "arguments": "{\"number\": 42}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "Error: invoice 42 not found"},
      {"role": "assistant", "content": ""},
      {"role": "user", "content": "Hello?"}
    ]"#;
    assert_eq!(kinds(&diagnose_text(text, &Thresholds::default())), [FindingKind::UnhandledToolError]);
}

#[test]
fn distinct_calls_after_a_duplicated_reply_are_not_retries() {
    // echo("a"), echo("b"), echo("c"), each reply sent twice by a `duplicate` fault, 0.5 ms apart.
    let d = diagnose("proxy/duplicate-distinct-echo.jsonl");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
}

#[test]
fn the_same_call_again_after_a_failure_is_a_retry() {
    // echo("a") four times, the first three answered 503 by the proxy, each repeat within a millisecond.
    let d = diagnose("proxy/retry-same-call-no-backoff.jsonl");
    let found = kinds(&d);
    assert!(found.contains(&FindingKind::RetryWithoutBackoff) && found.contains(&FindingKind::RetryStorm), "{found:?}");
}

#[test]
fn a_rate_limit_then_another_call_is_not_a_corrected_retry() {
    // echo("a") ok, echo("b") rate-limited by the proxy, echo("c") answered with a wrong value: the agent never
    // corrected anything; the error was the lab's, not about the arguments.
    let d = diagnose("proxy/rate-limit-then-wrong-value.jsonl");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
}

#[test]
fn a_rate_limit_in_an_openai_trace_is_not_a_schema_hint() {
    let text = r#"[
      {"role": "user", "content": "Look up a and b."},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "lookup", "arguments": "{\"key\": \"a\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "Error: 429 Too Many Requests: rate limit exceeded"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function",
        "function": {"name": "lookup", "arguments": "{\"key\": \"b\"}"}}]},
      {"role": "tool", "tool_call_id": "c2", "content": "b = 2"},
      {"role": "assistant", "content": "b is 2; the lookup of a was rate limited, so I could not get it."}
    ]"#;
    let d = diagnose_text(text, &Thresholds::default());
    assert!(!kinds(&d).contains(&FindingKind::CorrectedRetry), "{:#?}", d.findings);
}

#[test]
fn a_finding_on_a_run_the_demo_passed_says_why_it_disagrees() {
    // `demo/demo.json` beside `demo/traces/` judged `transient-error` PASS; its reference client retried at once.
    let d = diagnose("demo/traces/transient-error.json");
    assert_eq!(d.lab.as_ref().map(|l| l.passed), Some(true));
    assert_eq!(kinds(&d), [FindingKind::RetryWithoutBackoff]);
    let why = d.findings[0].lab_disagreement.as_deref().expect("the disagreement is said");
    assert!(why.contains(r#"demo.json, run "transient-error""#) && why.contains("not the wait"), "{why}");
    // Every finding on every run the demo passed says it.
    for name in ["tool-error", "transient-error", "disconnect", "delay-past-deadline", "malformed"] {
        let d = diagnose(&format!("demo/traces/{name}.json"));
        assert!(d.findings.iter().all(|f| f.lab_disagreement.is_some()), "{name}: {:#?}", d.findings);
    }
    // A trace the lab never judged carries no such line.
    let d = diagnose("demo-tool-error.json");
    assert!(d.lab.is_none() && d.findings.iter().all(|f| f.lab_disagreement.is_none()));
}

#[test]
fn a_finding_on_an_eval_run_that_passed_says_why_it_disagrees() {
    // An eval folder as `faultlab eval` leaves it: EVAL/report.json grading EVAL/runs/TASK/AGENT/N/trajectory.jsonl.
    let eval = tempfile::tempdir().unwrap();
    let run = eval.path().join("runs/echo-task/quick/1");
    std::fs::create_dir_all(&run).unwrap();
    let trajectory = run.join("trajectory.jsonl");
    std::fs::copy(crate::util::corpus("proxy/retry-same-call-no-backoff.jsonl"), &trajectory).unwrap();
    let report = |passed: bool| {
        serde_json::json!({"runs": [{"task": "echo-task", "agent": "quick", "dir": "runs/echo-task/quick/1",
            "verdict": {"passed": passed, "recovery": {"detail": "recovered by retry"}}}]})
        .to_string()
    };
    let load = || {
        let trace = faultlab_diagnose::load(&trajectory).unwrap();
        faultlab_diagnose::diagnose("trajectory.jsonl", trace, &Thresholds::default())
    };
    std::fs::write(eval.path().join("report.json"), report(true)).unwrap();
    let d = load();
    assert!(!d.findings.is_empty());
    for finding in &d.findings {
        let why = finding.lab_disagreement.as_deref().expect("said");
        assert!(why.starts_with(r#"report.json, task "echo-task", agent "quick" judged this run correct"#), "{why}");
    }
    // A run the lab failed agrees with the findings: nothing to explain.
    std::fs::write(eval.path().join("report.json"), report(false)).unwrap();
    let d = load();
    assert_eq!(d.lab.as_ref().map(|l| l.passed), Some(false));
    assert!(d.findings.iter().all(|f| f.lab_disagreement.is_none()));
    // A report that is not one is no verdict, and no error.
    std::fs::write(eval.path().join("report.json"), "[1, 2").unwrap();
    assert!(load().lab.is_none());
}

#[test]
fn a_read_retried_with_backoff_through_a_burst_is_neither_a_storm_nor_a_loop() {
    // Recorded by `faultlab eval` on systemic-burst-read (crates/faultlab/tests/it/backoff_agent.py backoff): three
    // 503s from burst_failure, each retried after 101, 201 and 401 ms, then ok. What a robust client does.
    let d = diagnose("proxy/burst-read-backoff.jsonl");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
}

#[test]
fn a_hedged_read_is_not_a_corrected_retry() {
    // Recorded the same way (backoff_agent.py hedged): reads of input.txt and mirror/input.txt sent together; the
    // mirror's own not-found comes back, and the next call re-sends input.txt (a retry of the read beside it).
    let d = diagnose("proxy/burst-read-hedged.jsonl");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
}

/// A `get_weather("Oslo")` story: each `(error text, wait in ms before the retry)` is a failed attempt and the wait
/// after its answer; then a last attempt answered `last` (`None`: the trace ends at the last failure).
fn retried(failures: &[(&str, u64)], last: Option<&str>) -> String {
    let mut messages = vec![serde_json::json!({"role": "user", "content": "Weather in Oslo?"})];
    let mut t = 0;
    let call = |messages: &mut Vec<serde_json::Value>, t: &mut u64, answer: &str| {
        let id = format!("c{}", messages.len());
        messages.push(serde_json::json!({"role": "assistant", "content": null, "ts_ms": *t, "tool_calls": [{"id": id,
            "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}));
        *t += 20; // the tool answers in 20 ms
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": answer, "ts_ms": *t}));
    };
    for (error, wait) in failures {
        call(&mut messages, &mut t, error);
        t += wait;
    }
    if let Some(answer) = last {
        call(&mut messages, &mut t, answer);
        messages.push(serde_json::json!({"role": "assistant", "content": format!("Oslo: {answer}"), "ts_ms": t}));
    }
    serde_json::Value::Array(messages).to_string()
}

#[test]
fn a_retry_storm_is_the_harmful_kind_of_retry() {
    let storm = |failures: &[(&str, u64)], last: Option<&str>| {
        let d = diagnose_text(&retried(failures, last), &Thresholds::default());
        d.findings.into_iter().filter(|f| f.kind == FindingKind::RetryStorm).map(|f| f.summary).collect::<Vec<_>>()
    };
    let busy = "Error: 503 service unavailable";
    // Growing waits (100, 200, 400 ms), a transient error, success on the third retry: no storm, and no loop.
    let backed_off = retried(&[(busy, 100), (busy, 200), (busy, 400)], Some("Sunny"));
    let d = diagnose_text(&backed_off, &Thresholds::default());
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    // The same with waits that do not grow: no backoff.
    let found = storm(&[(busy, 150), (busy, 150), (busy, 150)], Some("Sunny"));
    assert!(found.len() == 1 && found[0].contains("waits do not grow"), "{found:?}");
    // Growing waits under the 100 ms floor.
    let found = storm(&[(busy, 10), (busy, 20), (busy, 40)], Some("Sunny"));
    assert!(found.len() == 1 && found[0].contains("under 100 ms"), "{found:?}");
    // Growing waits, but three retries failed and no success came: past the bound.
    let found = storm(&[(busy, 100), (busy, 200), (busy, 400), (busy, 800)], None);
    assert!(found.len() == 1 && found[0].contains("3 failed retries"), "{found:?}");
    // Growing waits, then success, but the server had said the call will not work.
    let gone = "Error: city not found";
    let found = storm(&[(gone, 100), (gone, 200), (gone, 400)], Some("Sunny"));
    assert!(found.len() == 1 && found[0].contains("not transient"), "{found:?}");
}
