//! `unhandled_tool_error`
//!
//! **What it finds.** A tool's last call failed with an error or a lost connection (never recovered: the tool was
//! not called again successfully) and the agent wrote nothing afterwards: the trace ends on the failure, or only
//! more tool calls follow. Timeouts are `ignored_timeout`'s.
//!
//! **Why it matters.** The user is left with no answer and no explanation; whoever reads the log later has to dig
//! the failure out of a tool message.
//!
//! **What a robust agent does instead.** Reads the error, then either fixes the call, takes another route, or tells
//! the user plainly what failed and what it tried.
//!
//! **False positives.** A trace cut off before the agent's next turn (logged mid-run) ends on a failure too. A
//! fallback through another tool followed by silence also counts. Needs the agent's messages: it does not run on
//! trajectories.

use super::aftermath::{Verdict, unrecovered};
use super::positions;
use crate::finding::{Finding, FindingKind};
use crate::model::{Status, Trace};

pub const ROBUST: &str = "reads the error, then fixes the call, takes another route, or tells the user what failed";

pub fn detect(trace: &Trace) -> Vec<Finding> {
    unrecovered(trace)
        .into_iter()
        .filter(|u| u.status != Status::Timeout && u.verdict == Verdict::Silent { first: None })
        .map(|u| {
            let after = if trace.entries.last().is_some_and(|e| e.pos == u.at) {
                format!("the trace ends at {} without an assistant message", positions(trace.unit, &[u.at]))
            } else {
                "no assistant message follows".to_owned()
            };
            let summary = format!("{}; {after}", u.describe());
            Finding::new(FindingKind::UnhandledToolError, u.tool, u.at, u.evidence(), summary)
                .count("failures", u.failures.len())
        })
        .collect()
}
