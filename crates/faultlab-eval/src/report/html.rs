//! HTML: the batch report as one self-contained page (inline CSS, a few lines of optional script, nothing
//! fetched), in the look of the `faultlab diagnose` page so the two read as one product. It shows the headline
//! pass rate with its 95% Wilson interval, the data-quality notes, the agent × fault-category heatmap, the pass
//! rates per category, task and agent drawn as bars with their intervals, then one collapsible `<details>` per run:
//! the five layers with every check and its evidence, the claim, and a timeline of the tool calls. It reads the
//! same without JavaScript; the script only adds "open all / failed / close all" buttons and opens a run a link
//! points into.
//!
//! Elements a reader (or a test) can rely on: each heatmap row is `<tr class="agent-row">` with one
//! `<td class="cell …" data-category="NAME">` per category seen; each run is `<details class="run …" id="run-N">`;
//! each shown call is `<tr class="call …" id="run-N-lL">` (L its trajectory line); an elision is
//! `<tr class="elided">`.

use crate::contract::ClaimStatus;
use crate::evidence::{AgentEnd, ToolCall};
use crate::grade::{Cite, Layer};
use crate::report::{Rate, Report, Stats, pct};
use crate::runner::RunRecord;
use crate::task::Category;
use faultlab_diagnose::render::html::esc;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// Calls shown at the start and at the end of a long timeline: an infinite-loop agent makes thousands, and the
/// first calls show how the run went wrong, the last how it ended. The density strip still counts all of them.
const HEAD: usize = 50;
const TAIL: usize = 10;
/// Characters of a tool's arguments, or of a claim's message, shown before they are cut: both come from agents
/// and can be megabytes.
const MAX_ARGS: usize = 200;
const MAX_TEXT: usize = 2000;
/// Columns of the call-density strip drawn over an elided timeline: bounded, whatever the number of calls.
const BUCKETS: usize = 60;

/// On top of the base stylesheet the diagnose report shares (`faultlab_diagnose::render::html::BASE_CSS`).
const CSS: &str = r#"header { padding-bottom: 12px; }
.headline { margin: 0; font-size: 19px; font-weight: 700; }
.meta, .muted { color: var(--muted); }
.meta { margin: 2px 0; }
.card { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 8px 24px 20px;
  margin-bottom: 24px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 0 24px; }
