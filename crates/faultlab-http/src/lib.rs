//! Streamable HTTP pieces shared by the faulty server and the proxy (no MCP SDK here).
//!
//! - [`guard`]: where a listener may bind (loopback only, no wildcard spelling), canonical endpoint paths, and
//!   the `Host` / `Origin` checks that protect a local server from DNS rebinding.
//! - [`body`]: response bodies on their way out, where armed faults meet HTTP (JSON bodies and SSE events).
//! - [`server`]: the accept loop every front shares: header and body timeouts, the connection cap, bounded
//!   shutdown.
//! - [`cost`]: what parsing a request body may cost (an element limit checked before parsing).
//! - [`resume`]: resumable SSE response streams (event ids, priming, `Last-Event-ID` replay, bounded logs) and
//!   the stream faults' [`resume::Plan`].

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod body;
pub mod cost;
pub mod guard;
pub mod resume;
pub mod server;
mod slots;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};

/// What a front puts in front of its own router, once, when it starts (`--auth`: the authorization server and
/// the bearer check, `faultlab_auth::Auth::wrap`). The wrapping router must keep the accept loop's guarantees: it
/// checks `Host`/`Origin` itself on what it answers and hands everything else to the front.
#[derive(Clone)]
pub struct Wrap(pub std::sync::Arc<dyn Fn(axum::Router) -> axum::Router + Send + Sync>);

impl Wrap {
    pub fn apply(&self, app: axum::Router) -> axum::Router {
        (self.0)(app)
    }
}

impl std::fmt::Debug for Wrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Wrap(..)")
    }
}

/// A JSON-RPC error as an HTTP response (the id is `null` when the request's id could not be read).
pub fn rpc_error(status: StatusCode, code: i64, message: &str, id: Option<Value>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": {"code": code, "message": message}});
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The checks every MCP endpoint makes before dispatch: the path (404), then `Host` and `Origin` against the
/// loopback names and the bound address (403, against DNS rebinding; 400 when either is given twice, since two
/// values leave it open which one a check saw), and an absolute-form target's authority like `Host` (403).
/// `None` when the request may proceed.
pub fn check_request(request: &axum::extract::Request, path: &str, allowed: &guard::AllowedHosts) -> Option<Response> {
    if request.uri().path() != path {
        return Some((StatusCode::NOT_FOUND, "Not found").into_response());
    }
    check_origin(request, allowed)
}

/// The `Host`, `Origin` and absolute-form authority checks of [`check_request`], without the path.
pub fn check_origin(request: &axum::extract::Request, allowed: &guard::AllowedHosts) -> Option<Response> {
    let headers = request.headers();
    for name in [header::HOST, header::ORIGIN] {
        if headers.get_all(&name).iter().nth(1).is_some() {
            let message = format!("Bad Request: more than one {name} header");
            return Some(rpc_error(StatusCode::BAD_REQUEST, -32600, &message, None));
        }
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if !host.is_some_and(|h| allowed.host_ok(h)) {
        let message = "Forbidden: Host header is not an allowed loopback host";
        return Some(rpc_error(StatusCode::FORBIDDEN, -32600, message, None));
    }
    // An absolute-form target (`POST http://host/mcp`) names the host that is meant; it must pass like `Host`.
    if let Some(authority) = request.uri().authority()
        && !allowed.host_ok(authority.as_str())
    {
        let message = "Forbidden: the request target names a host that is not an allowed loopback host";
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

/// Reads a request body of at most `max` bytes. A declared `Content-Length` over `max` is refused at once (413)
/// without reading anything; a body that grows past it is refused too (413); one that stalls (see
/// [`server::Limits::body_idle_timeout`]) or passes its deadline ([`server::Limits::body_deadline`]) gets 408.
pub async fn read_body(headers: &http::HeaderMap, body: axum::body::Body, max: usize) -> Result<Bytes, Response> {
    let too_large = || {
        let message = format!("Request body exceeds {max} bytes");
        rpc_error(StatusCode::PAYLOAD_TOO_LARGE, -32600, &message, None)
    };
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(with_close(too_large()));
    }
    match http_body_util::Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(with_close(too_large())),
        Err(e) if caused_by::<server::BodyStalled>(&*e) || caused_by::<server::BodyDeadline>(&*e) => {
            let message = e.to_string();
            Err(with_close(rpc_error(StatusCode::REQUEST_TIMEOUT, -32600, &message, None)))
        }
        Err(e) => Err(rpc_error(StatusCode::BAD_REQUEST, -32600, &format!("request body unreadable: {e}"), None)),
    }
}

/// The body of a refused request may still be on its way: the connection is not kept for another request.
fn with_close(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn caused_by<E: std::error::Error + 'static>(mut error: &(dyn std::error::Error + 'static)) -> bool {
    loop {
        if error.is::<E>() {
            return true;
        }
        match error.source() {
            Some(source) => error = source,
            None => return false,
        }
    }
}
