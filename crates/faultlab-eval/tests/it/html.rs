//! The eval HTML page: what agents and users wrote stays text, the heatmap has its rows and cells, long timelines
//! are elided, and an empty batch still renders. Runs are built from small JSON values, as report.json holds them.

use faultlab_eval::html::render;
use faultlab_eval::report::{Meta, Report};
use faultlab_eval::runner::RunRecord;
use serde_json::{Value, json};

fn call(index: usize, tool: &str, arguments: Value, fault: Option<&str>) -> Value {
    json!({
        "index": index, "id": index, "tool": tool, "arguments": arguments, "at_ms": index as f64,
        "reply_index": if fault == Some("timeout") { None } else { Some(index + 1) },
        "executed": fault.is_none(), "rule": fault.map(|_| "r1"), "fault": fault, "error": false
    })
}

fn run(task: &str, agent: &str, categories: &[&str], passed: bool, message: &str, calls: Vec<Value>) -> RunRecord {
    let layer = json!({ "passed": passed, "checks": [{
        "name": "witness content_match output.txt", "passed": passed, "detail": "output.txt <b>differs</b>",
        "evidence": [
            { "kind": "trajectory", "line": 4 }, { "kind": "ledger", "seq": 2 }, { "kind": "claim" },
            { "kind": "file", "path": "out<put>.txt", "before": null, "after": "6f3cd55952fc27799fa48e5d6749c636" }
        ]
    }]});
    serde_json::from_value(json!({
        // agent_spec as a command line: any label deserialises as one (and older records ignore the member).
        "task": task, "agent": agent, "agent_spec": [agent], "repeat": 1, "seed": 7, "categories": categories,
        "faults_fired": ["timeout"], "nonce": "0123456789abcdef", "end": { "end": "exited", "code": 0 },
        "claim": { "status": "success", "message": message },
        "duration_ms": 1200,
        "verdict": {
            "passed": passed, "outcome": layer, "safety": { "passed": true, "checks": [] },
            "recovery": { "strategy": "retry", "outcome": "recovered", "expected": "recovered", "passed": passed,
                          "detail": "first failure at trajectory line 4", "evidence": [{ "kind": "agent_end" }] },
            "side_effects": { "passed": true, "checks": [] },
            "efficiency": { "tool_calls": calls.len(), "retries": 0, "duplicates": 0, "fallback_depth": 0,
                            "duration_ms": 1200 }
        },
        "dir": "runs/x", "calls": calls
    }))
    .expect("a RunRecord")
}

fn report(runs: Vec<RunRecord>) -> Report {
    Report::new(Meta { faultlab: "0.1.0".into(), seed: 7, repeat: 1, jobs: 2, wall_ms: 1500 }, runs)
}

#[test]
fn hostile_text_in_a_claim_and_in_tool_arguments_stays_text() {
    let hostile = "<script>alert(1)</script> & \"quotes\"";
    let calls = vec![call(4, "read_<file>", json!({ "path": hostile }), Some("timeout"))];
    let html = render(&report(vec![run("task-<b>", "agent\"x", &["transport"], false, hostile, calls)]));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"), "the claim, escaped");
    // The arguments are JSON text first (quotes escaped by serde), then HTML-escaped.
    assert!(
        html.contains(
            "{&quot;path&quot;:&quot;&lt;script&gt;alert(1)&lt;/script&gt; &amp; \\&quot;quotes\\&quot;&quot;}"
        )
    );
    assert!(html.contains("read_&lt;file&gt;") && html.contains("task-&lt;b&gt;") && html.contains("agent&quot;x"));
    assert!(html.contains("output.txt &lt;b&gt;differs&lt;/b&gt;") && html.contains("out&lt;put&gt;.txt"));
    assert_eq!(html.matches("<script>").count(), 1, "only the page's own script");
    assert!(!html.contains("<b>differs"));
    // The cites are readable, and the one pointing at a shown call links to its row.
    assert!(html.contains("<a href=\"#run-0-l4\">trajectory line 4</a>") && html.contains("id=\"run-0-l4\""));
    assert!(html.contains("ledger seq 2") && html.contains("absent → <code>6f3cd55952fc</code>"));
    assert!(html.contains("faulted: timeout") && html.contains("no reply") && html.contains("not executed"));
    for outside in ["http://", "https://", "<link", " src=", "@import", "url("] {
        assert!(!html.contains(outside), "the page refers outside itself: {outside}");
    }
}

