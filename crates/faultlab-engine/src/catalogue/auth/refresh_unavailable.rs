//! `refresh_unavailable`: the token endpoint answers refresh grants with 429 or a 5xx; the tokens stay valid.
//!
//! ## What it does on the wire
//! Every access token expires after one request, and the first `times` refresh grants are answered with `status`
//! (429, 500, 502, 503 or 504), `{"error": "temporarily_unavailable"}` and, when set, `Retry-After: retry_after`.
//! The refresh token presented stays valid: the next refresh grant with it succeeds.
//!
//! ## What a robust client should do
//! Keep its refresh token (a transient failure is not `invalid_grant`), wait (honouring `Retry-After`) and refresh
//! again; not wipe its tokens and start a new authorization, not retry without pause.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "refresh_unavailable", "status": 503, "times": 1}'`
//!
//! ## How it is graded
//! The auth events: `refresh_refused` with the status, then a `token_issued` with `grant: "refresh_token"` using the
//! same refresh token, and no `authorization_started` in between.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The first `times` refresh grants are answered with `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshUnavailable {
    /// 429, 500, 502, 503 or 504.
    #[serde(default = "default_status")]
    pub status: u16,
    /// Refresh grants answered with `status` (1 to 1,000).
    #[serde(default = "super::one")]
    pub times: u32,
    /// `Retry-After` in seconds, when set (0 to 3,600).
    #[serde(default)]
    pub retry_after: Option<u32>,
}

fn default_status() -> u16 {
    503
}