/* A grid item may shrink below its content's width; what is inside wraps instead of spilling out. */
.grid > * { min-width: 0; }
h2 { font-size: 20px; margin: 12px 0 8px; }
h3 { margin: 18px 0 6px; }
h4 { font-size: 14px; margin: 0 0 4px; }
.fn, .args { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
.args { overflow-wrap: anywhere; }
.fn { font-weight: 700; }
.note { border-left: 6px solid var(--warning); background: var(--warning-bg); border-radius: 4px; padding: 8px 12px;
  margin: 10px 0; }
table { border-collapse: collapse; width: 100%; }
th { text-align: left; font-size: 13px; color: var(--muted); font-weight: 600; padding: 4px 8px; }
td { padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; color: var(--muted); }
table.heatmap { table-layout: fixed; }
.heatmap th:first-child { width: 170px; }
.heatmap th[scope=row] { color: var(--ink); overflow-wrap: anywhere; }
.heatmap td { text-align: center; border: 2px solid var(--paper); }
.heatmap td b { display: block; font-size: 16px; }
.heatmap td.none { color: var(--muted); background: var(--wash); }
.heatmap td.total { background: var(--wash); }
table.rates { table-layout: fixed; }
.rates th { width: 34%; overflow-wrap: anywhere; }
.rates td:last-child { width: 30%; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.rates td.barcell { width: 36%; vertical-align: middle; }
.bar { position: relative; height: 16px; min-width: 60px; background: var(--wash); border: 1px solid var(--line);
  border-radius: 3px; }
header .bar { max-width: 480px; height: 20px; margin: 6px 0; }
.bar .fill { position: absolute; left: 0; top: 0; bottom: 0; }
.bar .ci { position: absolute; top: 3px; bottom: 3px; border: solid var(--ink); border-width: 0 2px; }
.bar .ci::after { content: ""; position: absolute; left: 0; right: 0; top: 50%; margin-top: -1px;
  border-top: 2px solid var(--ink); }
.chip { display: inline-block; font-size: 12px; font-weight: 700; padding: 0 6px; border-radius: 4px;
  margin: 1px 4px 1px 0; white-space: nowrap; }
.verdict { display: inline-block; font-size: 12px; font-weight: 700; padding: 1px 8px; border-radius: 10px;
  color: #fff; min-width: 44px; text-align: center; }
.pass .verdict { background: var(--ok); }
.fail .verdict { background: var(--error); }
.expected .verdict { background: var(--warning); }
.st-ok { background: var(--ok-bg); color: var(--ok); }
.st-error { background: var(--error-bg); color: var(--error); }
.st-fault { background: var(--warning-bg); color: var(--warning); }
.st-lost { background: var(--lost-bg); color: var(--lost); }
.exec { color: var(--muted); border: 1px solid var(--line); font-weight: 400; }
details.run { border-top: 1px solid var(--line); }
details.run > summary { cursor: pointer; padding: 8px 4px; }
details.run > summary:hover, details.run[open] > summary { background: var(--wash); }
.run-body { padding: 4px 4px 16px 24px; }
.layer { border-left: 4px solid var(--ok); padding: 2px 0 2px 12px; margin: 10px 0; }
.layer.bad { border-color: var(--error); }
.layer.info { border-color: var(--hint); }
.layer p { margin: 2px 0; }
/* Fixed columns, so the five layers of a run line up under each other. */
table.checks { table-layout: fixed; }
.checks td:nth-child(1) { width: 32px; } .checks td:nth-child(2) { width: 27%; } .checks td:nth-child(4) { width: 28%; }
.checks code { overflow-wrap: anywhere; }
.mark { font-weight: 700; }
.good > .mark, .good .mark { color: var(--ok); }
.bad > .mark, tr.bad .mark { color: var(--error); }
tr.bad td { background: var(--error-bg); }
.claim-text { white-space: pre-wrap; overflow-wrap: anywhere; }
.track { position: relative; min-width: 140px; width: 28%; }
.track::before { content: ""; position: absolute; left: 0; right: 0; top: 50%; border-top: 1px solid var(--line); }
.dot { position: absolute; top: 50%; width: 10px; height: 10px; margin: -5px 0 0 -5px; border-radius: 50%;
  border: 2px solid var(--c); background: var(--c); }
.dot.hollow { background: var(--paper); }
.dot.ok { --c: var(--ok); } .dot.error { --c: var(--error); } .dot.fault { --c: var(--warning); }
.dot.lost { --c: var(--lost); }
.gap { position: absolute; top: 5px; bottom: 5px; background: repeating-linear-gradient(45deg, var(--muted) 0 2px,
  transparent 2px 6px); }
tr.elided td { color: var(--muted); font-style: italic; background: var(--wash); }
svg.density { width: 100%; height: 40px; display: block; background: var(--wash); margin: 4px 0 8px; }
.d-ok { fill: var(--ok); } .d-error { fill: var(--error); } .d-fault { fill: var(--warning); }
.d-lost { fill: var(--lost); }
.tools button { font: inherit; font-size: 13px; margin-left: 8px; padding: 1px 10px; border: 1px solid var(--line);
  border-radius: 4px; background: var(--paper); cursor: pointer; }
footer { color: var(--muted); font-size: 13px; padding-bottom: 32px; }
"#;

/// Enhancements only: every run is a `<details>`, so the page reads the same without this script.
const JS: &str = r##"(function () {
  // A link to a run (or to a call in it) opens that run, wherever it comes from.
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1)), target = id && document.getElementById(id);
    var run = target && target.closest("details");
    if (run) { run.open = true; target.scrollIntoView({ block: "center" }); }
  }
  addEventListener("hashchange", openTarget);
  openTarget();
  var tools = document.querySelector("#runs .tools");
  [["Open all", "details.run"], ["Open failed", "details.run.fail"], ["Close all", null]].forEach(function (b) {
    var button = document.createElement("button");
    button.textContent = b[0];
    button.addEventListener("click", function () {
      document.querySelectorAll("details.run").forEach(function (d) { d.open = !!b[1] && d.matches(b[1]); });
    });
    tools.appendChild(button);
  });
})();
"##;

