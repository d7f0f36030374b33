//! `corrected_retry`
//!
//! **What it finds.** A call that failed with an error that may be about its arguments, followed (after the error
//! came back) by the next call of the same tool with different arguments. The finding names the argument keys
//! added, removed and changed, and whether the corrected call worked. Not an error about the arguments, so never
//! corrected: a timeout or a lost connection; an error that names a transient condition (a rate limit, 429, 500, 503,
//! "unavailable", "try again", …); an error a fault of the lab's proxy put in place of the server's reply (the
//! trajectory names the fault: the server never judged the arguments). Nor is a next call that repeats the
//! arguments of an earlier call of the tool a correction: it is that call again. A hedged read (the same read sent
//! to two places at once, say `input.txt` and `mirror/input.txt`) whose one place answers "not found" and whose
//! other is then sent again is a retry of the other, not a correction of the first. (In a proxy trajectory a fault
//! that answers at once writes its reply before the proxy has read the call sent beside it, so the lines alone do
//! not show that the two were in flight together.)
//!
//! **Why it matters.** It is a hint about the tool more than the agent: when agents keep getting a call wrong the
//! first time, the schema or description is unclear (a missing `enum`, an ambiguous name, an undocumented format).
//! Every correction costs a round trip.
//!
//! **What a robust agent does instead.** Nothing different, often — correcting is right. Fix the schema so the
//! first call is right: precise types, enums, examples, and error messages that name the field.
//!
//! **Not a correction either:** a next call made after the agent called another tool in between (a `read_file`
//! of `config.yaml` not found, a `list_dir`, then `read_file` of the `config.yml` it listed): what changed came
//! from what it looked up, which no schema could have said.
//!
//! **False positives.** An agent changing its mind on purpose after a legitimate error (a search with no results,
//! retried with other terms) looks the same, and so does the next of several distinct calls (look up `a`, then `b`)
//! after a genuine error on the first. Needs arguments.

use super::positions;
use crate::finding::{Finding, FindingKind};
use crate::model::{Call, Outcome, Trace};
use serde_json::Value;

pub const ROBUST: &str =
    "gets the call right the first time because the schema says what it needs: make types, enums and errors precise";

pub fn detect(trace: &Trace) -> Vec<Finding> {
    let mut findings = Vec::new();
    for tool in trace.tools() {
        let calls: Vec<&Call> = trace.calls_of(tool).map(|i| &trace.calls[i]).collect();
        for pair in calls.windows(2) {
            let (failed, retry) = (pair[0], pair[1]);
            if !about_the_arguments(failed) || failed.result.as_ref().is_some_and(|r| r.at > retry.at) {
                continue;
            }
            let (Some(before), Some(after)) = (&failed.arguments, &retry.arguments) else { continue };
            if failed.arguments_key() == retry.arguments_key() || repeats_an_earlier_call(&calls, retry) {
                continue;
            }
            if trace.calls.iter().any(|c| c.tool != *tool && c.at > failed.at && c.at < retry.at) {
                continue;
            }
            findings.push(finding(trace, failed, retry, &changes(before, after)));
        }
    }
    findings
}

/// Whether `next` has the arguments of a call of its tool made before it: then it is that call again (a retry of
/// it, or of one of a pair sent together), whatever failed just before it.
fn repeats_an_earlier_call(calls: &[&Call], next: &Call) -> bool {
    let key = next.arguments_key();
    calls.iter().take_while(|c| c.at < next.at).any(|c| c.arguments_key() == key)
}

/// Whether `call` failed with an error that can be about its arguments: an error reply from the server itself
/// (not one a lab fault put in its place) that does not name a transient condition.
fn about_the_arguments(call: &Call) -> bool {
    let Some(result) = &call.result else { return false };
    result.status == Outcome::Error
        && result.fault.is_none()
        && !result.text.as_deref().is_some_and(crate::language::is_transient)
}

/// `added x; removed y; changed z` for two argument objects; "changed the arguments" for anything else.
fn changes(before: &Value, after: &Value) -> String {
    let (Value::Object(before), Value::Object(after)) = (before, after) else {
        return "changed the arguments".into();
    };
    let list = |keys: Vec<&String>| keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    let added: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let removed: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    let changed: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(*k).is_some_and(|w| faultlab_wire::canonical(w) != faultlab_wire::canonical(v)))
        .map(|(k, _)| k)
        .collect();
    let mut parts = Vec::new();
    for (verb, keys) in [("added", added), ("removed", removed), ("changed", changed)] {
        if !keys.is_empty() {
            parts.push(format!("{verb} {}", list(keys)));
        }
    }
    parts.join("; ")
}

fn finding(trace: &Trace, failed: &Call, retry: &Call, changes: &str) -> Finding {
    let error_at = failed.result.as_ref().map_or(failed.at, |r| r.at);
    let outcome = match retry.status() {
        Some(Outcome::Ok) => "and the corrected call worked",
        Some(_) => "and the corrected call failed too",
        None => "with no answer in the trace",
    };
    let summary = format!(
        "{} failed at {}; the retry at {} {changes}, {outcome}",
        failed.tool,
        positions(trace.unit, &[error_at]),
        positions(trace.unit, &[retry.at])
    );
    let mut evidence = vec![failed.at, error_at, retry.at];
    evidence.extend(retry.result.as_ref().map(|r| r.at));
    Finding::new(FindingKind::CorrectedRetry, &failed.tool, retry.at, evidence, summary)
}
