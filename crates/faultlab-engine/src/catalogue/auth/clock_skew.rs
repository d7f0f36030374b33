//! `clock_skew`: tokens are issued not yet valid (the server's clock runs behind the issuer's).
//!
//! ## What it does on the wire
//! Each access token becomes valid only `seconds` after it is issued; until then the resource answers `401` with
//! `error="invalid_token", error_description="the access token is not yet valid"` and `resource_metadata`.
//!
//! ## What a robust client should do
//! Bound its attempts: a refresh or re-authorization gets another not-yet-valid token, so it must stop after a few
//! tries (or wait) and report, not loop between the token endpoint and the resource.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "clock_skew", "seconds": 300}'`
//!
//! ## How it is graded
//! The auth events: `token_refused` with `reason: "not_yet_valid"`, and a bounded count of `token_issued` after it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Access tokens become valid `seconds` after they are issued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClockSkew {
    /// Seconds between issue and validity (1 to 86,400).
    #[serde(default = "default_seconds")]
    pub seconds: u32,
}

fn default_seconds() -> u32 {
    300
}
