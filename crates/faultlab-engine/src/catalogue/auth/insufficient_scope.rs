//! `insufficient_scope`: after `after` requests the resource asks for one more scope (step-up).
//!
//! ## What it does on the wire
//! Once `after` requests have been authorized, every request whose token lacks `scope` is answered `403` with
//! `WWW-Authenticate: Bearer error="insufficient_scope", scope="<the scopes needed>", resource_metadata="…"`.
//! In a proxy rules file with `auth.match` (docs/auth.md), only the matching requests need `scope`.
//!
//! ## What a robust client should do
//! Authorize again asking for the union of the scopes it had and the ones named (step-up), then retry; bound the
//! step-ups (a resource that keeps asking must not make it loop).
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "insufficient_scope", "after": 1}'`
//!
//! ## How it is graded
//! The auth events: `token_refused` (`reason: "insufficient_scope"`), then `authorization_started` whose `scope`
//! holds both `mcp:read` and `mcp:write`, and the request retried with the new token.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Requests after the `after`-th need `scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InsufficientScope {
    /// Requests authorized before the scope is required (0 to 1,000,000).
    #[serde(default = "super::one")]
    pub after: u32,
    /// The scope then required: one of the scopes the server supports other than `mcp:read`.
    #[serde(default = "default_scope")]
    pub scope: String,
}

fn default_scope() -> String {
    super::WRITE_SCOPE.into()
}