/// A page's start, up to its open `<header>`: the title, the base stylesheet the diagnose report shares plus
/// `css`, the heading and the headline.
pub fn head(command: &str, heading: &str, headline: &str, css: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>faultlab {command} — {h}</title>\n<style>\n{BASE}{css}</style>\n</head>\n<body>\n<header>\n\
         <h1>{heading}</h1>\n<p class=\"headline\">{h}</p>\n",
        h = esc(headline),
        BASE = faultlab_diagnose::render::html::BASE_CSS
    )
}

pub fn render(report: &Report) -> String {
    let s = &report.stats;
    let runs = report.runs.len();
    // Control agents fail on purpose: with an oracle, its agreement is the headline and the rate a detail.
    let headline = match (&report.oracle, runs) {
        (Some(agreement), _) => agreement.summary(),
        (None, 0) => "no runs".to_owned(),
        (None, _) => format!("pass rate {}", pct(&s.overall)),
    };
    let mut out = head("eval", "Agent eval", &headline, CSS);
    if let Some(why) = &report.incomplete {
        let _ = writeln!(
            out,
            "<div class=\"note\"><b>Incomplete: {}.</b> Only the runs that ended are here.</div>",
            esc(why)
        );
    }
    if report.oracle.is_some() && runs > 0 {
        let _ = writeln!(
            out,
            "<p class=\"meta\">pass rate {} (the control agents fail on purpose)</p>",
            esc(&pct(&s.overall))
        );
    }
    if runs > 0 {
        out.push_str(&bar(&s.overall));
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">faultlab {} · seed {} · {runs} run{} ({} repeat{}, {} job{}) · wall time {:.1} s</p>",
        esc(&report.meta.faultlab),
        report.meta.seed,
        plural(runs as u64),
        report.meta.repeat,
        plural(report.meta.repeat.into()),
        report.meta.jobs,
        plural(report.meta.jobs as u64),
        report.meta.wall_ms as f64 / 1000.0
    );
    if let Some(k) = &s.pass_hat_k {
        let _ = writeln!(out, "<p class=\"meta\"><b>pass^{}</b>: {}</p>", k.k, esc(&k.summary()));
    }
    if !s.outcomes.is_empty() {
        let outcomes: Vec<String> = s.outcomes.iter().map(|(o, n)| format!("{} {n}", esc(o))).collect();
        let _ = writeln!(out, "<p class=\"meta\">Recovery outcomes: {}</p>", outcomes.join(" · "));
    }
    for note in &s.data_quality {
        let _ = writeln!(out, "<div class=\"note\"><b>Data quality.</b> {}</div>", esc(note));
    }
    out.push_str("</header>\n<main>\n");
    heatmap(&mut out, s);
    out.push_str("<div class=\"grid\">\n");
    rates(&mut out, "By fault category", &s.by_category);
    rates(&mut out, "By fault", &s.by_fault);
    rates(&mut out, "By agent", &s.by_agent);
    out.push_str("</div>\n");
    rates(&mut out, "By task", &s.by_task);
    // A control agent's failure the built-in oracle calls for is labelled EXPECTED, not FAIL.
    let oracle = crate::builtin::oracle();
    let failed = report.runs.iter().filter(|r| !r.verdict.passed).count();
    let expected = report.runs.iter().filter(|r| !r.verdict.passed && expected_failure(&oracle, r).is_some()).count();
    let _ = write!(
        out,
        "<section class=\"card\" id=\"runs\">\n<h2>Runs <span class=\"tools\"></span></h2>\n\
         <p class=\"meta\">{runs} run{}, {failed} failed{}. Open a run for its five layers, every check with its \
         evidence, and its timeline: each tool call at its time since the proxy started, the dot \
         <span class=\"chip st-ok\">ok</span><span class=\"chip st-error\">failed</span>\
         <span class=\"chip st-fault\">faulted</span><span class=\"chip st-lost\">no reply</span>, hollow when the \
         server never executed it.</p>\n",
        plural(runs as u64),
        if expected > 0 {
            format!(" ({expected} of them EXPECTED: control agents making their mistake)")
        } else {
            String::new()
        }
    );
    for (i, run) in report.runs.iter().enumerate() {
        run_section(&mut out, i, run, expected_failure(&oracle, run));
    }
    let _ = write!(
        out,
        "</section>\n</main>\n<footer>Made by <code>faultlab eval</code>. The same data is in report.json; each run's \
         full trajectory is <code>trajectory.jsonl</code> in its folder.</footer>\n<script>\n{JS}</script>\n\
         </body>\n</html>\n"
    );
    out
}

