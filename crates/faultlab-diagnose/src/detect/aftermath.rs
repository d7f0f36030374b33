//! What the agent did after a failure it never recovered from, shared by `unhandled_tool_error`, `false_success`,
//! `ignored_timeout` and `error_swallowed` so the four never report the same failure twice.
//!
//! A failure is *unrecovered* when it is the last call of its tool (no later call of the tool succeeded or was even
//! tried). Recovery through a different tool is not recognised, which is why those detectors list a fallback as a
//! false positive unless the agent's message mentions the failure.

use crate::finding::{Finding, FindingKind};
use crate::language;
use crate::model::{Call, Outcome, Role, Trace};

/// What the agent's messages after the failure say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A later message admits a failure: handled, whatever else happened.
    Reported,
    /// A later message claims success, and none admits the failure.
    ClaimedSuccess { at: usize },
    /// Later messages say nothing about it (`first` is the first of them), or there are none although the
    /// agent's turn is recorded as over (an empty final answer, or the user speaking next).
    Silent { first: Option<usize> },
    /// No agent text follows and the trace ends before the agent's turn does: what the agent did about the failure
    /// is not recorded, so it is not judged (`last` is the trace's last position).
    CutOff { last: usize },
    /// The call timed out or lost its connection, so whether it took effect was unknown, and a later call of
    /// another tool that worked looked at the same thing ([`checked_by`]; `at` is that call): the agent checked
    /// the outcome, which is what a robust agent does. Whatever it then said follows from what it saw.
    Checked { at: usize },
}

/// A tool's last call, failed, with the failures in a row before it.
pub struct Unrecovered<'a> {
    pub tool: &'a str,
    pub last: &'a Call,
    /// The failed calls in a row that end with `last`.
    pub failures: Vec<&'a Call>,
    pub status: Outcome,
    /// Where the last failure's answer is.
    pub at: usize,
    pub verdict: Verdict,
}

impl Unrecovered<'_> {
    /// Calls and answers of the failures, as evidence.
    pub fn evidence(&self) -> Vec<usize> {
        let mut evidence: Vec<usize> = self.failures.iter().map(|c| c.at).collect();
        evidence.extend(self.failures.iter().filter_map(|c| c.result.as_ref().map(|r| r.at)));
        evidence
    }

    /// The finding `kind` about the message `at` that followed the failures: the failures and `at` as evidence.
    pub fn finding_at(&self, kind: FindingKind, at: usize, summary: String) -> Finding {
        let mut evidence = self.evidence();
        evidence.push(at);
        Finding::new(kind, self.tool, at, evidence, summary).count("failures", self.failures.len())
    }

    /// `lab_probe failed 5 times in a row (last: "Error: …")` / `search timed out (…)`.
    pub fn describe(&self) -> String {
        let verb = match self.status {
            Outcome::Timeout => "timed out",
            Outcome::Lost => "lost its connection",
            Outcome::Refused => "was refused by the authorization",
            _ => "failed",
        };
        let n = self.failures.len();
        let attempts = if n == 1 { String::new() } else { format!(" {n} times in a row") };
        let last = match self.last.result.as_ref().and_then(|r| r.text.as_deref()) {
            Some(text) if !text.trim().is_empty() => {
                let label = if n == 1 { "" } else { "last: " };
                format!(" ({label}\"{}\")", crate::model::shorten(text, 70))
            }
            _ => String::new(),
        };
        format!("{} {verb}{attempts}{last}", self.tool)
    }
}

/// Every tool whose last call failed, with the verdict on what followed.
pub fn unrecovered(trace: &Trace) -> Vec<Unrecovered<'_>> {
    let mut found = Vec::new();
    for tool in trace.tools() {
        let calls: Vec<&Call> = trace.calls_of(tool).map(|i| &trace.calls[i]).collect();
        let Some(last) = calls.last().copied() else { continue };
        let Some(result) = last.result.as_ref().filter(|r| r.status.failed()) else { continue };
        let failures: Vec<&Call> = {
            let mut run: Vec<&Call> = calls.iter().rev().take_while(|c| c.failed()).copied().collect();
            run.reverse();
            run
        };
        let texts: Vec<(usize, &str)> = trace.agent_texts_after(result.at).collect();
        let learnt = learnt_from(trace, result.at);
        let verdict = if let Some(check) = checked_by(trace, last) {
            Verdict::Checked { at: check.at }
        } else if texts
            .iter()
            .any(|(_, t)| language::tells_failure(t, result.text.as_deref()) || language::says_any(t, &learnt))
        {
            Verdict::Reported
        } else if let Some((at, _)) = texts.iter().find(|(_, t)| language::claims_success(t)) {
            Verdict::ClaimedSuccess { at: *at }
        } else if texts.is_empty() && !turn_ended(trace, result.at) {
            Verdict::CutOff { last: trace.entries.last().map_or(result.at, |e| e.pos) }
        } else {
            Verdict::Silent { first: texts.first().map(|(at, _)| *at) }
        };
        found.push(Unrecovered { tool, last, failures, status: result.status, at: result.at, verdict });
    }
    found
}

