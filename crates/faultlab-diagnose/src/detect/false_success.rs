//! `false_success`
//!
//! **What it finds.** An assistant message that claims success (`done`, `successfully`, `booked`, `sent`, …, not
//! negated) after a tool's last call failed and was never recovered, with no message admitting the failure.
//! Any failure counts: error, timeout or lost connection, except a timeout or lost connection whose outcome the
//! agent then checked (a later call of another tool that worked, naming the same thing: see `ignored_timeout`).
//! That check is not read: a claim that contradicts what it showed is not found.
//!
//! **Why it matters.** The user believes the task is done and acts on it. This is the costliest failure of an agent:
//! it turns a visible error into an invisible one.
//!
//! **What a robust agent does instead.** Claims success only on a successful result; after a failure, says what is
//! known and what is not (after a timeout: that the outcome is unknown and how to check it).
//!
//! **False positives.** A success claim about another part of the task ("the report is done; the email failed" is
//! fine, but "the report is done" alone after a failed email is flagged), and a fallback through another tool that
//! really succeeded. Success and failure are read from English words. Needs the agent's messages: it does not run
//! on trajectories.

use super::aftermath::{Verdict, unrecovered};
use super::positions;
use crate::finding::{Finding, FindingKind};
use crate::model::{Trace, shorten};

pub const ROBUST: &str =
    "claims success only on a successful result; after a failure says what is known and what is not";

pub fn detect(trace: &Trace) -> Vec<Finding> {
    unrecovered(trace)
        .into_iter()
        .filter_map(|u| {
            let Verdict::ClaimedSuccess { at } = u.verdict else { return None };
            let claim = trace.entry(at).and_then(|e| e.text.as_deref()).unwrap_or_default();
            let summary = format!(
                "{} claims success (\"{}\") after {}",
                positions(trace.unit, &[at]),
                shorten(claim, 60),
                u.describe()
            );
            Some(u.finding_at(FindingKind::FalseSuccess, at, summary))
        })
        .collect()
}
