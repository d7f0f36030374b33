//! What people read: console and Markdown (snapshots), JSON (its shape), and the HTML page (findings on it,
//! nothing fetched, text escaped).

use crate::util::{diagnose, diagnose_text};
use faultlab_diagnose::Thresholds;
use faultlab_diagnose::render::{self, Format};
use serde_json::Value;

fn reports() -> Vec<faultlab_diagnose::Diagnosis> {
    [
        "demo-tool-error.json",
        "demo-healthy.json",
        "false_success-positive.json",
        "proxy/retry-same-call-no-backoff.jsonl",
    ]
    .into_iter()
    .map(diagnose)
    .collect()
}

#[test]
fn console_report() {
    insta::assert_snapshot!("console", render::render(Format::Console, &reports(), &Thresholds::default()));
}

#[test]
fn markdown_report() {
    insta::assert_snapshot!("markdown", render::render(Format::Markdown, &reports(), &Thresholds::default()));
}

#[test]
fn json_report_has_totals_thresholds_and_evidence() {
    let text = render::render(Format::Json, &reports(), &Thresholds::default());
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["findings"], 6);
    assert_eq!(json["byKind"]["retry_storm"], 2);
    assert_eq!(json["thresholds"]["loopMinCalls"], 3);
    let trace = &json["traces"][0];
    assert_eq!(
        (trace["file"].as_str(), trace["format"].as_str(), trace["unit"].as_str()),
        (Some("demo-tool-error.json"), Some("openai_messages"), Some("message"))
    );
    let loop_finding = &trace["findings"][0];
    assert_eq!(loop_finding["kind"], "tool_loop");
    assert_eq!(loop_finding["severity"], "warning");
    assert_eq!(loop_finding["at"], 5);
    assert_eq!(loop_finding["counts"]["calls"], 5);
    assert!(loop_finding["robust"].as_str().unwrap().starts_with("notices"));
    assert_eq!(trace["notChecked"][0]["kind"], "retry_without_backoff");
    assert_eq!(json["traces"][3]["unit"], "line");
}

#[test]
fn html_report_shows_each_finding_where_it_happens_and_fetches_nothing() {
    let html = render::render(Format::Html, &reports(), &Thresholds::default());
    assert!(html.starts_with("<!doctype html>"));
    for (kind, anchor) in [("tool_loop", "t0-m5"), ("retry_storm", "t0-m7")] {
        assert!(html.contains(&format!("data-kind=\"{kind}\" data-target=\"{anchor}\"")), "summary row for {kind}");
        // The finding's box sits inside the message where it happens.
        let entry = html.find(&format!("id=\"{anchor}\"")).unwrap();
        let next = html[entry..].find("</li>").unwrap() + entry;
        assert!(html[entry..next].contains("class=\"finding sev-"), "a finding box in {anchor}");
        assert!(html[entry..next].contains(&format!("data-kind=\"{kind}\"")), "{kind} in {anchor}");
    }
    assert!(html.contains("No findings: nothing in this trace matched a detector."), "the healthy trace says so");
    for outside in ["http://", "https://", "<link", " src=", "@import", "url("] {
        assert!(!html.contains(outside), "the page refers outside itself: {outside}");
    }
}

#[test]
fn html_escapes_what_the_trace_says() {
    let text = r#"[{"role": "user", "content": "<script>alert(1)</script> & \"quotes\""}]"#;
    let html = render::render(Format::Html, &[diagnose_text(text, &Thresholds::default())], &Thresholds::default());
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"));
    assert_eq!(html.matches("<script>").count(), 1, "only the page's own script");
}

#[test]
fn the_user_guide_covers_every_finding() {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/diagnose.md")).unwrap();
    for kind in faultlab_diagnose::FindingKind::ALL {
        assert!(guide.contains(&format!("| `{}` | {} |", kind.name(), kind.severity().name())), "{kind:?}");
    }
}
