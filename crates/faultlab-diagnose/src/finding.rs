//! What a detector reports: the kind of mistake, where it happens, the evidence, and what a robust agent does.

use crate::detect;
use crate::model::Trace;
use crate::thresholds::Thresholds;
use serde::Serialize;
use serde_json::{Map, Value};

/// Every detector, one closed enum; each variant's logic and documentation live in `detect/<name>.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum FindingKind {
    ToolLoop,
    RetryStorm,
    UnhandledToolError,
    FalseSuccess,
    IgnoredTimeout,
    DuplicateSideEffect,
    RetryWithoutBackoff,
    ErrorSwallowed,
    CorrectedRetry,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Severity {
    /// The user is misled or harmed (a false claim, a repeated side effect, a failure never surfaced).
    Error,
    /// Wasteful or fragile behaviour.
    Warning,
    /// Worth a look; often points at the tool's schema rather than the agent.
    Hint,
}

impl Severity {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// Data a detector needs the trace to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    Arguments,
    AgentText,
    Timing,
    /// The agent's turn after a failure (the trace ends first).
    AgentTurn,
}

impl Need {
    pub fn describe(self) -> &'static str {
        match self {
            Need::Arguments => "the trace records no call arguments",
            Need::AgentText => "the trace records no agent messages",
            Need::Timing => "the trace has no timestamps; add `ts_ms` or an RFC 3339 `timestamp` to its messages",
            Need::AgentTurn => "the trace ends before the agent's turn after a failure",
        }
    }
}

impl FindingKind {
    pub const ALL: [FindingKind; 9] = [
        FindingKind::ToolLoop,
        FindingKind::RetryStorm,
        FindingKind::UnhandledToolError,
        FindingKind::FalseSuccess,
        FindingKind::IgnoredTimeout,
        FindingKind::DuplicateSideEffect,
        FindingKind::RetryWithoutBackoff,
        FindingKind::ErrorSwallowed,
        FindingKind::CorrectedRetry,
    ];

    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The kind named `name` (`tool_loop`, …); hyphens are accepted for underscores.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.replace('-', "_");
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn severity(self) -> Severity {
        match self {
            FindingKind::UnhandledToolError
            | FindingKind::FalseSuccess
            | FindingKind::DuplicateSideEffect
            | FindingKind::ErrorSwallowed => Severity::Error,
            FindingKind::ToolLoop
            | FindingKind::RetryStorm
            | FindingKind::IgnoredTimeout
            | FindingKind::RetryWithoutBackoff => Severity::Warning,
            FindingKind::CorrectedRetry => Severity::Hint,
        }
    }

    /// One line: what a robust agent does instead.
    pub fn robust(self) -> &'static str {
        match self {
            FindingKind::ToolLoop => detect::tool_loop::ROBUST,
            FindingKind::RetryStorm => detect::retry_storm::ROBUST,
            FindingKind::UnhandledToolError => detect::unhandled_tool_error::ROBUST,
            FindingKind::FalseSuccess => detect::false_success::ROBUST,
            FindingKind::IgnoredTimeout => detect::ignored_timeout::ROBUST,
            FindingKind::DuplicateSideEffect => detect::duplicate_side_effect::ROBUST,
            FindingKind::RetryWithoutBackoff => detect::retry_without_backoff::ROBUST,
            FindingKind::ErrorSwallowed => detect::error_swallowed::ROBUST,
            FindingKind::CorrectedRetry => detect::corrected_retry::ROBUST,
        }
    }

    /// Why this finding can stand on a run the lab judged correct: what it weighs that the lab's verdict does not.
    pub fn disagreement(self) -> &'static str {
        match self {
            FindingKind::ToolLoop => {
                "the verdict checks the client kept its retry policy; the same call got the same answer each time, \
                 which no retry budget makes useful"
            }
            FindingKind::RetryStorm => {
                "the verdict checks the client stopped at its attempt budget; a budget this large is a storm here \
                 (raise --storm-min-retries above the budget to accept it)"
            }
            FindingKind::RetryWithoutBackoff => {
                "the verdict checks the outcome and the number of attempts, not the wait between them"
            }
            FindingKind::UnhandledToolError
            | FindingKind::FalseSuccess
            | FindingKind::IgnoredTimeout
            | FindingKind::ErrorSwallowed => {
                "the verdict weighs what crossed the wire; this finding reads what the agent told its user"
            }
            FindingKind::DuplicateSideEffect => {
                "the verdict found no repeated side effect; the trace shows the same write sent again after a \
                 failure that may have taken effect, with no check between"
            }
            FindingKind::CorrectedRetry => "a hint about the tool's schema, not about the recovery the verdict judged",
        }
    }

    /// What the trace must record for this detector to run.
    pub fn needs(self) -> &'static [Need] {
        match self {
            // A retry is the same call again: without arguments a repeat cannot be told from another call.
            FindingKind::ToolLoop
            | FindingKind::DuplicateSideEffect
            | FindingKind::CorrectedRetry
            | FindingKind::RetryStorm => &[Need::Arguments],
            FindingKind::UnhandledToolError
            | FindingKind::FalseSuccess
            | FindingKind::IgnoredTimeout
            | FindingKind::ErrorSwallowed => &[Need::AgentText],
            FindingKind::RetryWithoutBackoff => &[Need::Arguments, Need::Timing],
        }
    }

    pub fn detect(self, trace: &Trace, thresholds: &Thresholds) -> Vec<Finding> {
        match self {
            FindingKind::ToolLoop => detect::tool_loop::detect(trace, thresholds),
            FindingKind::RetryStorm => detect::retry_storm::detect(trace, thresholds),
            FindingKind::UnhandledToolError => detect::unhandled_tool_error::detect(trace),
            FindingKind::FalseSuccess => detect::false_success::detect(trace),
            FindingKind::IgnoredTimeout => detect::ignored_timeout::detect(trace),
            FindingKind::DuplicateSideEffect => detect::duplicate_side_effect::detect(trace, thresholds),
            FindingKind::RetryWithoutBackoff => detect::retry_without_backoff::detect(trace, thresholds),
            FindingKind::ErrorSwallowed => detect::error_swallowed::detect(trace),
            FindingKind::CorrectedRetry => detect::corrected_retry::detect(trace),
        }
    }
}

/// One thing that went wrong, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    pub tool: String,
    /// Where it happens: the message (or trajectory line) that makes it a finding.
    pub at: usize,
    /// Every message (or line) that is evidence, ascending.
    pub evidence: Vec<usize>,
    /// Counts and times (ms) behind the finding.
    pub counts: Map<String, Value>,
    /// What happened, in one line.
    pub summary: String,
    /// What a robust agent does instead, in one line.
    pub robust: &'static str,
    /// On a run the lab judged correct: that verdict, and why this finding disagrees with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lab_disagreement: Option<String>,
}

impl Finding {
    pub fn new(kind: FindingKind, tool: &str, at: usize, mut evidence: Vec<usize>, summary: String) -> Self {
        evidence.sort_unstable();
        evidence.dedup();
        Self {
            kind,
            severity: kind.severity(),
            tool: tool.to_owned(),
            at,
            evidence,
            counts: Map::new(),
            summary,
            robust: kind.robust(),
            lab_disagreement: None,
        }
    }

    pub fn count(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.counts.insert(name.to_owned(), value.into());
        self
    }
}
