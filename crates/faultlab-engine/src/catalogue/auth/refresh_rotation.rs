//! `refresh_rotation`: each refresh grant rotates the refresh token; the old one is dead.
//!
//! ## What it does on the wire
//! Every access token expires after one request. Each refresh grant answers a new `refresh_token` and invalidates
//! the one presented: presenting it again gets `400 {"error": "invalid_grant"}` (OAuth 2.1 §4.3.1 rotation for
//! public clients).
//!
//! ## What a robust client should do
//! Store the new refresh token from every token response and use it next time.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "refresh_rotation"}'`
//!
//! ## How it is graded
//! The auth events: no `refresh_refused` with `reason: "rotated"` (a reused, rotated-out token); each refresh
//! presents the token the previous one issued.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Refresh tokens are single-use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshRotation {}
