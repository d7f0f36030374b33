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
}

impl Need {
    pub fn describe(self) -> &'static str {
        match self {
            Need::Arguments => "the trace records no call arguments",
            Need::AgentText => "the trace records no agent messages",
            Need::Timing => "the trace has no timestamps; add `ts_ms` or an RFC 3339 `timestamp` to its messages",
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

    /// What the trace must record for this detector to run.
    pub fn needs(self) -> &'static [Need] {
        match self {
            FindingKind::ToolLoop | FindingKind::DuplicateSideEffect | FindingKind::CorrectedRetry => {
                &[Need::Arguments]
            }
            FindingKind::RetryStorm => &[],
            FindingKind::UnhandledToolError
            | FindingKind::FalseSuccess
            | FindingKind::IgnoredTimeout
            | FindingKind::ErrorSwallowed => &[Need::AgentText],
            FindingKind::RetryWithoutBackoff => &[Need::Timing],
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
        }
    }

    pub fn count(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.counts.insert(name.to_owned(), value.into());
        self
    }
}
