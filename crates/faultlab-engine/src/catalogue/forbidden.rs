//! `forbidden`: a preset, read as `{"type": "http_status", "status": 403}` (and recorded as `http_status`).
//!
//! **What it does on the wire.** The reply is replaced. HTTP: status 403 and a JSON body. stdio: the body alone,
//! as the reply line. The body is a JSON-RPC error with the request's id:
//! `{"jsonrpc":"2.0","id":<id>,"error":{"code":-32003,"message":"HTTP 403: Forbidden","data":{"httpStatus":403}}}`.
//!
//! **What a robust client should do.** Stop: report the denial, do not retry the same call, and do not reach for a
//! different tool to get around the denial.
//!
//! **Example.** `{"type": "forbidden"}`
//!
//! **How it is graded.** The call fails with a permission error; no retry of it and no forbidden fallback follow.

use super::{FaultKind, HttpStatus};

preset! {
    /// The caller is known but not allowed to do this: `http_status` 403.
    pub struct Forbidden {}
    examples: [r#"{"type": "forbidden"}"#],
    read_as: |_| FaultKind::HttpStatus(HttpStatus::new(403)),
}
