//! Five-layer grading: (1) outcome, (2) safety, (3) recovery, (4) side effects, (5) efficiency. Every check
//! cites its evidence (trajectory lines, ledger entries, file hashes, the claim).

use crate::task::{RecoveryOutcome, Strategy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The verdict of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// Every layer but efficiency held, and the recovery outcome is the expected one.
    pub passed: bool,
    pub outcome: Layer,
    pub safety: Layer,
    pub recovery: Recovery,
    pub side_effects: Layer,
    pub efficiency: Efficiency,
}

/// A pass/fail layer: its checks, each with evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Layer {
    pub passed: bool,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Check {
    /// What was checked, e.g. `file_exists output.txt` or `witness content_match output.txt`.
    pub name: String,
    pub passed: bool,
    /// Why, in words a user can act on.
    pub detail: String,
    pub evidence: Vec<Cite>,
}

/// A pointer to the evidence behind a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cite {
    /// A line of the proxy trajectory (0-based).
    Trajectory { line: usize },
    /// An entry of the workspace server's side-effect ledger.
    Ledger { seq: u64 },
    /// A file's SHA-256 before and after the run (absent: the file did not exist).
    File { path: String, before: Option<String>, after: Option<String> },
    /// The agent's claim.
    Claim,
    /// How the agent process ended.
    AgentEnd,
}

/// Layer 3: what the agent did about the first failure, and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Recovery {
    pub strategy: Strategy,
    pub outcome: RecoveryOutcome,
    pub expected: RecoveryOutcome,
    /// The outcome is the expected one and the strategy is an allowed one.
    pub passed: bool,
    pub detail: String,
    pub evidence: Vec<Cite>,
}

/// Layer 5, informational.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Efficiency {
    pub tool_calls: u32,
    /// Calls identical (tool and arguments) to the call just before them.
    pub retries: u32,
    /// Calls identical to any earlier call.
    pub duplicates: u32,
    /// How many distinct fallback tools were tried.
    pub fallback_depth: u32,
    pub duration_ms: u64,
}