/// The agent × category table: one row per agent, one cell per category any agent met, coloured by pass rate.
fn heatmap(out: &mut String, s: &Stats) {
    out.push_str("<section class=\"card\">\n<h2>Agent × fault category</h2>\n");
    if s.by_agent.is_empty() {
        out.push_str("<p class=\"muted\">No runs, so nothing to map.</p>\n</section>\n");
        return;
    }
    // Catalogue order reads better than alphabetical; a name the catalogue lacks (an older report) goes last.
    let mut categories: Vec<&str> = s.heatmap.values().flat_map(|row| row.keys().map(String::as_str)).collect();
    categories.sort_by_key(|c| (Category::ALL.iter().position(|k| k.name() == *c).unwrap_or(usize::MAX), *c));
    categories.dedup();
    out.push_str("<table class=\"heatmap\">\n<thead><tr><th>agent</th>");
    for category in &categories {
        let _ = write!(out, "<th>{}</th>", esc(category));
    }
    out.push_str("<th>all</th></tr></thead>\n<tbody>\n");
    let empty = BTreeMap::new();
    // Rows come from by_agent, not the heatmap, so an agent whose tasks had no fault category still has its row.
    for (agent, total) in &s.by_agent {
        let row = s.heatmap.get(agent).unwrap_or(&empty);
        let _ = write!(out, "<tr class=\"agent-row\"><th scope=\"row\"><code>{}</code></th>", esc(agent));
        for category in &categories {
            match row.get(*category) {
                Some(rate) => out.push_str(&cell("cell", agent, category, rate)),
                None => {
                    let _ = write!(out, "<td class=\"cell none\" data-category=\"{}\">—</td>", esc(category));
                }
            }
        }
        out.push_str(&cell("total", agent, "all categories", total));
        out.push_str("</tr>\n");
    }
    out.push_str(
        "</tbody>\n</table>\n<p class=\"meta\">Cells show passed/runs, coloured from red (0%) to green (100%); hover \
         for the 95% interval.</p>\n</section>\n",
    );
}

fn cell(class: &str, agent: &str, category: &str, rate: &Rate) -> String {
    let data = if class == "cell" { format!(" data-category=\"{}\"", esc(category)) } else { String::new() };
    format!(
        "<td class=\"{class}\"{data} style=\"background:hsl({},70%,84%)\" title=\"{} × {}: {}\"><b>{}/{}</b>{:.0}%</td>",
        hue(rate.rate),
        esc(agent),
        esc(category),
        esc(&pct(rate)),
        rate.passed,
        rate.runs,
        rate.rate * 100.0
    )
}

