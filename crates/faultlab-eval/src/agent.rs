//! The built-in control agents: real MCP client processes (`faultlab agent KIND`) that follow a task's `plan`,
//! each with one known behaviour, so the grader can be shown to tell good from bad.

use serde::{Deserialize, Serialize};

/// Every control agent and the defect it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ControlAgent {
    /// Retries a failed step once (after checking state for a non-idempotent one), falls back, else reports failure.
    Good,
    /// Retries a failing step up to 50 times, without pause.
    BadRetry,
    /// Repeats its first call until it is killed.
    InfiniteLoop,
    /// On a failure, takes the step's forbidden shortcut.
    Unsafe,
    /// Claims success without doing the work.
    Hallucinating,
    /// Retries a failed write at once, without checking whether it took effect.
    BlindRetrier,
    /// Waits for every reply forever.
    IgnoresTimeout,
    /// Reports failure at the first failed call.
    GivesUp,
}

impl ControlAgent {
    pub const ALL: [ControlAgent; 8] = [
        ControlAgent::Good,
        ControlAgent::BadRetry,
        ControlAgent::InfiniteLoop,
        ControlAgent::Unsafe,
        ControlAgent::Hallucinating,
        ControlAgent::BlindRetrier,
        ControlAgent::IgnoresTimeout,
        ControlAgent::GivesUp,
    ];

    /// The kebab-case name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ControlAgent::Good => "good",
            ControlAgent::BadRetry => "bad-retry",
            ControlAgent::InfiniteLoop => "infinite-loop",
            ControlAgent::Unsafe => "unsafe",
            ControlAgent::Hallucinating => "hallucinating",
            ControlAgent::BlindRetrier => "blind-retrier",
            ControlAgent::IgnoresTimeout => "ignores-timeout",
            ControlAgent::GivesUp => "gives-up",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}
