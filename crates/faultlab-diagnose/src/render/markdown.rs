//! Markdown: a heading and a findings table per trace, for pull requests and issues.

use super::{describe, evidence, headline, not_checked, place};
use crate::detect::Diagnosis;
use std::fmt::Write as _;

pub fn render(diagnoses: &[Diagnosis]) -> String {
    let mut out = format!("# faultlab diagnose\n\n{}.\n", capitalise(&headline(diagnoses)));
    for d in diagnoses {
        let _ = write!(out, "\n## `{}`\n\n{}\n", d.file, describe(d));
        if d.findings.is_empty() {
            out.push_str("\nNo findings.\n");
        } else {
            out.push_str("\n| Severity | Finding | Where | What happened | A robust agent |\n");
            out.push_str("|---|---|---|---|---|\n");
            for f in &d.findings {
                let against = f
                    .lab_disagreement
                    .as_ref()
                    .map(|why| format!(". Against the lab's verdict: {why}."))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "| {} | `{}` | {} | {} (evidence: {}){} | {} |",
                    f.severity.name(),
                    f.kind.name(),
                    place(d, f),
                    cell(&f.summary),
                    evidence(d, f),
                    cell(&against),
                    cell(f.robust)
                );
            }
        }
        let groups = not_checked(d);
        if !groups.is_empty() {
            out.push('\n');
            for (reason, names) in groups {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                let _ = writeln!(out, "- Not checked: {} — {}.", names.join(", "), cell(&reason));
            }
        }
    }
    out
}

/// Text safe inside a table cell: pipes escaped, one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().collect::<String>() + chars.as_str()).unwrap_or_default()
}