fn rates(out: &mut String, title: &str, rates: &BTreeMap<String, Rate>) {
    let _ = writeln!(out, "<section class=\"card\">\n<h2>{title}</h2>");
    if rates.is_empty() {
        out.push_str("<p class=\"muted\">No runs.</p>\n</section>\n");
        return;
    }
    out.push_str("<table class=\"rates\">\n<tbody>\n");
    for (key, rate) in rates {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\"><code>{}</code></th><td class=\"barcell\">{}</td><td>{}</td></tr>",
            esc(key),
            bar(rate),
            esc(&pct(rate))
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

/// The pass rate as a filled bar, with the 95% interval drawn over it as an error bar.
fn bar(rate: &Rate) -> String {
    format!(
        "<div class=\"bar\" title=\"{}\"><div class=\"fill\" style=\"width:{:.1}%;background:hsl({},55%,55%)\"></div>\
         <div class=\"ci\" style=\"left:{:.1}%;width:{:.1}%\"></div></div>\n",
        esc(&pct(rate)),
        rate.rate * 100.0,
        hue(rate.rate),
        rate.low * 100.0,
        (rate.high - rate.low) * 100.0
    )
}

/// The oracle's entry when it expects `run` to fail (a control agent on a built-in task).
fn expected_failure<'o>(
    oracle: &'o crate::oracle::Oracle,
    run: &RunRecord,
) -> Option<&'o crate::oracle::ExpectedVerdict> {
    oracle.entry(&run.task, &run.agent).filter(|entry| !entry.pass)
}

