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
//! The `Host` header is checked like the proxy's own front, so a web page cannot reach it by DNS rebinding.

use crate::rules::{ControlError, Rule, SharedRules};
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use faultlab_http::guard::AllowedHosts;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct Control {
    rules: SharedRules,
    allowed: Arc<AllowedHosts>,
}

/// Serves the control API until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    rules: SharedRules,
    allowed: AllowedHosts,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let state = Control { rules, allowed: Arc::new(allowed) };
    let app = axum::Router::new()
        .route("/rules", get(list).post(add))
        .route("/rules/{name}", delete(remove))
        .route("/reset", post(reset))
        .layer(middleware::from_fn_with_state(state.clone(), check_host))
        .with_state(state);
    axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await
}

async fn check_host(State(control): State<Control>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    if !host.is_some_and(|h| control.allowed.host_ok(h)) {
        return json_response(StatusCode::FORBIDDEN, json!({"error": "Host header is not an allowed loopback host"}));
    }
    next.run(request).await
}

fn json_response(status: StatusCode, body: Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn list(State(control): State<Control>) -> Response {
    let snapshot = control.rules.lock().unwrap_or_else(|e| e.into_inner()).snapshot();
    json_response(StatusCode::OK, serde_json::to_value(snapshot).unwrap_or_default())
}

async fn add(State(control): State<Control>, body: Bytes) -> Response {
    let rule: Rule = match serde_json::from_slice(&body) {
        Ok(rule) => rule,
        Err(e) => return json_response(StatusCode::BAD_REQUEST, json!({"error": format!("invalid rule: {e}")})),
    };
    let shown = serde_json::to_value(&rule).unwrap_or_default();
    match control.rules.lock().unwrap_or_else(|e| e.into_inner()).add(rule) {
        Ok(()) => json_response(StatusCode::CREATED, shown),
        Err(e @ ControlError::Exists(_)) => json_response(StatusCode::CONFLICT, json!({"error": e.to_string()})),
        Err(e @ ControlError::Invalid(_)) => json_response(StatusCode::BAD_REQUEST, json!({"error": e.to_string()})),
    }
}

async fn remove(State(control): State<Control>, Path(name): Path<String>) -> Response {
    if control.rules.lock().unwrap_or_else(|e| e.into_inner()).remove(&name) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        json_response(StatusCode::NOT_FOUND, json!({"error": format!("no rule named {name:?}")}))
    }
}

async fn reset(State(control): State<Control>) -> Response {
    control.rules.lock().unwrap_or_else(|e| e.into_inner()).reset();
    StatusCode::NO_CONTENT.into_response()
}
