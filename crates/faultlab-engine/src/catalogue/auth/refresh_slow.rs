//! `refresh_slow`: the token endpoint answers refresh grants only after `delay_ms`.
//!
//! ## What it does on the wire
//! Every access token expires after one request, and the first `times` refresh grants are held for `delay_ms`
//! (a real sleep on the answering task) before a normal answer.
//!
//! ## What a robust client should do
//! Bound its wait with a deadline; if it gives up, keep its refresh token (it is still valid) and try again, not
//! wipe its tokens or start a second refresh with the same token in parallel.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "refresh_slow", "delay_ms": 3000}'`
//!
//! ## How it is graded
//! The auth events: `refresh_delayed` with the delay, then `token_issued` (`grant: "refresh_token"`); a client that
//! gave up shows a later refresh with the same token, not `authorization_started`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The first `times` refresh grants are answered after `delay_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshSlow {
    /// Milliseconds to hold each answer (1 to 600,000).
    #[serde(default = "default_delay")]
    pub delay_ms: u64,
    /// Refresh grants delayed (1 to 1,000).
    #[serde(default = "super::one")]
    pub times: u32,
}

fn default_delay() -> u64 {
    5_000
}
