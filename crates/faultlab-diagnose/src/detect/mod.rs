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
use crate::model::{Call, Trace, TraceFormat, Unit};
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
    /// The lab's own verdict on the run, when known (see [`crate::lab`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lab: Option<crate::lab::LabVerdict>,
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
    if has(&trace, Need::AgentText) {
        // Failures the trace ends before judging: said, not guessed at.
        for (kind, reason) in aftermath::cut_off(&trace) {
            not_checked.push(NotChecked { kind, missing: vec![Need::AgentTurn], reason });
        }
    }
    findings.sort_by_key(|f| (f.at, f.kind));
    if let Some(lab) = trace.lab.as_ref().filter(|lab| lab.passed) {
        for finding in &mut findings {
            finding.lab_disagreement =
                Some(format!("{} judged this run correct; {}", lab.source, finding.kind.disagreement()));
        }
    }
    Diagnosis {
        file: file.to_owned(),
        format: trace.format,
        unit: trace.unit,
        entries: trace.entries.len(),
        calls: trace.calls.len(),
        findings,
        not_checked,
        lab: trace.lab.clone(),
        trace,
    }
}

fn has(trace: &Trace, need: Need) -> bool {
    match need {
        Need::Arguments => trace.recorded.arguments,
        Need::AgentText => trace.recorded.agent_text,
        Need::Timing => trace.recorded.timing,
        Need::AgentTurn => true,
    }
}

/// The calls cut into retry runs. A retry is the same call again (same tool, same arguments) made after the answer
/// to a failed one arrived: a run starts at a failed call and takes each later call of the same tool with the same
/// arguments while the call before it failed and had been answered (so it ends at the first success, or at the
/// end). Calls of the tool with other arguments in between neither join nor break a run: they are other work.
/// Indices into `trace.calls`; runs of a single call are left out. Needs arguments: without them a repeat cannot
/// be told from a different call of the same tool.
pub(crate) fn retry_runs(trace: &Trace) -> Vec<Vec<usize>> {
    let mut runs = Vec::new();
    for tool in trace.tools() {
        let mut keys: Vec<String> = Vec::new();
        for i in trace.calls_of(tool) {
            let Some(key) = trace.calls[i].arguments_key() else { continue };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        for key in keys {
            let same: Vec<usize> =
                trace.calls_of(tool).filter(|&i| trace.calls[i].arguments_key().as_ref() == Some(&key)).collect();
            let mut run: Vec<usize> = Vec::new();
            for i in same {
                if let Some(&last) = run.last()
                    && is_retry_of(&trace.calls[last], &trace.calls[i])
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
    }
    runs.sort_by_key(|run| run[0]);
    runs
}

/// Whether `next` answers `failed`'s failure: `failed` failed and its answer came before `next` was made (a call
/// sent while the first was still out is a concurrent call, not a retry).
fn is_retry_of(failed: &Call, next: &Call) -> bool {
    failed.failed() && failed.result.as_ref().is_some_and(|r| r.at < next.at)
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
