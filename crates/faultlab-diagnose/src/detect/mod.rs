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
use crate::model::{Call, Outcome, Trace, TraceFormat, Unit};
use crate::thresholds::Thresholds;
use faultlab_engine::trajectory::backoff::{self, Waits};
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

/// Errors a fault of the lab puts in the server's place that say the service will come back (a 503 or a 429), so
/// a retry of the same call may work: the schedule presets and the status and rate-limit faults.
const TRANSIENT_FAULTS: [&str; 5] =
    ["burst_failure", "server_outage", "cascading_failure", "http_status", "rate_limit"];

/// What makes a run of retries (from [`retry_runs`]) harmful, in words for a summary; empty for a bounded retry
/// with backoff of a transient failure, which is what a robust client does. Any one of:
///
/// - **no backoff**: a wait (from a failure's answer to the retry of it) under `min_backoff_ms`, a wait less than
///   [`backoff::GROWTH`] times the one before it, or no times recorded to tell;
/// - **no end**: `storm_min_retries` retries failed, so the retrying went past the bound without success;
/// - **not transient**: a failure that says the call will not work (an error whose text names no transient
///   condition, an error the server itself answered in a trajectory (no text to read), a refusal by the
///   authorization, or an error of a lab fault other than [`TRANSIENT_FAULTS`]), then the same call again.
pub(crate) fn harms(trace: &Trace, run: &[usize], thresholds: &Thresholds) -> Vec<String> {
    let calls: Vec<&Call> = run.iter().map(|&i| &trace.calls[i]).collect();
    let mut harms = Vec::new();
    let waits: Option<Vec<f64>> =
        calls.windows(2).map(|pair| Some(pair[1].ts_ms? - pair[0].result.as_ref()?.ts_ms?)).collect();
    match waits {
        None => harms.push("no times recorded to show a backoff".to_owned()),
        Some(waits) => {
            let shown = backoff::shown(&waits.iter().map(|w| ms(*w)).collect::<Vec<_>>());
            match backoff::judge(&waits, thresholds.min_backoff_ms) {
                Waits::TooShort => {
                    harms.push(format!("waits of {shown} ms, some under {} ms", ms(thresholds.min_backoff_ms)))
                }
                Waits::NotGrowing => harms.push(format!("waits of {shown} ms: the waits do not grow")),
                Waits::Backoff => {}
            }
        }
    }
    let failed_retries = calls[1..].iter().filter(|c| !c.succeeded()).count();
    if failed_retries >= thresholds.storm_min_retries {
        harms.push(format!("{failed_retries} failed retries (the bound is {})", thresholds.storm_min_retries));
    }
    // The last attempt's own failure was not retried: only the failures before a retry count.
    if let Some(call) = calls[..calls.len() - 1].iter().find(|c| !transient(c)) {
        let status = call.status().map_or("", |s| s.name());
        harms.push(format!(
            "retried after a failure that is not transient ({status} at {})",
            positions(trace.unit, &[call.result.as_ref().map_or(call.at, |r| r.at)])
        ));
    }
    harms
}

/// Whether `call`'s failure can pass if the same call is made again (see [`harms`]).
fn transient(call: &Call) -> bool {
    let Some(result) = &call.result else { return true };
    match result.status {
        Outcome::Ok | Outcome::Timeout | Outcome::Lost | Outcome::Faulted => true,
        Outcome::Refused => false,
        Outcome::Error => match (&result.text, &result.fault) {
            (Some(text), _) => crate::language::is_transient(text),
            (None, Some(fault)) => TRANSIENT_FAULTS.contains(&fault.as_str()),
            (None, None) => false,
        },
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `get("x")` failing with `error` once per wait (the wait in ms after its answer), then succeeding.
    fn run_with_waits(error: &str, waits: &[u64]) -> (Trace, Vec<usize>) {
        let mut messages = Vec::new();
        let mut t = 0;
        for (i, wait) in waits.iter().map(Some).chain([None]).enumerate() {
            messages.push(serde_json::json!({"role": "assistant", "content": null, "ts_ms": t, "tool_calls": [
                {"id": format!("c{i}"), "type": "function", "function": {"name": "get", "arguments": "{\"k\":\"x\"}"}}]}));
            t += 10; // answered in 10 ms
            let content = if wait.is_some() { error } else { "x = 1" };
            messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": content,
                "ts_ms": t}));
            t += wait.copied().unwrap_or(0);
        }
        let trace = crate::parse(&serde_json::Value::Array(messages).to_string(), None).unwrap();
        let runs = retry_runs(&trace);
        assert_eq!(runs.len(), 1);
        (trace, runs[0].clone())
    }

    fn harms_of(error: &str, waits: &[u64]) -> Vec<String> {
        let (trace, run) = run_with_waits(error, waits);
        harms(&trace, &run, &Thresholds::default())
    }

    #[test]
    fn backoff_is_waits_above_the_floor_that_grow_by_a_fifth() {
        let busy = "Error: 503 Service Unavailable";
        assert!(harms_of(busy, &[100, 200, 400]).is_empty());
        // ±25 % jitter on doubling: 125 ms then 150 ms is still growth (×1.2).
        assert!(harms_of(busy, &[125, 150, 180]).is_empty());
        // A fixed pause with noise is not.
        assert_eq!(harms_of(busy, &[150, 160, 170]), ["waits of 150, 160, 170 ms: the waits do not grow"]);
        assert_eq!(harms_of(busy, &[50, 100, 200]), ["waits of 50, 100, 200 ms, some under 100 ms"]);
    }

    #[test]
    fn the_bound_and_a_non_transient_error_make_retrying_harmful() {
        let busy = "Error: 503 Service Unavailable";
        // Three failed retries (four failures) before the success: past the default bound of 3.
        assert_eq!(harms_of(busy, &[100, 200, 400, 800]), ["3 failed retries (the bound is 3)"]);
        let harms = harms_of("Error: no such key", &[100, 200, 400]);
        assert!(harms.len() == 1 && harms[0].contains("not transient (error at message 1)"), "{harms:?}");
    }
}
