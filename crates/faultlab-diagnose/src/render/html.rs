//! HTML: one self-contained page (inline CSS and JS, nothing fetched) with, per trace, a summary table of findings
//! and a timeline of its messages where each finding is shown at the message where it happens and its evidence is
//! marked. Works without JavaScript; the script adds a filter (only messages with findings) and row-to-message
//! jumps.
//!
//! Elements a reader (or a test) can rely on: each finding is `<div class="finding" data-kind="NAME">`, each summary
//! row `<tr class="finding-row" data-kind="NAME">`, each message `<li class="entry" id="tN-mPOS">`.

use super::{charts, describe, evidence, headline, not_checked, place};
use crate::detect::Diagnosis;
use crate::finding::Finding;
use crate::model::{Call, Role, TimelineEntry, Trace, Unit};
use faultlab_wire::markup::{self, Markup};
use std::collections::HashMap;
use std::fmt::Write as _;

/// What the diagnose and eval HTML reports share: palette, page frame, headings, type.
pub const BASE_CSS: &str = include_str!("base.css");
const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");
/// Characters of a message shown before it is cut (tool results can be megabytes).
const MAX_TEXT: usize = 2000;

pub fn render(diagnoses: &[Diagnosis]) -> String {
    let title = headline(diagnoses);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>faultlab diagnose — {}</title>\n<style>\n{BASE_CSS}{CSS}</style>\n</head>\n<body>\n<header>\n\
         <h1>Trace clinic</h1>\n<p class=\"headline\">{}</p>\n</header>\n<main>\n",
        esc(&title),
        esc(&title)
    );
    if diagnoses.len() > 1 {
        index(&mut out, diagnoses);
    }
    for (t, d) in diagnoses.iter().enumerate() {
        trace_section(&mut out, t, d);
    }
    let _ = write!(
        out,
        "</main>\n<footer>Made by <code>faultlab diagnose</code>. Every finding is a heuristic over what the trace \
         records; each detector's documentation states its false positives.</footer>\n<script>\n{JS}</script>\n\
         </body>\n</html>\n"
    );
    out
}

/// The list of traces at the top of a page with several: each a link to its section, with what was found.
fn index(out: &mut String, diagnoses: &[Diagnosis]) {
    out.push_str("<nav class=\"index\">\n<h2>Traces</h2>\n<ol>\n");
    for (t, d) in diagnoses.iter().enumerate() {
        let worst = d.findings.iter().map(|f| f.severity).min();
        let (class, found) = match (worst, d.findings.len()) {
            (None, _) => ("clean".to_owned(), "no findings".to_owned()),
            (Some(sev), 1) => (format!("sev-{}", sev.name()), "1 finding".to_owned()),
            (Some(sev), n) => (format!("sev-{}", sev.name()), format!("{n} findings")),
        };
        let _ = writeln!(
            out,
            "<li class=\"{class}\"><a href=\"#t{t}\"><code>{}</code></a> <span class=\"found\">{found}</span> \
             <span class=\"meta\">{} calls</span></li>",
            esc(&d.file),
            d.trace.calls.len()
        );
    }
    out.push_str("</ol>\n</nav>\n");
}

