//! The detectors, one file each with the same doc sections (*What it finds / Why it matters / What a robust agent
//! does instead / False positives*), and [`diagnose`], which runs every detector the trace has the data for.
//!
//! All of them are heuristics over what a trace records; none can see the agent's intent. Each states the cases
//! where it fires although the agent behaved well, and the threshold (if any) to move.

pub mod aftermath;
pub mod corrected_retry;
pub mod duplicate_side_effect;
pub mod error_swallowed;
pub mod false_success;
pub mod ignored_timeout;
pub mod retry_storm;
pub mod retry_without_backoff;
pub mod tool_loop;
pub mod unhandled_tool_error;

use crate::finding::{Finding, FindingKind, Need};
use crate::model::{Trace, TraceFormat, Unit};
use crate::thresholds::Thresholds;
use serde::Serialize;

/// A detector that did not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotChecked {
    pub kind: FindingKind,
    pub missing: Vec<Need>,
    pub reason: String,
}

/// One trace, diagnosed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// The file as named on the command line.
    pub file: String,
    pub format: TraceFormat,
    pub unit: Unit,
    pub entries: usize,
    pub calls: usize,
    pub findings: Vec<Finding>,
    pub not_checked: Vec<NotChecked>,
    #[serde(skip)]
    pub trace: Trace,
}

/// Runs every detector `trace` has the data for; findings come in the order they happen.
pub fn diagnose(file: &str, trace: Trace, thresholds: &Thresholds) -> Diagnosis {
    let mut findings = Vec::new();
    let mut not_checked = Vec::new();
    for kind in FindingKind::ALL {
        let missing: Vec<Need> = kind.needs().iter().copied().filter(|need| !has(&trace, *need)).collect();
        if missing.is_empty() {
            findings.extend(kind.detect(&trace, thresholds));
        } else {
            let reason = missing.iter().map(|n| n.describe()).collect::<Vec<_>>().join("; ");
            not_checked.push(NotChecked { kind, missing, reason });
        }
    }
    findings.sort_by_key(|f| (f.at, f.kind));
    Diagnosis {
        file: file.to_owned(),
        format: trace.format,
        unit: trace.unit,
        entries: trace.entries.len(),
        calls: trace.calls.len(),
        findings,
        not_checked,
        trace,
    }
}

fn has(trace: &Trace, need: Need) -> bool {
    match need {
        Need::Arguments => trace.recorded.arguments,
        Need::AgentText => trace.recorded.agent_text,
        Need::Timing => trace.recorded.timing,
    }
}

/// The calls of each tool cut into retry runs: a run starts at a failed call and takes every following call of the
/// same tool while the call before it failed (so it ends at the first success, or at the end). Indices into
/// `trace.calls`; runs of a single call are left out.
pub(crate) fn retry_runs(trace: &Trace) -> Vec<Vec<usize>> {
    let mut runs = Vec::new();
    for tool in trace.tools() {
        let mut run: Vec<usize> = Vec::new();
        for i in trace.calls_of(tool) {
            if let Some(&last) = run.last()
                && trace.calls[last].failed()
            {
                run.push(i);
                continue;
            }
            if run.len() > 1 {
                runs.push(std::mem::take(&mut run));
            }
            run = if trace.calls[i].failed() { vec![i] } else { Vec::new() };
        }
        if run.len() > 1 {
            runs.push(run);
        }
    }
    runs
}

/// "messages 2, 4 and 6" / "line 7" / "messages 1–10" (three or more in a row become a range).
pub fn positions(unit: Unit, positions: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < positions.len() {
        let mut j = i;
        while j + 1 < positions.len() && positions[j + 1] == positions[j] + 1 {
            j += 1;
        }
        if j - i >= 2 {
            parts.push(format!("{}–{}", positions[i], positions[j]));
        } else {
            parts.extend(positions[i..=j].iter().map(usize::to_string));
        }
        i = j + 1;
    }
    let joined = match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("{} {joined}", unit.name(positions.len()))
}

/// Milliseconds for people: one decimal under 10 ms, whole numbers above.
pub fn ms(value: f64) -> String {
    if value.abs() < 10.0 { format!("{value:.1}") } else { format!("{value:.0}") }
}