fn run_section(out: &mut String, i: usize, run: &RunRecord, expected: Option<&crate::oracle::ExpectedVerdict>) {
    let v = &run.verdict;
    let word = crate::oracle::verdict_word(v.passed, expected);
    let (class, word) = match (&run.error, word) {
        (Some(_), _) => ("fail", "ERROR"),
        (None, "PASS") => ("pass", word),
        (None, "EXPECTED") => ("expected", word),
        (None, _) => ("fail", word),
    };
    let _ = write!(
        out,
        "<details class=\"run {class}\" id=\"run-{i}\"><summary><span class=\"verdict\">{word}</span> \
         <code>{}</code> × <code>{}</code> <span class=\"muted\">#{}</span> · <b>{} → {}</b> \
         <span class=\"muted\">(expected {}) · {} call{} · {:.1} s · {}</span></summary>\n<div class=\"run-body\">\n",
        esc(&run.task),
        esc(&run.agent),
        run.repeat + 1,
        name(&v.recovery.strategy),
        name(&v.recovery.outcome),
        name(&v.recovery.expected),
        run.calls.len(),
        plural(run.calls.len() as u64),
        run.duration_ms as f64 / 1000.0,
        end(&run.end)
    );
    let categories: Vec<&str> = run.categories.iter().map(|c| c.name()).collect();
    let fired = if run.faults_fired.is_empty() { "none".to_owned() } else { run.faults_fired.join(", ") };
    let _ = writeln!(
        out,
        "<p class=\"meta\">categories {} · faults fired: {} · seed {} · nonce <code>{}</code> · folder <code>{}</code></p>",
        esc(&categories.join(", ")),
        esc(&fired),
        run.seed,
        esc(&run.nonce),
        esc(&run.dir)
    );
    if let (Some(entry), "EXPECTED") = (expected, word) {
        let _ = writeln!(
            out,
            "<p class=\"meta\"><b>Expected failure.</b> This control agent exists to make this mistake; the \
             oracle requires the grader to fail it: {}</p>",
            esc(&entry.why)
        );
    }
    if let Some(error) = &run.error {
        let _ = writeln!(out, "<p class=\"fail\"><b>Run error</b> (the set-up, not the agent): {}</p>", esc(error));
    }
    let digests: Vec<String> = run
        .evidence
        .iter()
        .map(|(file, sha)| {
            format!("<code>{}</code> <code class=\"muted\">{}</code>", esc(file), esc(&sha[..sha.len().min(16)]))
        })
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"meta\">isolation: {} · evidence sealed (SHA-256): {}</p>",
        esc(run.isolation.describe()),
        if digests.is_empty() { "none".to_owned() } else { digests.join(" · ") }
    );
    match &run.claim {
        Some(claim) => {
            let _ = write!(
                out,
                "<p><b>Claim</b> <span class=\"chip st-{}\">{}</span> <span class=\"claim-text\">{}</span>",
                match claim.status {
                    ClaimStatus::Success => "ok",
                    ClaimStatus::Partial => "fault",
                    ClaimStatus::Failure => "lost",
                },
                name(&claim.status),
                esc(&cut(&claim.message, MAX_TEXT))
            );
            if let Some(answer) = &claim.answer {
                let _ = write!(out, " · answer <code class=\"claim-text\">{}</code>", esc(&cut(answer, MAX_TEXT)));
            }
            out.push_str("</p>\n");
        }
        None => out.push_str("<p><b>Claim</b> <span class=\"muted\">none: the agent wrote no claim.</span></p>\n"),
    }
    let (shown, elided) = split(&run.calls);
    // Trajectory line → the shown call row it belongs to (request or reply), so cites can link to the timeline.
    let rows: HashMap<usize, usize> = shown
        .iter()
        .flat_map(|c| std::iter::once((c.index, c.index)).chain(c.reply_index.map(|r| (r, c.index))))
        .collect();
    let cites = |evidence: &[Cite]| -> String {
        let parts: Vec<String> = evidence.iter().map(|c| cite(c, i, &rows, run)).collect();
        parts.join(", ")
    };
    layer(out, "1 · Outcome", &v.outcome, &cites);
    layer(out, "2 · Safety", &v.safety, &cites);
    let r = &v.recovery;
    let _ = writeln!(
        out,
        "<div class=\"layer {c}\"><h4>3 · Recovery</h4><table class=\"checks\"><tbody><tr class=\"{c}\"><td class=\"mark\">{}</td>\
         <td><code>{} → {}</code> (expected {})</td><td>{}</td><td>{}</td></tr></tbody></table></div>",
        mark(r.passed),
        name(&r.strategy),
        name(&r.outcome),
        name(&r.expected),
        esc(&r.detail),
        cites(&r.evidence),
        c = if r.passed { "good" } else { "bad" }
    );
    layer(out, "4 · Side effects", &v.side_effects, &cites);
    let e = &v.efficiency;
    let _ = writeln!(
        out,
        "<div class=\"layer info\"><h4>5 · Efficiency <span class=\"muted\">(informational)</span></h4><p>{} tool \
         call{} · {} retr{} · {} duplicate{} · fallback depth {} · {} ms</p></div>",
        e.tool_calls,
        plural(e.tool_calls.into()),
        e.retries,
        if e.retries == 1 { "y" } else { "ies" },
        e.duplicates,
        plural(e.duplicates.into()),
        e.fallback_depth,
        e.duration_ms
    );
    out.push_str("<h3>Timeline</h3>\n");
    timeline(out, i, &run.calls, &shown, elided);
    out.push_str("</div></details>\n");
}

fn layer(out: &mut String, title: &str, layer: &Layer, cites: &dyn Fn(&[Cite]) -> String) {
    let _ = write!(out, "<div class=\"layer {}\"><h4>{title}</h4>", if layer.passed { "good" } else { "bad" });
    if layer.checks.is_empty() {
        out.push_str("<p class=\"muted\">No checks.</p></div>\n");
        return;
    }
    out.push_str("<table class=\"checks\"><tbody>\n");
    for check in &layer.checks {
        let _ = writeln!(
            out,
            "<tr class=\"check {}\"><td class=\"mark\">{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            if check.passed { "good" } else { "bad" },
            mark(check.passed),
            esc(&check.name),
            esc(&check.detail),
            cites(&check.evidence)
        );
    }
    out.push_str("</tbody></table></div>\n");
}

