//! `access_denied`: the user (the headless approval) denies the first `times` authorization requests.
//!
//! ## What it does on the wire
//! `GET /authorize` redirects to the client's `redirect_uri` with `error=access_denied`, the client's `state` and
//! `iss`, and no code (RFC 6749 §4.1.2.1).
//!
//! ## What a robust client should do
//! Surface the denial and stop (or ask the user again once); not exchange a missing code, not loop on `/authorize`.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "access_denied", "times": 1}'`
//!
//! ## How it is graded
//! The auth events: `authorization_denied`, and a bounded number of `authorization_started` after it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The first `times` authorization requests are denied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessDenied {
    /// Authorization requests denied (1 to 1,000).
    #[serde(default = "super::one")]
    pub times: u32,
}
