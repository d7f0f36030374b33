//! `tool_loop`
//!
//! **What it finds.** The same tool called with the same arguments and getting the same outcome, at least
//! `loop_min_calls` (3) times in a row among that tool's calls. Outcomes compare by status and result text, with
//! digit runs ignored (request ids and timestamps change from one identical answer to the next).
//!
//! **Why it matters.** The agent is not learning from what it sees: each turn costs tokens and time, the user waits,
//! and nothing changes. Loops are how an agent burns its budget without ever reaching a decision.
//!
//! **What a robust agent does instead.** Notices that an identical call gave an identical answer, and changes
//! something: the arguments, the tool, or the plan, or it stops and reports.
//!
//! **Not a loop: the user asked again.** Calls with a user message between them each answer the user (`And
//! now?`): the run ends at the user's message.
//!
//! **False positives.** Polling that never sees its job end within the trace (raise `loop_min_calls`). Needs
//! arguments (trajectories without them are not checked).
//!
//! **Not a loop: polling that ended.** Identical successful answers to a call the agent then makes once more and
//! gets a different, successful answer (`job_status` answered `running` three times, then `done`): the agent waited for
//! a change and stopped when it came.
//!
//! **Not a loop.** Identical failures that are one bounded retry with backoff of a transient failure (a run of
//! retries in which `retry_storm` finds no harm: growing waits above `min_backoff_ms`, fewer than
//! `storm_min_retries` failed retries, every failure transient): that is what a robust client does through a
//! burst of 503s. Identical failures retried without backoff, past the bound or after a non-transient error stay
//! a loop.

use super::{harms, positions, retry_runs};
use crate::finding::{Finding, FindingKind};
use crate::model::{Call, Role, Trace, shorten};
use crate::thresholds::Thresholds;

pub const ROBUST: &str =
    "notices an identical call gave an identical answer and changes the arguments, the tool or the plan — or stops";

pub fn detect(trace: &Trace, thresholds: &Thresholds) -> Vec<Finding> {
    let mut findings = Vec::new();
    let backed_off: Vec<Vec<usize>> =
        retry_runs(trace).into_iter().filter(|run| harms(trace, run, thresholds).is_empty()).collect();
    for tool in trace.tools() {
        let indices: Vec<usize> = trace.calls_of(tool).collect();
        let calls: Vec<&Call> = indices.iter().map(|&i| &trace.calls[i]).collect();
        let mut start = 0;
        while start < calls.len() {
            let key = same(calls[start]);
            // A run ends at a call the user asked for again: a user message between two calls.
            let len = 1 + calls[start..]
                .windows(2)
                .take_while(|pair| same(pair[1]) == key && !user_spoke_between(trace, pair[0], pair[1]))
                .count();
            let looped = &indices[start..start + len];
            let retried_with_backoff = backed_off.iter().any(|run| looped.iter().all(|i| run.contains(i)));
            // Answers that worked, then the next call of the tool: the same arguments, an answer that changed and
            // worked. (Identical failures, then success, are retries: judged by their backoff above.)
            let polled_until_done = calls[start].succeeded()
                && calls.get(start + len).is_some_and(|next| {
                    next.succeeded()
                        && next.arguments_key().is_some()
                        && next.arguments_key() == calls[start].arguments_key()
                });
            if len >= thresholds.loop_min_calls && key.is_some() && !retried_with_backoff && !polled_until_done {
                findings.push(finding(trace, &calls[start..start + len], thresholds.loop_min_calls));
            }
            start += len;
        }
    }
    findings
}

/// Whether the user spoke between two calls: the later one answers the user's new message, not the earlier answer.
fn user_spoke_between(trace: &Trace, first: &Call, next: &Call) -> bool {
    trace.entries.iter().any(|e| e.role == Role::User && e.pos > first.at && e.pos < next.at)
}

/// What makes two calls the same: arguments, status and result text with digits ignored.
fn same(call: &Call) -> Option<(String, String, String)> {
    let result = call.result.as_ref()?;
    let text: String = result.text.as_deref().unwrap_or_default().chars().filter(|c| !c.is_ascii_digit()).collect();
    Some((call.arguments_key()?, result.status.name().to_owned(), text))
}

fn finding(trace: &Trace, run: &[&Call], min: usize) -> Finding {
    let first = run[0];
    let status = first.status().map_or("", |s| s.name());
    let outcome = match first.result.as_ref().and_then(|r| r.text.as_deref()) {
        Some(text) if !text.trim().is_empty() => format!("{status}: \"{}\"", shorten(text, 60)),
        _ => status.to_owned(),
    };
    let calls: Vec<usize> = run.iter().map(|c| c.at).collect();
    let summary = format!(
        "{} called {} times in a row with the same arguments, the same answer each time ({outcome}), at {}",
        first.signature(),
        run.len(),
        positions(trace.unit, &calls)
    );
    let mut evidence = calls;
    evidence.extend(run.iter().filter_map(|c| c.result.as_ref().map(|r| r.at)));
    Finding::new(FindingKind::ToolLoop, &first.tool, run[min - 1].at, evidence, summary).count("calls", run.len())
}
