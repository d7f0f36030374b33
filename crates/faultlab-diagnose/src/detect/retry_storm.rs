//! `retry_storm`
//!
//! **What it finds.** A failed call retried, and retried again, at least `storm_min_retries` (3) times in a row. A
//! retry is the same call again — same tool, same arguments — made after the failure's answer came back; calls of
//! the tool with other arguments are other work, not retries (three distinct `echo` calls that each met a fault are
//! no storm).
//!
//! **Why it matters.** A tool that failed three times is unlikely to succeed on the fourth. Repeated retries pile
//! load on a service that may be failing because of load, and they delay the moment the user learns of the problem.
//!
//! **What a robust agent does instead.** Retries a bounded, small number of times with growing waits, only errors
//! that can pass (timeouts, rate limits, unavailability), then stops and reports or takes another route.
//!
//! **False positives.** A deliberately bounded retry also looks like a storm when its budget reaches the threshold:
//! the reference client's five attempts (four retries) are one. Raise `storm_min_retries` above the budget you
//! chose. Needs arguments: it runs on trajectories that record them (proxies since they gained the field), not on
//! older ones.

use super::{positions, retry_runs};
use crate::finding::{Finding, FindingKind};
use crate::model::Trace;
use crate::thresholds::Thresholds;

pub const ROBUST: &str =
    "retries only transient errors, a few times with growing waits, then stops and reports or takes another route";

pub fn detect(trace: &Trace, thresholds: &Thresholds) -> Vec<Finding> {
    let mut findings = Vec::new();
    for run in retry_runs(trace) {
        let retries = run.len() - 1;
        if retries < thresholds.storm_min_retries {
            continue;
        }
        let calls: Vec<_> = run.iter().map(|&i| &trace.calls[i]).collect();
        let failures = calls.iter().filter(|c| c.failed()).count();
        let ended =
            if calls.last().is_some_and(|c| c.succeeded()) { "the last attempt succeeded" } else { "none succeeded" };
        let at: Vec<usize> = calls.iter().map(|c| c.at).collect();
        let mut summary = format!(
            "{} retried {retries} times in a row after failures ({failures} of {} attempts failed, {ended}), at {}",
            calls[0].tool,
            calls.len(),
            positions(trace.unit, &at)
        );
        let span = match (calls[0].ts_ms, calls.last().and_then(|c| c.ts_ms)) {
            (Some(first), Some(last)) => Some(last - first),
            _ => None,
        };
        if let Some(span) = span {
            summary.push_str(&format!(", within {} ms", super::ms(span)));
        }
        let mut evidence = at;
        evidence.extend(calls.iter().filter_map(|c| c.result.as_ref().map(|r| r.at)));
        let mut finding = Finding::new(
            FindingKind::RetryStorm,
            &calls[0].tool,
            calls[thresholds.storm_min_retries].at,
            evidence,
            summary,
        )
        .count("attempts", calls.len())
        .count("retries", retries)
        .count("failures", failures);
        if let Some(span) = span {
            finding = finding.count("spanMs", (span * 1000.0).round() / 1000.0);
        }
        findings.push(finding);
    }
    findings
}
