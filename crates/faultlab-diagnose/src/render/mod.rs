//! One report model ([`Diagnosis`]), one small renderer per format.

mod charts;
pub mod console;
pub mod html;
pub mod json;
pub mod markdown;

use crate::detect::{Diagnosis, positions};
use crate::finding::{Finding, FindingKind};
use crate::model::TraceFormat;
use crate::thresholds::Thresholds;
use std::collections::BTreeMap;

/// The report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Console,
    Json,
    Markdown,
    Html,
}

pub fn render(format: Format, diagnoses: &[Diagnosis], thresholds: &Thresholds) -> String {
    match format {
        Format::Console => console::render(diagnoses),
        Format::Json => json::render(diagnoses, thresholds),
        Format::Markdown => markdown::render(diagnoses),
        Format::Html => html::render(diagnoses),
    }
}

/// How many findings of each kind, over every trace, in detector order.
pub fn totals(diagnoses: &[Diagnosis]) -> BTreeMap<FindingKind, usize> {
    let mut totals = BTreeMap::new();
    for finding in diagnoses.iter().flat_map(|d| &d.findings) {
        *totals.entry(finding.kind).or_insert(0) += 1;
    }
    totals
}

/// "3 findings in 2 traces: tool_loop 1, retry_storm 1, unhandled_tool_error 1" / "no findings in 1 trace".
pub fn headline(diagnoses: &[Diagnosis]) -> String {
    let totals = totals(diagnoses);
    let count: usize = totals.values().sum();
    let traces = format!("{} trace{}", diagnoses.len(), if diagnoses.len() == 1 { "" } else { "s" });
    if count == 0 {
        return format!("no findings in {traces}");
    }
    let kinds: Vec<String> = totals.iter().map(|(k, n)| format!("{} {n}", k.name())).collect();
    format!("{count} finding{} in {traces}: {}", if count == 1 { "" } else { "s" }, kinds.join(", "))
}

/// "OpenAI messages · 11 messages · 5 tool calls".
pub fn describe(diagnosis: &Diagnosis) -> String {
    let (format, entries) = match diagnosis.format {
        TraceFormat::OpenaiMessages => ("OpenAI messages", "message"),
        TraceFormat::ProxyTrajectory => ("proxy trajectory", "event"),
    };
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!("{format} · {} · {}", plural(diagnosis.entries, entries), plural(diagnosis.calls, "tool call"))
}

/// "message 5" for where a finding happens.
pub fn place(diagnosis: &Diagnosis, finding: &Finding) -> String {
    positions(diagnosis.unit, &[finding.at])
}

/// "messages 1, 2 and 3" for a finding's evidence.
pub fn evidence(diagnosis: &Diagnosis, finding: &Finding) -> String {
    positions(diagnosis.unit, &finding.evidence)
}

/// Detectors that did not run, grouped by the reason: `(reason, names)`.
pub fn not_checked(diagnosis: &Diagnosis) -> Vec<(String, Vec<&'static str>)> {
    let mut groups: Vec<(String, Vec<&'static str>)> = Vec::new();
    for n in &diagnosis.not_checked {
        match groups.iter_mut().find(|(reason, _)| *reason == n.reason) {
            Some((_, names)) => names.push(n.kind.name()),
            None => groups.push((n.reason.clone(), vec![n.kind.name()])),
        }
    }
    groups
}