/// The words only the failure's answer at `at` said: its distinctive words ([`language::distinctive_words`]) that
/// no message or call before it holds (the user's request, the call's own name and arguments, earlier answers). An
/// answer that uses one ("deploying needs an approval first", after "approval required") told the user what the
/// failure said, in its words; a word the user said first ("tickets") tells nothing.
fn learnt_from(trace: &Trace, at: usize) -> Vec<String> {
    let Some(failure) = trace.entry(at).and_then(|e| e.text.as_deref()) else { return Vec::new() };
    let mut before: Vec<String> = trace.entries.iter().filter(|e| e.pos < at).filter_map(|e| e.text.clone()).collect();
    for call in trace.calls.iter().filter(|c| c.at < at) {
        before.push(call.tool.replace(['_', '-', '.'], " "));
        before.extend(call.arguments.as_ref().map(|a| a.to_string()));
    }
    language::distinctive_words(failure, &before)
}

/// The later call that checked whether `failed` took effect, when its outcome was unknown (a timeout or a lost
/// connection): a call of another tool, made after the failure came back, that worked and names the same thing:
/// an argument of the same key and the same value (`write_file {path: output.txt}` timed out, `read_file {path:
/// output.txt}` then), or, for a read (`list_orders`, `get_team`), an answer that holds every text value of the
/// failed call's arguments (`create_order {item: widget}` timed out, the listing then shows the widget order). A
/// retry of the same tool is not a check: it makes the call unrecovered no more.
fn checked_by<'a>(trace: &'a Trace, failed: &Call) -> Option<&'a Call> {
    let result = failed.result.as_ref().filter(|r| matches!(r.status, Outcome::Timeout | Outcome::Lost))?;
    let named = failed.arguments.as_ref()?.as_object()?;
    // Text values long enough to name a thing (3 characters or more), lower-cased.
    let texts: Vec<String> =
        named.values().filter_map(|v| v.as_str()).filter(|v| v.chars().count() >= 3).map(str::to_lowercase).collect();
    trace.calls.iter().filter(|c| c.at > result.at && c.tool != failed.tool && c.succeeded()).find(|c| {
        let same_argument = c.arguments.as_ref().and_then(|a| a.as_object()).is_some_and(|args| {
            args.iter().any(|(key, value)| {
                named.get(key).is_some_and(|v| v == value && (value.is_string() || value.is_number()))
            })
        });
        let answer = c.result.as_ref().and_then(|r| r.text.as_deref()).map(str::to_lowercase);
        let shows_it = !texts.is_empty()
            && !language::is_write(&c.tool, &[])
            && answer.is_some_and(|answer| texts.iter().all(|t| answer.contains(t.as_str())));
        same_argument || shows_it
    })
}

/// Whether the trace records the end of the agent's turn after position `pos`: an assistant message with no tool
/// calls (a final answer, empty or not) or a user message. A trace that stops on a tool result, or on more tool
/// calls, was cut off (or written by a client that is not an agent) before the agent's next turn.
fn turn_ended(trace: &Trace, pos: usize) -> bool {
    trace.entries.iter().filter(|e| e.pos > pos).any(|e| match e.role {
        Role::User => true,
        Role::Assistant => !trace.calls.iter().any(|c| c.at == e.pos),
        _ => false,
    })
}

/// The unrecovered failures the trace ends before judging, as notes for the report: `(kind, reason)`, the kind
/// being the detector that would otherwise have looked at it (`ignored_timeout` for a timeout, else
/// `unhandled_tool_error`).
pub fn cut_off(trace: &Trace) -> Vec<(FindingKind, String)> {
    unrecovered(trace)
        .into_iter()
        .filter_map(|u| {
            let Verdict::CutOff { last } = u.verdict else { return None };
            let kind = if u.status == Outcome::Timeout {
                FindingKind::IgnoredTimeout
            } else {
                FindingKind::UnhandledToolError
            };
            let at = super::positions(trace.unit, &[u.at]);
            let ends = if last == u.at {
                format!("and the trace ends there ({at})")
            } else {
                format!(
                    "at {at}, and the trace ends at {} before the agent's turn does",
                    super::positions(trace.unit, &[last])
                )
            };
            let reason = format!("{} {ends}: what the agent did next is not recorded", u.describe());
            Some((kind, reason))
        })
        .collect()
}
