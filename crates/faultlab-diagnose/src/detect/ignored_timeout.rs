//! `ignored_timeout`
//!
//! **What it finds.** A tool's last call timed out (never recovered: no later successful call of the tool) and no
//! later assistant message mentions it: the agent goes on as if nothing happened, or its turn ends without a word
//! (the user speaks next). A success claim after it is `false_success` instead. A trace that simply ends after the
//! timeout does not record what the agent did next: not a finding; the report says it was not checked.
//!
//! **Why it matters.** A timeout is not a "no": the request may have been carried out after the agent stopped
//! waiting. Treating it as nothing leaves the user with an unknown state they were never told about.
//!
//! **What a robust agent does instead.** Treats the outcome as unknown: checks whether the action took effect
//! (a read), retries only what is safe to repeat, and tells the user what is uncertain.
//!
//! **Not ignored.** A later call of another tool that worked and names the same thing as the timed-out call (an
//! argument of the same key and value: a `read_file` of the `path` whose `write_file` timed out; or a read whose
//! answer holds every text value of the timed-out call's arguments: `list_orders` showing the `widget` order whose
//! `create_order {item: widget}` timed out): the agent checked whether it took effect. A success claim after such a check is no `false_success` either.
//!
//! **False positives.** A timeout on a call whose result did not matter.
//! Needs the agent's messages: it does not run on trajectories.

use super::aftermath::{Verdict, unrecovered};
use crate::finding::{Finding, FindingKind};
use crate::model::{Outcome, Trace};

pub const ROBUST: &str =
    "treats the outcome as unknown: checks whether it took effect, retries only what is safe, says so";

pub fn detect(trace: &Trace) -> Vec<Finding> {
    unrecovered(trace)
        .into_iter()
        .filter(|u| u.status == Outcome::Timeout)
        .filter_map(|u| {
            let Verdict::Silent { first } = u.verdict else { return None };
            let after = match first {
                Some(_) => "the agent's later messages never mention it",
                None => "the agent's turn ended without a word about it",
            };
            let summary = format!("{}; {after}", u.describe());
            Some(
                Finding::new(FindingKind::IgnoredTimeout, u.tool, u.at, u.evidence(), summary)
                    .count("timeouts", u.failures.iter().filter(|c| c.status() == Some(Outcome::Timeout)).count()),
            )
        })
        .collect()
}
