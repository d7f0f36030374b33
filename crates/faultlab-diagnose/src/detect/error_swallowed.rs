//! `error_swallowed`
//!
//! **What it finds.** A tool's last call failed with an error or a lost connection (never recovered), and the
//! agent went on to write to the user without a word about it: no later message admits a failure, and none claims
//! success either (that is `false_success`). Typically the agent answers as if it had the data.
//!
//! **Why it matters.** The answer is built on a result that never came: at best incomplete, at worst made up. The
//! user has no reason to doubt it.
//!
//! **What a robust agent does instead.** Says which part of the task could not be done and why, and keeps what it
//! tells the user to what the tools actually returned.
//!
//! **False positives.** A failure that genuinely did not matter (an optional lookup) and a fallback through
//! another tool both look like this when the message does not mention them. Failure is read from English words
//! (`error`, `couldn't`, `unavailable`, `rejected`, `rate limit`, `was down`, …; after a not-found, `does not
//! exist` and `there is no` too): an admission in other words or another language is missed. Needs the
//! agent's messages: it does not run on trajectories.

use super::aftermath::{Verdict, unrecovered};
use super::positions;
use crate::finding::{Finding, FindingKind};
use crate::model::{Outcome, Trace};

pub const ROBUST: &str =
    "tells the user which part could not be done and why, and answers only from what tools returned";

pub fn detect(trace: &Trace) -> Vec<Finding> {
    unrecovered(trace)
        .into_iter()
        .filter(|u| u.status != Outcome::Timeout)
        .filter_map(|u| {
            let Verdict::Silent { first: Some(text) } = u.verdict else { return None };
            let summary =
                format!("{}; the answer at {} does not mention it", u.describe(), positions(trace.unit, &[text]));
            Some(u.finding_at(FindingKind::ErrorSwallowed, text, summary))
        })
        .collect()
}
