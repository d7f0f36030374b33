//! Streamable HTTP pieces shared by the faulty server and the proxy (no MCP SDK here).
//!
//! - [`guard`]: where a listener may bind (loopback only, no wildcard spelling), canonical endpoint paths, and
//!   the `Host` / `Origin` checks that protect a local server from DNS rebinding.
//! - [`body`]: response bodies on their way out, where armed faults meet HTTP (JSON bodies and SSE events).

pub mod body;
pub mod guard;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// A JSON-RPC error as an HTTP response (the id is `null` when the request's id could not be read).
pub fn rpc_error(status: StatusCode, code: i64, message: &str, id: Option<Value>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": {"code": code, "message": message}});
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The checks every MCP endpoint makes before dispatch: the path (404), then `Host` and `Origin` against the
/// loopback names and the bound address (403, against DNS rebinding). `None` when the request may proceed.
pub fn check_request(request: &axum::extract::Request, path: &str, allowed: &guard::AllowedHosts) -> Option<Response> {
    if request.uri().path() != path {
        return Some((StatusCode::NOT_FOUND, "Not found").into_response());
    }
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if !host.is_some_and(|h| allowed.host_ok(h)) {
        let message = "Forbidden: Host header is not an allowed loopback host";
        return Some(rpc_error(StatusCode::FORBIDDEN, -32600, message, None));
    }
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin.to_str().is_ok_and(|o| allowed.origin_ok(o))
    {
        let message = "Forbidden: Origin is not an allowed loopback origin";
        return Some(rpc_error(StatusCode::FORBIDDEN, -32600, message, None));
    }
    None
}
