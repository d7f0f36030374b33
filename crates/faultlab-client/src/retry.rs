//! The reference client's retry policy: only explicit tool errors are retried; everything else stops at once.

use crate::connection::Connection;
use crate::outcome::{ErrorKind, Observation, Outcome};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Most attempts the policy allows (1 to 5).
pub const MAX_ATTEMPTS: u32 = 5;

/// Wait between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Backoff {
    /// Retry at once (the default: it makes repeated calls visible in traces; not a production policy).
    None,
    Fixed {
        delay_ms: u64,
    },
    /// `base_ms * 2^(attempt-1)`, capped at `max_ms`, with up to `jitter` (0 to 1) of it taken off at random.
    Exponential {
        base_ms: u64,
        max_ms: u64,
        jitter: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts at most, 1 to 5.
    pub max_attempts: u32,
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: MAX_ATTEMPTS, backoff: Backoff::None }
    }
}

/// Every attempt of one retried call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetryRun {
    pub attempts: Vec<Observation>,
}

impl RetryRun {
    /// The last attempt's observation (a run always has at least one).
    pub fn last(&self) -> &Observation {
        self.attempts.last().expect("a run has at least one attempt")
    }
}

impl RetryPolicy {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_ATTEMPTS).contains(&self.max_attempts) {
            return Err(format!("maxAttempts must be between 1 and {MAX_ATTEMPTS}"));
        }
        if let Backoff::Exponential { jitter, .. } = self.backoff
            && !(0.0..=1.0).contains(&jitter)
        {
            return Err("backoff.jitter must be between 0 and 1".into());
        }
        Ok(())
    }

    /// Whether an attempt with this observation may be followed by another.
    pub fn retries(observation: &Observation) -> bool {
        observation.outcome == Outcome::Error && observation.error_kind == Some(ErrorKind::ToolError)
    }

    fn delay(&self, attempt: u32, rng: &mut ChaCha8Rng) -> Duration {
        match self.backoff {
            Backoff::None => Duration::ZERO,
            Backoff::Fixed { delay_ms } => Duration::from_millis(delay_ms),
            Backoff::Exponential { base_ms, max_ms, jitter } => {
                let full = base_ms.saturating_mul(1u64 << (attempt - 1).min(20)).min(max_ms);
                let cut = (full as f64 * jitter * rng.random::<f64>()) as u64;
                Duration::from_millis(full - cut.min(full))
            }
        }
    }

    /// Calls `tool` until it succeeds, fails in a way that must not be retried, or the attempts run out. `seed`
    /// drives the jitter, so a run is repeatable.
    pub async fn run(
        &self,
        connection: &Connection,
        tool: &str,
        args: &Value,
        deadline: Duration,
        seed: u64,
    ) -> RetryRun {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut attempts = Vec::new();
        for attempt in 1..=self.max_attempts.clamp(1, MAX_ATTEMPTS) {
            if attempt > 1 {
                tokio::time::sleep(self.delay(attempt - 1, &mut rng)).await;
            }
            let observation = connection.call_tool(tool, args.clone(), deadline).await;
            let again = Self::retries(&observation);
            attempts.push(observation);
            if !again {
                break;
            }
        }
        RetryRun { attempts }
    }
}
