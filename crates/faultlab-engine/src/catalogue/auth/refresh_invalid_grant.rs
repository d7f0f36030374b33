//! `refresh_invalid_grant`: refresh grants are answered `invalid_grant`; the client must re-authorize.
//!
//! ## What it does on the wire
//! Every access token expires after one request (as `token_expired` with `after: 1`), and the first `times`
//! refresh grants are answered `400 {"error": "invalid_grant"}`; the refresh token presented is forgotten.
//!
//! ## What a robust client should do
//! Drop its tokens and run the authorization-code flow again (PKCE, a new code), then retry the request; not send
//! the same refresh token again, not loop between the resource and the token endpoint.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "refresh_invalid_grant", "times": 1}'`
//!
//! ## How it is graded
//! The auth events: one `refresh_refused` (`error: "invalid_grant"`) followed by `authorization_started`, and no
//! second refresh with the refused token (`refresh_refused` with `reason: "unknown"`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The first `times` refresh grants get `invalid_grant`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshInvalidGrant {
    /// Refresh grants refused (1 to 1,000).
    #[serde(default = "super::one")]
    pub times: u32,
}
