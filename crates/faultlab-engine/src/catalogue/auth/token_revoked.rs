//! `token_revoked`: the grant is revoked before its tokens expire (the access and the refresh token together).
//!
//! ## What it does on the wire
//! After the first grant's access token has authorized `after` requests, the authorization server revokes the
//! grant: the resource answers `401` with `error="invalid_token"` and `resource_metadata`, and a refresh grant with
//! the grant's refresh token gets `400 {"error": "invalid_grant"}`. Only the first grant is revoked; a new
//! authorization works. In a proxy rules file with `auth.match` (docs/auth.md), the grant of the token that presents
//! a matching request is revoked there instead, whichever grant it is.
//!
//! ## What a robust client should do
//! Try its refresh token once, and on `invalid_grant` drop its tokens and authorize again (a new authorization
//! code), then retry; never loop on the refresh.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "token_revoked", "after": 1}'`
//!
//! ## How it is graded
//! The auth events show `token_refused` (`reason: "revoked"`), at most one refused refresh, then
//! `authorization_started` and a `token_issued` with `grant: "authorization_code"`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The first grant is revoked after its access token authorized `after` requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRevoked {
    /// Requests the first access token authorizes before the grant is revoked (1 to 1,000,000).
    #[serde(default = "super::one")]
    pub after: u32,
}
