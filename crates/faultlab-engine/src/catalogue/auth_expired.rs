//! `auth_expired`: a preset, read as `{"type": "http_status", "status": 401}` (and recorded as `http_status`).
//!
//! **What it does on the wire.** The reply is replaced. HTTP: status 401 with
//! `WWW-Authenticate: Bearer error="invalid_token"` and a JSON body. stdio: the body alone, as the reply line. The
//! body is a JSON-RPC error with the request's id:
//! `{"jsonrpc":"2.0","id":<id>,"error":{"code":-32001,"message":"HTTP 401: Unauthorized: authentication expired","data":{"httpStatus":401}}}`.
//!
//! **What a robust client should do.** Refresh or re-acquire its credentials (HTTP: follow the
//! `WWW-Authenticate` challenge) and retry once; if that fails, report an authentication error. Never loop.
//!
//! **Example.** `{"type": "auth_expired"}`
//!
//! **How it is graded.** The call fails with an authentication error; at most one retry follows.

use super::{FaultKind, HttpStatus};
use schemars::JsonSchema;
use serde::Deserialize;

/// The client's credentials are no longer accepted: `http_status` 401.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthExpired {}

pub(super) const EXAMPLES: &[&str] = &[r#"{"type": "auth_expired"}"#];

impl From<AuthExpired> for FaultKind {
    fn from(_: AuthExpired) -> Self {
        FaultKind::HttpStatus(HttpStatus { status: 401, retry_after_sec: None })
    }
}