#[test]
fn the_heatmap_has_one_row_per_agent_and_one_cell_per_category_seen() {
    let runs = vec![
        run("t1", "good", &["transport"], true, "", vec![]),
        run("t2", "good", &["data"], true, "", vec![]),
        run("t1", "bad", &["transport"], false, "", vec![]),
        run("t3", "loner", &["authorization"], false, "", vec![]),
    ];
    let html = render(&report(runs));
    let start = html.find("<table class=\"heatmap\">").expect("a heatmap");
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let rows: Vec<&str> = table.split("<tr class=\"agent-row\">").skip(1).collect();
    assert_eq!(rows.len(), 3, "good, bad, loner");
    for row in &rows {
        assert_eq!(row.matches("data-category=").count(), 3, "transport, data, authorization: {row}");
    }
    // Catalogue order, not alphabetical; an agent that never met a category gets an empty cell.
    let header = &table[..table.find("</thead>").unwrap()];
    let position = |c: &str| header.find(&format!("<th>{c}</th>")).unwrap();
    assert!(position("transport") < position("data") && position("data") < position("authorization"));
    assert_eq!(rows[0].matches("class=\"cell none\"").count(), 2, "bad met only transport: {}", rows[0]);
    assert!(rows[1].contains("title=\"good × transport: 100% (1/1; 95% CI 21–100%)\""), "{}", rows[1]);
}

#[test]
fn a_long_timeline_shows_the_first_50_and_last_10_calls() {
    let calls: Vec<Value> = (0..5000).map(|n| call(4 + 2 * n, "read_file", json!({ "path": "a" }), None)).collect();
    let html = render(&report(vec![run("loop", "infinite-loop", &["systemic"], false, "", calls)]));
    assert_eq!(html.matches("<tr class=\"call ").count(), 60);
    assert!(html.contains("… 4940 calls elided (trajectory lines 104–9982"), "says what was left out");
    assert!(html.contains("id=\"run-0-l102\"") && !html.contains("id=\"run-0-l104\""), "the 50th shown, 51st not");
    assert!(html.contains("id=\"run-0-l9984\"") && html.contains("id=\"run-0-l10002\""), "the last ten");
    assert!(html.contains("<svg class=\"density\"") && html.contains("All 5000 calls"), "the whole run, bucketed");
    assert!(html.len() < 100_000, "a 5000-call run stays small: {} bytes", html.len());
}

#[test]
fn a_short_timeline_is_not_elided() {
    let calls: Vec<Value> = (0..60).map(|n| call(n, "read_file", json!({}), None)).collect();
    let html = render(&report(vec![run("t", "a", &["data"], true, "done", calls)]));
    assert_eq!(html.matches("<tr class=\"call ").count(), 60);
    assert!(!html.contains("class=\"elided\"") && !html.contains("<svg"));
}

#[test]
fn a_report_with_zero_runs_renders() {
    let html = render(&report(vec![]));
    assert!(html.starts_with("<!doctype html>") && html.trim_end().ends_with("</html>"));
    assert!(html.contains("no runs") && html.contains("No runs, so nothing to map."));
    assert!(!html.contains("<details"));
}

/// A batch of control agents checked against an oracle opens with the oracle's agreement, not the raw pass rate
/// (the controls fail on purpose), in the page and in report.md; a stopped batch says it is incomplete.
#[test]
fn a_controls_report_opens_with_the_oracles_agreement() {
    let runs =
        vec![run("t1", "good", &["transport"], true, "", vec![]), run("t1", "bad", &["transport"], false, "", vec![])];
    let mut value = serde_json::to_value(report(runs)).unwrap();
    value["oracle"] = json!({ "checked": 2, "as_expected": 2 });
    value["incomplete"] = json!("interrupted by SIGINT");
    let report: Report = serde_json::from_value(value).unwrap();
    let html = render(&report);
    assert!(html.contains("<p class=\"headline\">2 of 2 verdicts as expected</p>"), "{html}");
    assert!(html.contains("pass rate 50% (1/2") && html.contains("the control agents fail on purpose"));
    assert!(html.contains("<b>Incomplete: interrupted by SIGINT.</b>"));
    let md = faultlab_eval::report::markdown(&report);
    let opening: Vec<&str> = md.lines().filter(|l| l.starts_with("**")).collect();
    assert_eq!(
        opening[..2],
        [
            "**Incomplete: interrupted by SIGINT.** Only the runs that ended are below.",
            "**Oracle: 2 of 2 verdicts as expected**"
        ]
    );
    assert!(!md.contains("**Pass rate"), "{md}");
}
