//! `duplicate_side_effect`
//!
//! **What it finds.** A write (a tool whose name contains a write verb — `create`, `send`, `book`, `pay`, … — or one
//! listed in `write_tools`) that failed in a way where its side effect may already have happened, then called
//! again with the same arguments, with no answered read of another tool in between (a server's error reply, "not
//! found", is an answer) and no idempotency key in the arguments (`idempotency_key`, `request_id`, `client_token`,
//! …). The side effect is taken to have happened when
//! the failure was a timeout or a lost connection (the request reached the server; its outcome is unknown — the
//! proxy's `timeout` fault in `after` mode lets the server execute), when the server is known to have executed it,
//! or when an answer to the repeat says it exists already (`already`, `duplicate`, `conflict`). A plain tool error is
//! taken to mean nothing happened.
//!
//! **Why it matters.** Two orders, two emails, two payments. The user pays for the agent's uncertainty.
//!
//! **What a robust agent does instead.** Checks whether the first write took effect before repeating it, or sends
//! an idempotency key so the server can drop the repeat.
//!
//! **False positives.** An idempotent write (setting a value, a PUT of the same document) is safe to repeat; a
//! server that dedupes without a key in the arguments; a timeout that fired before the request was sent. Write
//! tools are recognised by name only. Needs arguments: it does not run on trajectories, whose frames do not record
//! them (a repeat there cannot be told from a different write to the same tool).

use super::positions;
use crate::finding::{Finding, FindingKind};
use crate::language;
use crate::model::{Call, Outcome, Trace, shorten};
use crate::thresholds::Thresholds;
use serde_json::Value;

pub const ROBUST: &str =
    "checks whether the first write took effect before repeating it, or sends an idempotency key with it";

pub fn detect(trace: &Trace, thresholds: &Thresholds) -> Vec<Finding> {
    let mut findings = Vec::new();
    for tool in trace.tools().into_iter().filter(|t| language::is_write(t, &thresholds.write_tools)) {
        let calls: Vec<&Call> = trace.calls_of(tool).map(|i| &trace.calls[i]).collect();
        // Indices into `calls` already reported as repeats, so a chain of repeats is one finding.
        let mut repeated: Vec<usize> = Vec::new();
        for (i, first) in calls.iter().enumerate() {
            if repeated.contains(&i) || !first.failed() || first.arguments.as_ref().is_some_and(has_key) {
                continue;
            }
            let Some(key) = first.arguments_key() else { continue };
            let later: Vec<usize> =
                (i + 1..calls.len()).filter(|&j| calls[j].arguments_key().as_ref() == Some(&key)).collect();
            let repeats: Vec<&Call> = later.iter().map(|&j| calls[j]).collect();
            let Some(next) = repeats.first() else { continue };
            if checked_between(trace, first, next, &thresholds.write_tools) {
                continue;
            }
            let Some(why) = happened(first, &repeats) else { continue };
            repeated.extend(later);
            findings.push(finding(trace, first, &repeats, &why));
        }
    }
    findings
}

/// Why the first write's side effect is taken to have happened, or `None`.
fn happened(first: &Call, repeats: &[&Call]) -> Option<String> {
    let result = first.result.as_ref()?;
    // Only where no answer reached the agent: a delivered error reply was executed too, without the effect.
    if result.executed == Some(true) && result.status.ambiguous() {
        return Some("the server executed it although no answer reached the agent".into());
    }
    match result.status {
        Outcome::Timeout => return Some("it timed out, so it may have gone through".into()),
        Outcome::Lost => return Some("the connection was lost, so it may have gone through".into()),
        _ => {}
    }
    repeats.iter().find_map(|c| {
        let result = c.result.as_ref()?;
        let text = result.text.as_deref().filter(|t| language::says_already_done(t))?;
        Some(format!("the repeat's answer at {} says so: \"{}\"", result.at, shorten(text, 50)))
    })
}

/// Whether a call of a read tool (not a write) that got an answer sits between the failed write's answer and the
/// repeat. An error the server answered is an answer too (`file_info` of the file the write made: "not found" says
/// the write did not happen); a timeout, a lost connection, or an error about the moment (a 503, a rate limit) or
/// one a fault of the lab put in the server's place says nothing.
fn checked_between(trace: &Trace, first: &Call, next: &Call, writes: &[String]) -> bool {
    let after = first.result.as_ref().map_or(first.at, |r| r.at);
    trace.calls.iter().any(|c| c.at > after && c.at < next.at && answered(c) && !language::is_write(&c.tool, writes))
}

/// Whether `call` got an answer about the thing it asked of (see [`checked_between`]).
fn answered(call: &Call) -> bool {
    let Some(result) = &call.result else { return false };
    match result.status {
        Outcome::Ok => true,
        Outcome::Error => match &result.text {
            Some(text) => !language::is_transient(text),
            None => result.fault.is_none(),
        },
        _ => false,
    }
}

/// Whether the arguments carry an idempotency key (top level or one level down).
fn has_key(arguments: &Value) -> bool {
    let Value::Object(map) = arguments else { return false };
    map.iter().any(|(k, v)| language::is_idempotency_key(k) || (v.is_object() && has_key(v)))
}

fn finding(trace: &Trace, first: &Call, repeats: &[&Call], why: &str) -> Finding {
    let at: Vec<usize> = repeats.iter().map(|c| c.at).collect();
    let summary = format!(
        "{} failed at {} — {why} — and the same write was sent again at {}, with no check in between and no \
         idempotency key",
        first.signature(),
        positions(trace.unit, &[first.result.as_ref().map_or(first.at, |r| r.at)]),
        positions(trace.unit, &at)
    );
    let mut evidence = vec![first.at];
    evidence.extend(first.result.as_ref().map(|r| r.at));
    evidence.extend(repeats.iter().flat_map(|c| std::iter::once(c.at).chain(c.result.as_ref().map(|r| r.at))));
    Finding::new(FindingKind::DuplicateSideEffect, &first.tool, at[0], evidence, summary)
        .count("repeats", repeats.len())
}
