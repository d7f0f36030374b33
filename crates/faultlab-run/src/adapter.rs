//! The target-client adapter contract: how orchestration drives a client it did not write.
//!
//! `setup` (within a time budget) yields a session; the session can `execute` and `observe` calls, `cancel`
//! what is in flight, and `cleanup`. Every operation takes a positive timeout and yields a [`Recording`] with
//! exactly one outcome. Orchestration owns ids, budgets, expectations and reporting, and requests cleanup after
//! every successful setup on every exit path; cleanup is idempotent, also when called concurrently.

use crate::expect::StepObservation;
use crate::scenario::PlannedStep;
use faultlab_client::Outcome;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Setup,
    Execute,
    Observe,
    Cancel,
    Cleanup,
}

/// A positive time budget for one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget(Duration);

impl Budget {
    /// A budget of `ms` milliseconds; zero is refused (every operation must be bounded and able to run).
    pub fn from_millis(ms: u64) -> Result<Self, String> {
        if ms == 0 {
            Err("a timeout must be a positive number of milliseconds".into())
        } else {
            Ok(Self(Duration::from_millis(ms)))
        }
    }

    pub fn duration(self) -> Duration {
        self.0
    }
}

/// Why an operation did not succeed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpFailure {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// What one operation did: the part every report shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpRecord {
    pub operation: Operation,
    pub operation_id: String,
    /// Milliseconds on the adapter's monotonic clock.
    pub started_at_ms: f64,
    pub ended_at_ms: f64,
    pub duration_ms: f64,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<OpFailure>,
}

/// An operation's record and, on success, its typed value.
#[derive(Debug)]
pub struct Recording<T> {
    pub record: OpRecord,
    pub value: Option<T>,
}

pub trait Adapter: Sync {
    type Session: Session;

    /// Connects the client under test; the recording's value is the session on success.
    fn setup(&self, operation_id: String, budget: Budget) -> impl Future<Output = Recording<Self::Session>> + Send;
}

pub trait Session: Send + Sync {
    /// Makes the step's call (the primary path).
    fn execute(
        &self,
        operation_id: String,
        step: &PlannedStep,
        budget: Budget,
    ) -> impl Future<Output = Recording<StepObservation>> + Send;

    /// Makes a post-condition call (the observer path).
    fn observe(
        &self,
        operation_id: String,
        step: &PlannedStep,
        budget: Budget,
    ) -> impl Future<Output = Recording<StepObservation>> + Send;

    /// Aborts whatever is in flight.
    fn cancel(&self, operation_id: String, budget: Budget) -> impl Future<Output = Recording<()>> + Send;

    /// Releases everything setup created. Idempotent: repeated or concurrent calls act once.
    fn cleanup(&self, operation_id: String, budget: Budget) -> impl Future<Output = Recording<()>> + Send;
}

/// A clock for recordings: milliseconds since `origin` on the tokio clock.
pub fn since(origin: tokio::time::Instant) -> f64 {
    origin.elapsed().as_secs_f64() * 1000.0
}
