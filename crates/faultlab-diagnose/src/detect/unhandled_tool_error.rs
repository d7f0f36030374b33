//! `unhandled_tool_error`
//!
//! **What it finds.** A tool's last call failed with an error or a lost connection (never recovered: the tool was
//! not called again successfully) and the agent's turn ended without a word about anything: an empty final answer,
//! or the user speaking next with no assistant text in between. Timeouts are `ignored_timeout`'s. A trace that
//! simply ends after the failure (or after more tool calls) does not record the agent's next turn: that is not a
//! finding, and the report says the failure was *not checked* and where the trace ends (the reference client's
//! traces in `faultlab demo` end so: it is not an agent and writes no turn).
//!
//! **Why it matters.** The user is left with no answer and no explanation; whoever reads the log later has to dig
//! the failure out of a tool message.
//!
//! **What a robust agent does instead.** Reads the error, then either fixes the call, takes another route, or tells
//! the user plainly what failed and what it tried.
//!
//! **False positives.** A fallback through another tool followed by an empty answer also counts. Needs the agent's messages: it does not run on
//! trajectories.

use super::aftermath::{Verdict, unrecovered};
use super::positions;
use crate::finding::{Finding, FindingKind};
use crate::model::{Outcome, Trace};

pub const ROBUST: &str = "reads the error, then fixes the call, takes another route, or tells the user what failed";

pub fn detect(trace: &Trace) -> Vec<Finding> {
    unrecovered(trace)
        .into_iter()
        .filter(|u| u.status != Outcome::Timeout && u.verdict == Verdict::Silent { first: None })
        .map(|u| {
            let summary = format!(
                "{} at {}; the agent's turn ended without a word about it",
                u.describe(),
                positions(trace.unit, &[u.at])
            );
            Finding::new(FindingKind::UnhandledToolError, u.tool, u.at, u.evidence(), summary)
                .count("failures", u.failures.len())
        })
        .collect()
}
