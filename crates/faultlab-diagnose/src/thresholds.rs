//! The numbers the heuristics use. Defaults are chosen so a reasonable agent passes clean; each detector's doc says
//! which way to move a threshold for its false positives.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    /// `tool_loop`: calls of one tool with the same arguments and the same outcome, in a row, that make a loop.
    pub loop_min_calls: usize,
    /// `retry_storm`: retries in a row, each after a failure of the same call, that make a storm when they do harm
    /// (see `detect::harms`); also the bound of failed retries past which retrying has no end. A budget of two
    /// retries (three attempts) stays under it.
    pub storm_min_retries: usize,
    /// `retry_without_backoff`: a retry that starts sooner than this after the failure it follows, in ms, is
    /// immediate. 100 ms is below the first step of any common backoff schedule, and above the time an automated
    /// retry loop takes to go round.
    pub min_backoff_ms: f64,
    /// `retry_without_backoff`: immediate retries in a row that make a finding (a single quick retry is fine).
    pub quick_retries: usize,
    /// `duplicate_side_effect`: tools to treat as writes besides those whose names contain a write verb.
    pub write_tools: Vec<String>,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            loop_min_calls: 3,
            storm_min_retries: 3,
            min_backoff_ms: faultlab_engine::trajectory::backoff::MIN_WAIT_MS,
            quick_retries: 2,
            write_tools: Vec::new(),
        }
    }
}

impl Thresholds {
    /// Checks the values make sense; the error is `(threshold name, what is wrong)`.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.loop_min_calls < 2 {
            return Err(("loop_min_calls", format!("must be 2 or more (got {})", self.loop_min_calls)));
        }
        if self.storm_min_retries < 1 {
            return Err(("storm_min_retries", "must be 1 or more (got 0)".into()));
        }
        if !(self.min_backoff_ms.is_finite() && self.min_backoff_ms >= 0.0) {
            return Err(("min_backoff_ms", format!("must be a number of ms, 0 or more (got {})", self.min_backoff_ms)));
        }
        if self.quick_retries < 1 {
            return Err(("quick_retries", "must be 1 or more (got 0)".into()));
        }
        Ok(())
    }
}
