//! `retry_without_backoff`
//!
//! **What it finds.** In one run of retries (the same call again — same tool, same arguments — each made after the
//! answer to the failed one before it; see `retry_storm`), at least
//! `quick_retries` (2) retries that start less than `min_backoff_ms` (100 ms) after the failure before them. The
//! gap runs from the failure's answer (or, without a time on it, from the failed call) to the retry.
//!
//! **Why it matters.** A service that just failed — overloaded, rate limiting, restarting — is hit again at once,
//! which keeps it failing; many clients doing this at the same moment turn a blip into an outage.
//!
//! **What a robust agent does instead.** Waits before each retry, longer each time (exponential backoff with
//! jitter), and honours a `Retry-After` the server sends.
//!
//! **False positives.** A retry against another replica or after a reconnect, where waiting buys nothing; a server
//! that asked for an immediate retry. One quick retry alone never fires. Distinct calls of one tool in quick
//! succession are not retries, whatever their outcomes. Needs arguments as well as times.
//!
//! **Timing.** Needs times: proxy trajectories have them (`tsMs`); OpenAI messages only when they carry `ts_ms` or
//! an RFC 3339 `timestamp`. Without times it does not run and the report says so: adjacent messages say nothing
//! about how long the agent waited between them, so they are not taken as evidence of no backoff. A retry whose
//! call or failure has no time is skipped.

use super::{ms, positions, retry_runs};
use crate::finding::{Finding, FindingKind};
use crate::model::Trace;
use crate::thresholds::Thresholds;

pub const ROBUST: &str = "waits before each retry, longer each time with jitter, and honours a Retry-After";

pub fn detect(trace: &Trace, thresholds: &Thresholds) -> Vec<Finding> {
    let mut findings = Vec::new();
    for run in retry_runs(trace) {
        // (failed call's answer position, retry's call position, gap in ms) for each retry that came too soon.
        let mut quick: Vec<(usize, usize, f64)> = Vec::new();
        for pair in run.windows(2) {
            let (failed, retry) = (&trace.calls[pair[0]], &trace.calls[pair[1]]);
            let failed_at = failed.result.as_ref().and_then(|r| r.ts_ms).or(failed.ts_ms);
            if let (Some(failed_at), Some(retry_at)) = (failed_at, retry.ts_ms) {
                let gap = retry_at - failed_at;
                if gap < thresholds.min_backoff_ms {
                    quick.push((failed.result.as_ref().map_or(failed.at, |r| r.at), retry.at, gap));
                }
            }
        }
        if quick.len() < thresholds.quick_retries {
            continue;
        }
        let tool = &trace.calls[run[0]].tool;
        let longest = quick.iter().map(|q| q.2).fold(f64::MIN, f64::max);
        let retries: Vec<usize> = quick.iter().map(|q| q.1).collect();
        let summary = format!(
            "{tool} retried {} times within {} ms of the failure before each (under the {} ms minimum), at {}",
            quick.len(),
            ms(longest),
            ms(thresholds.min_backoff_ms),
            positions(trace.unit, &retries)
        );
        let evidence = quick.iter().flat_map(|q| [q.0, q.1]).collect();
        findings.push(
            Finding::new(
                FindingKind::RetryWithoutBackoff,
                tool,
                quick[thresholds.quick_retries - 1].1,
                evidence,
                summary,
            )
            .count("quickRetries", quick.len())
            .count("longestGapMs", (longest * 1000.0).round() / 1000.0),
        );
    }
    findings
}