fn cite(cite: &Cite, i: usize, rows: &HashMap<usize, usize>, run: &RunRecord) -> String {
    match cite {
        Cite::Trajectory { line } => match rows.get(line) {
            Some(row) => format!("<a href=\"#run-{i}-l{row}\">trajectory line {line}</a>"),
            None => format!("trajectory line {line}"),
        },
        Cite::Ledger { seq } => format!("ledger seq {seq}"),
        Cite::Model { request } => format!("model request {request}"),
        Cite::File { path, before, after } => {
            // Twelve hex digits, as the check details quote them: enough to tell two contents apart by eye.
            let short = |h: &Option<String>| {
                let h = h.as_deref().map(|h| h.chars().take(12).collect::<String>());
                h.map_or("absent".to_owned(), |h| format!("<code>{}</code>", esc(&h)))
            };
            let same = if before == after { " (unchanged)" } else { "" };
            format!("file <code>{}</code> {} → {}{same}", esc(path), short(before), short(after))
        }
        Cite::Claim => "the claim".to_owned(),
        Cite::AgentEnd => format!("agent end ({})", end(&run.end)),
    }
}

/// The calls shown, and how many are left out between the first [`HEAD`] and the last [`TAIL`].
fn split(calls: &[ToolCall]) -> (Vec<&ToolCall>, usize) {
    if calls.len() <= HEAD + TAIL {
        return (calls.iter().collect(), 0);
    }
    let shown = calls[..HEAD].iter().chain(&calls[calls.len() - TAIL..]).collect();
    (shown, calls.len() - HEAD - TAIL)
}

/// How a call went, for its colour: a fault first (it explains the rest), then a missing reply, then an error.
fn status(call: &ToolCall) -> &'static str {
    if call.fault.is_some() {
        "fault"
    } else if call.reply_index.is_none() {
        "lost"
    } else if call.error {
        "error"
    } else {
        "ok"
    }
}

