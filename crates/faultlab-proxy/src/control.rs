//! The live control API (opt-in, loopback only): list, add, remove and reset rules while traffic flows, in the
//! manner of toxiproxy. JSON over HTTP:
//!
//! | request | effect |
//! |---|---|
//! | `GET /rules` | `{"seed": N, "rules": [...]}`, the rules as they stand |
//! | `POST /rules` with a rule as JSON | adds it: 201; 400 naming what is wrong; 409 if the name is taken |
//! | `DELETE /rules/{name}` | removes it: 204; 404 if there is none |
//! | `POST /reset` | removes every rule and restarts the seeded generator: 204 |
//!
//! Before any of that, every request passes, in order: one `Host` naming a loopback host (403; DNS rebinding), at
//! most one `Origin` and, if given, exactly the API's own origin (`http://HOST:PORT` of its bound port; 403:
//! another page, even one on another loopback port, cannot drive it), the bearer token when one is set (401), and
//! on writes (`POST`) `Content-Type: application/json` (415: a page can send a cross-origin `text/plain` POST
//! without asking, never a JSON one). Bodies are at most 1 MiB.

use crate::rules::{ControlError, Rule, SharedRules};
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use faultlab_http::guard::AllowedHosts;
use faultlab_http::server::Limits;
use faultlab_wire::sync::lock;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Largest control request body, in bytes (a rule is a few hundred).
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Who may use the API besides being on loopback.
#[derive(Debug, Clone, Default)]
pub struct ControlOptions {
    /// When set, every request must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
    pub limits: Limits,
}

#[derive(Clone)]
struct Control {
    rules: SharedRules,
    allowed: Arc<AllowedHosts>,
    port: u16,
    token: Option<Arc<str>>,
}

/// Serves the control API until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    rules: SharedRules,
    allowed: AllowedHosts,
    options: ControlOptions,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let state = Control { rules, allowed: Arc::new(allowed), port, token: options.token.map(Arc::from) };
    let app = axum::Router::new()
        .route("/rules", get(list).post(add))
        .route("/rules/{name}", delete(remove))
        .route("/reset", post(reset))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), check))
        .with_state(state);
    faultlab_http::server::serve(listener, app, options.limits, shutdown).await
}

fn refuse(status: StatusCode, message: &str) -> Response {
    json_response(status, json!({"error": message}))
}

async fn check(State(control): State<Control>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    for name in [header::HOST, header::ORIGIN, header::AUTHORIZATION, header::CONTENT_TYPE] {
        if headers.get_all(&name).iter().nth(1).is_some() {
            return refuse(StatusCode::BAD_REQUEST, &format!("more than one {name} header"));
        }
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let target_ok = request.uri().authority().is_none_or(|a| control.allowed.host_ok(a.as_str()));
    if !host.is_some_and(|h| control.allowed.host_ok(h)) || !target_ok {
        return refuse(StatusCode::FORBIDDEN, "Host header is not an allowed loopback host");
    }
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin.to_str().is_ok_and(|o| own_origin(o, &control))
    {
        return refuse(StatusCode::FORBIDDEN, "Origin is not the control API's own; it cannot be used from a web page");
    }
    if let Some(token) = &control.token {
        let given =
            headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same_secret(g.trim().as_bytes(), token.as_bytes())) {
            let mut response =
                refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token (see --control-token-file)");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        // Refused before the body is read; the connection is not kept for another request.
        let mut response = refuse(StatusCode::PAYLOAD_TOO_LARGE, &format!("bodies are at most {MAX_BODY_BYTES} bytes"));
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    if request.method() == Method::POST {
        let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, "writes must be sent as Content-Type: application/json");
        }
    }
    next.run(request).await
}

/// `http://HOST:PORT` where HOST is an allowed loopback name and PORT the API's own.
fn own_origin(origin: &str, control: &Control) -> bool {
    let Some(authority) = origin.strip_prefix("http://") else { return false };
    let Some((host, port)) = authority.rsplit_once(':') else { return false };
    port.parse::<u16>().is_ok_and(|p| p == control.port) && control.allowed.host_ok(host)
}

/// Compares in time independent of where the first difference is, so the token cannot be guessed byte by byte.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

fn json_response(status: StatusCode, body: Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn list(State(control): State<Control>) -> Response {
    let snapshot = lock(&control.rules).snapshot();
    json_response(StatusCode::OK, serde_json::to_value(snapshot).unwrap_or_default())
}

async fn add(State(control): State<Control>, body: Bytes) -> Response {
    let rule: Rule = match serde_json::from_slice(&body) {
        Ok(rule) => rule,
        Err(e) => return json_response(StatusCode::BAD_REQUEST, json!({"error": format!("invalid rule: {e}")})),
    };
    let shown = serde_json::to_value(&rule).unwrap_or_default();
    match lock(&control.rules).add(rule) {
        Ok(()) => json_response(StatusCode::CREATED, shown),
        Err(e @ ControlError::Exists(_)) => json_response(StatusCode::CONFLICT, json!({"error": e.to_string()})),
        Err(e @ ControlError::Invalid(_)) => json_response(StatusCode::BAD_REQUEST, json!({"error": e.to_string()})),
    }
}

async fn remove(State(control): State<Control>, Path(name): Path<String>) -> Response {
    if lock(&control.rules).remove(&name) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        json_response(StatusCode::NOT_FOUND, json!({"error": format!("no rule named {name:?}")}))
    }
}

async fn reset(State(control): State<Control>) -> Response {
    lock(&control.rules).reset();
    StatusCode::NO_CONTENT.into_response()
}
