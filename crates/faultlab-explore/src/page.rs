//! The exploration report as one self-contained HTML page: the resilience map per (task, agent), the minimal
//! failing sets, the breaking and the degrading variants apart with their evidence and reproducers.

use super::report::{ExploreReport, join, label, tried};
use faultlab_diagnose::render::html::esc;
use std::fmt::Write as _;

const CSS: &str = r#"table.map { border-collapse: collapse; margin: 8px 0 16px; background: var(--paper); }
table.map th, table.map td { border: 1px solid var(--line); padding: 4px 8px; font-size: 13px; text-align: center; }
table.map th.call { text-align: left; }
td.pass { background: var(--ok-bg); color: var(--ok); }
td.breaks { background: var(--error-bg); color: var(--error); font-weight: 700; }
td.degrades { background: var(--warning-bg); color: var(--warning); }
td.unfired, td.na, td.notrun { background: var(--lost-bg); color: var(--lost); }
td.error { background: var(--warning-bg); color: var(--warning); }
section.exploration { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px;
  margin: 16px 0; }
li.variant { margin: 6px 0; }
"#;

/// The HTML report: one self-contained page.
pub fn html(report: &ExploreReport) -> String {
    let headline = format!(
        "{} breaking and {} degrading variant(s) of {}",
        report.breaking(),
        report.degrading(),
        report.explorations.iter().map(|e| e.variants.len()).sum::<usize>()
    );
    let mut out = faultlab_eval::report::html::head("explore", "Fault-space exploration", &headline, CSS);
    out.push_str("</header>\n<main>\n");
    if let Some(why) = &report.incomplete {
        let _ = writeln!(
            out,
            "<div class=\"note\"><b>Incomplete: {}.</b> Only the explorations that ended are here.</div>",
            esc(why)
        );
    }
    for e in &report.explorations {
        let _ = writeln!(out, "<section class=\"exploration\">\n<h2>{} × {}</h2>", esc(&e.task), esc(&e.agent));
        if !e.command.is_empty() {
            let _ = writeln!(out, "<p>Agent command: <code>{}</code></p>", esc(&join(&e.command)));
        }
        if !e.healthy.passed {
            let _ = writeln!(
                out,
                "<p>The healthy run failed ({}): nothing to explore.</p>\n</section>",
                esc(&e.healthy.verdict)
            );
            continue;
        }
        let _ = writeln!(out, "<p>Healthy run: {}</p>", esc(&e.healthy.verdict));
        let harden = e.harden_first();
        if !harden.is_empty() {
            out.push_str("<h3>What to harden first</h3>\n<ol class=\"harden\">\n");
            for h in &harden {
                let _ = writeln!(out, "<li>{}</li>", esc(&h.words()));
            }
            out.push_str("</ol>\n");
        }
        out.push_str("<table class=\"map\">\n<tr><th class=\"call\">call</th>");
        for class in &e.classes {
            let members: Vec<&str> = match e.quick {
                true => class.stands_for(),
                false => class.members(1500).iter().map(|m| m.name).collect(),
            };
            let _ = write!(out, "<th title=\"{}\">{}</th>", esc(&members.join(", ")), esc(&class.name()));
        }
        out.push_str("</tr>\n");
        for (site, in_lineage) in e.calls.iter().zip(&e.lineage) {
            let _ = write!(
                out,
                "<tr class=\"site\"><th class=\"call\">{}{}</th>",
                esc(&site.label()),
                if *in_lineage { "" } else { " <small>(not in lineage)</small>" }
            );
            for class in &e.classes {
                let cell = e.cell(site, *class);
                let css = match cell {
                    "pass" => "pass",
                    "BREAKS" => "breaks",
                    "degrades" => "degrades",
                    "pass*" => "unfired",
                    "n/a" => "na",
                    "error" => "error",
                    _ => "notrun",
                };
                let _ =
                    write!(out, "<td class=\"cell {css}\" data-class=\"{}\">{}</td>", esc(&class.name()), esc(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        for (site, class, faults) in e.disagreements() {
            let each: Vec<String> = faults.iter().map(|(f, c)| format!("{f} {c}")).collect();
            let _ = writeln!(
                out,
                "<p class=\"disagree\"><b>faults of {} disagreed at {}</b>: {}</p>",
                esc(&class.name()),
                esc(&site.label()),
                esc(&each.join(", "))
            );
        }
        for (mode, variants) in e.minimal() {
            let ids: Vec<String> = variants.iter().map(|v| format!("{} ({})", v.id, label(v))).collect();
            let _ = writeln!(out, "<p><b>minimal failing set, {}</b>: {}</p>", esc(&mode), esc(&ids.join("; ")));
        }
        if !e.variants.iter().any(|v| v.broke) {
            out.push_str("<p>No variant broke the agent.</p>\n");
        }
        for (broke, list) in e.by_harm() {
            if list.is_empty() {
                continue;
            }
            let title = if broke { "breaks" } else { "degrades" };
            let _ = writeln!(out, "<h3>{title}</h3>\n<ul>");
            for v in list {
                let _ = write!(
                    out,
                    "<li class=\"variant {title}\" id=\"{}\"><b>{}</b> {}: {}<ul>",
                    // Unique on the page, which shows every (task, agent) exploration.
                    esc(&format!("{}-{}-{}", e.task, e.agent, v.id)),
                    esc(&v.id),
                    esc(&label(v)),
                    esc(&v.verdict)
                );
                for line in &v.evidence {
                    let _ = write!(out, "<li>{}</li>", esc(line));
                }
                if let Some(r) = &v.reproducer {
                    let _ = write!(out, "<li>reproduce: <code>{}</code></li>", esc(&r.command));
                }
                out.push_str("</ul></li>\n");
            }
            out.push_str("</ul>\n");
        }
        let _ = writeln!(out, "<p class=\"tried\">{}</p>", esc(&tried(e)));
        if !e.pruned.is_empty() {
            let _ = writeln!(out, "<details><summary>pruned ({})</summary><ul>", e.pruned.len());
            for p in &e.pruned {
                let _ = writeln!(out, "<li>{}: {}</li>", esc(&p.what), esc(&p.why));
            }
            out.push_str("</ul></details>\n");
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}