fn trace_section(out: &mut String, t: usize, d: &Diagnosis) {
    let _ = write!(
        out,
        "<section class=\"trace\" id=\"t{t}\">\n<h2>{}</h2>\n<p class=\"meta\">{}</p>\n<h3>Summary</h3>\n",
        esc(&d.file),
        esc(&describe(d))
    );
    if d.findings.is_empty() {
        out.push_str("<p class=\"clean\">No findings: nothing in this trace matched a detector.</p>\n");
    } else {
        out.push_str(
            "<table class=\"summary\">\n<thead><tr><th>Severity</th><th>Finding</th><th>Where</th>\
             <th>What happened</th></tr></thead>\n<tbody>\n",
        );
        for (i, f) in d.findings.iter().enumerate() {
            let _ = writeln!(
                out,
                "<tr class=\"finding-row sev-{sev}\" data-kind=\"{kind}\" data-target=\"t{t}-m{at}\">\
                 <td><span class=\"sev\">{sev}</span></td><td><a href=\"#t{t}-f{i}\"><code>{kind}</code></a></td>\
                 <td><a href=\"#t{t}-m{at}\">{place}</a></td><td>{summary}</td></tr>",
                sev = f.severity.name(),
                kind = f.kind.name(),
                at = f.at,
                place = esc(&place(d, f)),
                summary = esc(&f.summary)
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    for (reason, names) in not_checked(d) {
        let _ =
            writeln!(out, "<p class=\"not-checked\">Not checked: {} — {}.</p>", esc(&names.join(", ")), esc(&reason));
    }
    if !d.trace.calls.is_empty() {
        out.push_str("<h3>Sequence</h3>\n<div class=\"picture\">\n");
        charts::sequence(out, &d.trace);
        out.push_str("</div>\n<h3>Durations</h3>\n");
        charts::durations(out, &d.trace);
    }
    let unit = if d.unit == Unit::Line { "lines" } else { "messages" };
    let _ = write!(
        out,
        "<h3>Timeline</h3>\n<label class=\"filter\"><input type=\"checkbox\" class=\"only-findings\"> Only {unit} \
         with findings</label>\n<ol class=\"timeline\">\n"
    );
    // Times are shown from the first one in the trace: epoch milliseconds mean nothing to a reader.
    let first_ts = d.trace.entries.iter().find_map(|e| e.ts_ms);
    let answers = answers(&d.trace);
    // A finding's name is written once, at the first message it cites; the others it cites get a mark.
    let first_cited: Vec<Option<usize>> = d.findings.iter().map(|f| f.evidence.iter().min().copied()).collect();
    for entry in &d.trace.entries {
        entry_item(out, t, d, entry, first_ts, answers.get(&entry.pos).copied(), &first_cited);
    }
    out.push_str("</ol>\n</section>\n");
}

fn entry_item(
    out: &mut String,
    t: usize,
    d: &Diagnosis,
    entry: &TimelineEntry,
    first_ts: Option<f64>,
    status: Option<&str>,
    first_cited: &[Option<usize>],
) {
    let trace = &d.trace;
    let cited: Vec<(usize, &Finding)> =
        d.findings.iter().enumerate().filter(|(_, f)| f.evidence.contains(&entry.pos)).collect();
    let here: Vec<(usize, &Finding)> = d.findings.iter().enumerate().filter(|(_, f)| f.at == entry.pos).collect();
    let mut class = format!("entry role-{}", entry.role.name());
    if let Some(status) = status {
        let _ = write!(class, " status-{status}");
    }
    if !cited.is_empty() || !here.is_empty() {
        class.push_str(" evidence");
    }
    let _ = write!(
        out,
        "<li class=\"{class}\" id=\"t{t}-m{pos}\"><div class=\"pos\">{pos}</div><div class=\"body\">\
         <div class=\"head\"><span class=\"role\">{role}</span>",
        pos = entry.pos,
        role = entry.role.name()
    );
    if let Some(status) = status {
        let _ = write!(out, "<span class=\"status\">{status}</span>");
    }
    if let (Some(ts), Some(first)) = (entry.ts_ms, first_ts) {
        let _ = write!(out, "<span class=\"ts\">+{} ms</span>", crate::detect::ms(ts - first));
    }
    for (i, f) in &cited {
        let (sev, kind) = (f.severity.name(), f.kind.name());
        if first_cited[*i] == Some(entry.pos) {
            let _ = write!(out, "<a class=\"chip sev-{sev}\" href=\"#t{t}-f{i}\">{kind}</a>");
        } else {
            let _ = write!(out, "<a class=\"mark sev-{sev}\" href=\"#t{t}-f{i}\" title=\"{kind}\"></a>");
        }
    }
    out.push_str("</div>");
    if let Some(text) = entry.text.as_deref().filter(|s| !s.trim().is_empty()) {
        let _ = write!(out, "<div class=\"text\">{}</div>", esc(&cut(text)));
    }
    let calls: Vec<&Call> = trace.calls.iter().filter(|c| c.at == entry.pos && entry.role == Role::Assistant).collect();
    for call in calls {
        let args = call.arguments.as_ref().map(|a| a.to_string()).unwrap_or_default();
        let _ = write!(
            out,
            "<div class=\"call\"><span class=\"fn\">{}</span>(<span class=\"args\">{}</span>)<span class=\"id\">{}</span></div>",
            esc(&call.tool),
            esc(&cut(&args)),
            esc(&call.id)
        );
    }
    for (i, f) in here {
        let _ = write!(
            out,
            "<div class=\"finding sev-{sev}\" id=\"t{t}-f{i}\" data-kind=\"{kind}\"><div class=\"finding-head\">\
             <span class=\"finding-name\">{kind}</span><span class=\"sev\">{sev}</span></div><p>{summary}</p>\
             <p class=\"robust\"><b>A robust agent</b> {robust}.</p><p class=\"cites\">Evidence: {evidence}</p>{against}</div>",
            sev = f.severity.name(),
            kind = f.kind.name(),
            summary = esc(&f.summary),
            robust = esc(f.robust),
            evidence = esc(&evidence(d, f)),
            against = f
                .lab_disagreement
                .as_ref()
                .map(|why| format!("<p class=\"against\"><b>Against the lab's verdict:</b> {}.</p>", esc(why)))
                .unwrap_or_default()
        );
    }
    out.push_str("</div></li>\n");
}

/// Position → status name of the answer found there.
fn answers(trace: &Trace) -> HashMap<usize, &'static str> {
    trace.calls.iter().filter_map(|c| c.result.as_ref()).map(|r| (r.at, r.status.name())).collect()
}

fn cut(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_TEXT {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(MAX_TEXT).collect();
        format!("{kept}… ({} more characters)", count - MAX_TEXT)
    }
}

/// Text safe in HTML element content and attribute values (shared with the eval report).
pub fn esc(text: &str) -> String {
    markup::escape(text, Markup::Html)
}
