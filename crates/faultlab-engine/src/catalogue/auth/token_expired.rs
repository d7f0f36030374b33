//! `token_expired`: every access token expires after it has authorized `after` requests, mid-session.
//!
//! ## What it does on the wire
//! The protected resource answers the request after a token's `after`-th with `401` and
//! `WWW-Authenticate: Bearer resource_metadata="…", scope="mcp:read", error="invalid_token",
//! error_description="the access token expired"`, although the token's `expires_in` has not run out. Refresh grants still work and issue a
//! new access token that again lasts `after` requests. In a proxy rules file with `auth.match` (docs/auth.md), the
//! token that presents a matching request expires there instead, and that request gets the `401`.
//!
//! ## What a robust client should do
//! Use its refresh token (one refresh grant), retry the refused request once with the new access token, and go on
//! with the same session; not re-run the whole authorization, not retry with the dead token.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "token_expired", "after": 2}'`
//!
//! ## How it is graded
//! The auth events (`token_refused` with `reason: "expired"`, then `token_issued` with `grant: "refresh_token"`)
//! show one refresh per expiry and no `authorization_started` in between; the refused request is sent again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Access tokens expire after `after` authorized requests each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenExpired {
    /// Requests each access token authorizes before it is expired (1 to 1,000,000).
    #[serde(default = "super::one")]
    pub after: u32,
}
