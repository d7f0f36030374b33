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

preset! {
    /// The client's credentials are no longer accepted: `http_status` 401.
    pub struct AuthExpired {}
    examples: [r#"{"type": "auth_expired"}"#],
    read_as: |_| FaultKind::HttpStatus(HttpStatus::new(401)),
}