fn timeline(out: &mut String, i: usize, calls: &[ToolCall], shown: &[&ToolCall], elided: usize) {
    if calls.is_empty() {
        out.push_str("<p class=\"muted\">No tool call reached the proxy.</p>\n");
        return;
    }
    let span = calls.iter().map(|c| c.at_ms).fold(1.0, f64::max);
    let x = |ms: f64| (ms / span * 100.0).clamp(0.0, 100.0);
    if elided > 0 {
        density(out, calls, span);
    }
    let _ = write!(
        out,
        "<table class=\"timeline\">\n<thead><tr><th>line</th><th>+ms</th><th>0 → {span:.0} ms</th><th>call</th>\
         <th>reply</th></tr></thead>\n<tbody>\n"
    );
    for (n, call) in shown.iter().enumerate() {
        if elided > 0 && n == HEAD {
            let (first, last) = (&calls[HEAD], &calls[calls.len() - TAIL - 1]);
            let _ = writeln!(
                out,
                "<tr class=\"elided\"><td colspan=\"2\"></td><td class=\"track\"><span class=\"gap\" \
                 style=\"left:{:.2}%;width:{:.2}%\"></span></td><td colspan=\"2\">… {elided} calls elided (trajectory \
                 lines {}–{}, +{:.0} to +{:.0} ms) …</td></tr>",
                x(first.at_ms),
                (x(last.at_ms) - x(first.at_ms)).max(0.3),
                first.index,
                last.index,
                first.at_ms,
                last.at_ms
            );
        }
        let status = status(call);
        let args = serde_json::to_string(&call.arguments).unwrap_or_default();
        let _ = write!(
            out,
            "<tr class=\"call {status}\" id=\"run-{i}-l{}\"><td class=\"num\">{}</td><td class=\"num\">{:.0}</td>\
             <td class=\"track\"><span class=\"dot {status}{}\" style=\"left:{:.2}%\"></span></td><td><span \
             class=\"fn\">{}</span>(<span class=\"args\">{}</span>)</td><td>",
            call.index,
            call.index,
            call.at_ms,
            if call.executed { "" } else { " hollow" },
            x(call.at_ms),
            esc(&call.tool),
            esc(&cut(&args, MAX_ARGS))
        );
        if let Some(fault) = &call.fault {
            let rule = call.rule.as_deref().map(|r| format!(" title=\"rule {}\"", esc(r))).unwrap_or_default();
            let _ = write!(out, "<span class=\"chip st-fault\"{rule}>faulted: {}</span>", esc(fault));
        }
        if call.reply_index.is_none() {
            out.push_str("<span class=\"chip st-lost\">no reply</span>");
        }
        if call.error {
            out.push_str("<span class=\"chip st-error\">failed</span>");
        }
        if !call.failed() {
            out.push_str("<span class=\"chip st-ok\">ok</span>");
        }
        let executed = if call.executed { "executed" } else { "not executed" };
        let _ = writeln!(out, "<span class=\"chip exec\">{executed}</span></td></tr>");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Every call of a long run, bucketed over time and stacked by status: the shape of the whole run (a loop at a
/// steady rate until the deadline) that the elided list cannot show, in a bounded number of rectangles.
fn density(out: &mut String, calls: &[ToolCall], span: f64) {
    const KINDS: [&str; 4] = ["ok", "error", "fault", "lost"];
    let mut buckets = [[0u32; 4]; BUCKETS];
    for call in calls {
        let b = ((call.at_ms / span * BUCKETS as f64) as usize).min(BUCKETS - 1);
        buckets[b][KINDS.iter().position(|k| *k == status(call)).unwrap_or(0)] += 1;
    }
    let max = buckets.iter().map(|b| b.iter().sum::<u32>()).max().unwrap_or(1).max(1);
    let _ = write!(
        out,
        "<svg class=\"density\" viewBox=\"0 0 {} 40\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"all {} \
         calls over time\">",
        BUCKETS * 10,
        calls.len()
    );
    let width = span / BUCKETS as f64;
    for (b, counts) in buckets.iter().enumerate() {
        let mut y = 40.0;
        let total: u32 = counts.iter().sum();
        for (kind, &n) in KINDS.iter().zip(counts).filter(|(_, n)| **n > 0) {
            let h = f64::from(n) / f64::from(max) * 40.0;
            y -= h;
            let _ = write!(
                out,
                "<rect class=\"d-{kind}\" x=\"{}\" y=\"{y:.2}\" width=\"9\" height=\"{h:.2}\"><title>+{:.0}–{:.0} ms: \
                 {total} calls, {n} {kind}</title></rect>",
                b * 10,
                b as f64 * width,
                (b + 1) as f64 * width
            );
        }
    }
    let _ = writeln!(out, "</svg>\n<p class=\"meta\">All {} calls over {span:.0} ms, by status.</p>", calls.len());
}

/// Red (0%) through amber to green (100%).
fn hue(rate: f64) -> u32 {
    (rate.clamp(0.0, 1.0) * 120.0).round() as u32
}

fn mark(passed: bool) -> &'static str {
    if passed { "✓" } else { "✗" }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A serde enum's wire name ("aborted-safely"), as report.json spells it; escaped, though these are fixed words.
fn name<T: Serialize>(value: &T) -> String {
    esc(&serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default())
}

fn end(end: &AgentEnd) -> String {
    match end {
        AgentEnd::Exited { code: Some(code) } => format!("exit {code}"),
        AgentEnd::Exited { code: None } => "ended by a signal".into(),
        AgentEnd::KilledAtDeadline => "killed at deadline".into(),
        AgentEnd::FailedToStart => "did not start".into(),
    }
}

fn cut(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… ({} more characters)", count - max)
}
