//! `retry_storm`
//!
//! **What it finds.** A failed call retried, and retried again, at least `storm_min_retries` (3) times in a row,
//! when the retrying does harm. A retry is the same call again — same tool, same arguments — made after the
//! failure's answer came back; calls of the tool with other arguments are other work, not retries (three distinct
//! `echo` calls that each met a fault are no storm), and calls in flight together are not retries of each other.
//! The retrying does harm when any one of these holds (`harms` in `detect/mod.rs`; the finding names which):
//!
//! - **no backoff**: a wait before a retry (from the failure's answer to the retry) under `min_backoff_ms` (100 ms),
//!   or a wait less than 1.2 times the wait before it (the waits do not grow), or no times to show the waits;
//! - **no end**: `storm_min_retries` retries failed: the retrying reached the bound without success;
//! - **not transient**: a failure that says the call will not work (an error whose text names no transient
//!   condition, a server's own error in a trajectory, a refusal by the authorization), retried unchanged.
//!
//! So a bounded retry with growing waits of a transient failure that ends in success within the bound (a read
//! retried after 100, 200 and 400 ms through three 503s, then ok) is no storm: it is what a robust client does.
//!
//! **Why it matters.** Retries without waits pile load on a service that may be failing because of load; retries
//! that never end delay the moment the user learns of the problem; an error that says the call will not work does
//! not change by asking again.
//!
//! **What a robust agent does instead.** Retries a bounded, small number of times with growing waits, only errors
//! that can pass (timeouts, rate limits, unavailability), then stops and reports or takes another route.
//!
//! **False positives.** A backoff with full jitter (a random wait between 0 and a growing cap) can draw a shorter
//! wait than the one before; a deliberate budget of `storm_min_retries` retries or more that all fail (the
//! reference client's five attempts) is one; an error that is transient but whose words the clinic does not know
//! counts as not transient. Raise `storm_min_retries` above the budget you chose. Needs arguments: it runs on
//! trajectories that record them (proxies since they gained the field), not on older ones.

use super::{harms, positions, retry_runs};
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
        let harms = harms(trace, &run, thresholds);
        if harms.is_empty() {
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
        summary.push_str(&format!("; harmful: {}", harms.join("; ")));
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
