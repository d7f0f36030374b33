//! `--auth`: an OAuth 2.1 authorization server and a protected resource in front of an MCP endpoint, on the
//! listener the endpoint already has (loopback only, `Host`/`Origin` checked like every request), with the auth
//! faults clients most often get wrong.
//!
//! - [`Auth::wrap`] puts the authorization in front of a front's router: the metadata documents and the
//!   authorization server's endpoints are answered here; a request to the MCP endpoint passes only with a valid
//!   bearer token for this resource (its `Authorization` header is then removed: the token is never passed on,
//!   and never reaches a trajectory or a log).
//! - [`resource`]: the protected resource (RFC 9728 metadata, the `401`/`403` challenges).
//! - [`server`]: the authorization server (RFC 8414 metadata, RFC 7591 registration, the authorization-code grant
//!   with PKCE S256 and a headless approval, refresh, RFC 7009 revocation).
//! - [`store`]: clients, codes and tokens, held as digests, bounded.
//! - [`secret`]: random secrets from the OS, digests, constant-time comparison, PKCE.
//! - [`faults`]: the auth faults (their types, one file each, live in `faultlab_engine::catalogue::auth`, so that a
//!   rules file can hold one).
//!
//! Auth events (no secret in any of them) go to the [`AuthConfig::events`] sink as JSON objects; each request to
//! the MCP endpoint refused with a challenge goes to the [`AuthConfig::refusals`] hook with its body (the HTTP
//! proxy records it in its trajectory as a failed call; this crate knows nothing of the proxy).

// A refusal here is the HTTP response itself, made once per refused request; boxing it would buy nothing.
#![allow(clippy::result_large_err)]

/// The auth faults: their types and docs, from the engine's catalogue.
pub mod faults {
    pub use faultlab_engine::catalogue::auth::*;
}
pub mod resource;
pub mod secret;
pub mod server;
pub mod store;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use faultlab_engine::rules::{AuthMatch, Matcher};
use faultlab_http::guard::AllowedHosts;
use faultlab_wire::Frame;
use faultlab_wire::sync::lock;
pub use faults::AuthFault;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt as _;

pub use faults::{READ_SCOPE, SCOPES, WRITE_SCOPE};
/// Default lifetime of an access token (1 hour; `--auth-token-ttl`).
pub const TOKEN_TTL: Duration = Duration::from_secs(3600);
/// Most of a refused request's body read before its challenge (4 MiB, the endpoint's own limit).
const MAX_REFUSED_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Auth events kept in memory for [`Auth::events`] (the oldest are dropped beyond).
const EVENTS_KEPT: usize = 1024;

/// Where the auth events go (e.g. a JSON line on stderr).
pub type EventSink = Arc<dyn Fn(&Value) + Send + Sync>;

/// One request to the MCP endpoint the authorization refused, as the [`RefusalHook`] gets it. Its `Authorization`
/// header is not in it: nothing here is a secret the authorization server issued.
#[derive(Debug, Clone, Copy)]
pub struct Refused<'a> {
    /// 401, 403 or 400.
    pub status: u16,
    /// The challenge's `error` code (`invalid_token`, `insufficient_scope`, `invalid_request`); `None` when the
    /// request carried no credentials (RFC 6750 §3).
    pub error: Option<&'static str>,
    /// The auth fault that refused this very request (`token_expired`, `token_revoked`, `insufficient_scope`, by
    /// its count or a rules file's `auth.match`); `None` for a refusal the token itself earned.
    pub fault: Option<&'static str>,
    /// The request's HTTP method (`POST`, `GET`, `DELETE`).
    pub method: &'a str,
    /// The body as read (at most the endpoint's 4 MiB, and no more JSON elements than the endpoint parses, 200,000),
    /// or why it was not read.
    pub body: Result<&'a [u8], &'a str>,
}

/// Called for every request to the MCP endpoint refused with a challenge, before the challenge is sent.
pub type RefusalHook = Arc<dyn Fn(Refused<'_>) + Send + Sync>;

/// How `--auth` is set up.
#[derive(Clone)]
pub struct AuthConfig {
    /// Lifetime of an access token.
    pub token_ttl: Duration,
    /// The auth fault in force, if any.
    pub fault: Option<AuthFault>,
    /// The requests to the MCP endpoint the fault acts at (a rules file's `auth.match`; only `token_expired`,
    /// `token_revoked` and `insufficient_scope`, checked when the file was read), instead of its own `after`.
    pub matcher: Option<AuthMatch>,
    pub events: Option<EventSink>,
    /// Told of every refused request to the MCP endpoint (the HTTP proxy's trajectory).
    pub refusals: Option<RefusalHook>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self { token_ttl: TOKEN_TTL, fault: None, matcher: None, events: None, refusals: None }
    }
}

/// Why `--auth` could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(
        "--path {0:?}: with --auth the MCP endpoint may not be under /oauth/ or /.well-known/ (the authorization server's paths)"
    )]
    PathTaken(String),
    #[error("auth.match: {0} acts {1}, not at a request to the MCP endpoint, so it cannot be matched to one")]
    Unmatchable(&'static str, &'static str),
}

/// The authorization server and protected resource of one listener.
pub struct Auth {
    config: AuthConfig,
    /// `http://127.0.0.1:PORT`: the issuer, and the origin of every URL the metadata names.
    origin: String,
    /// The MCP endpoint's path, e.g. `/mcp`.
    path: String,
    allowed: AllowedHosts,
    /// `config.matcher`, compiled.
    matcher: Option<Matcher>,
    store: Mutex<store::Store>,
    events: Mutex<std::collections::VecDeque<Value>>,
}

impl Auth {
    /// `origin` is the listener's (`http://127.0.0.1:PORT`), `path` the MCP endpoint's.
    pub fn new(config: AuthConfig, origin: &str, path: &str, allowed: AllowedHosts) -> Result<Arc<Self>, SetupError> {
        if path.starts_with("/oauth/") || path.starts_with("/.well-known/") || path == "/oauth" {
            return Err(SetupError::PathTaken(path.into()));
        }
        if config.matcher.is_some()
            && let Some(fault) = &config.fault
            && let Some(elsewhere) = fault.acts_elsewhere()
        {
            return Err(SetupError::Unmatchable(fault.name(), elsewhere));
        }
        let matcher = config.matcher.clone().map(|m| Matcher::new(m.into()));
        Ok(Arc::new(Self {
            matcher,
            config,
            origin: origin.trim_end_matches('/').into(),
            path: path.into(),
            allowed,
            store: Mutex::new(store::Store::default()),
            events: Mutex::new(Default::default()),
        }))
    }

    /// The resource identifier (RFC 8707): the MCP endpoint's URL.
    pub fn resource(&self) -> String {
        format!("{}{}", self.origin, self.path)
    }

    /// The issuer identifier (RFC 8414): the listener's origin.
    pub fn issuer(&self) -> &str {
        &self.origin
    }

    /// The protected resource metadata URL named in every challenge (RFC 9728 §3.1: the well-known path inserted
    /// before the resource's path).
    pub fn resource_metadata_url(&self) -> String {
        format!("{}{}{}", self.origin, resource::METADATA_PATH, self.path)
    }

    /// The auth events so far (the last 1,024), oldest first.
    pub fn events(&self) -> Vec<Value> {
        lock(&self.events).iter().cloned().collect()
    }

    fn fault(&self) -> Option<&AuthFault> {
        self.config.fault.as_ref()
    }

    fn event(&self, name: &str, mut fields: Value) {
        if let Value::Object(map) = &mut fields {
            map.insert("auth".into(), Value::String(name.into()));
        }
        if let Some(sink) = &self.config.events {
            sink(&fields);
        }
        let mut events = lock(&self.events);
        if events.len() == EVENTS_KEPT {
            events.pop_front();
        }
        events.push_back(fields);
    }

    /// `inner` (a front's router) behind the authorization: the auth endpoints answered here, the MCP endpoint
    /// only with a valid token, anything else passed to `inner` as it is (which answers 404 for unknown paths).
    pub fn wrap(self: Arc<Self>, inner: axum::Router) -> axum::Router {
        axum::Router::new().fallback(route).with_state((self, inner))
    }
}

async fn route(State((auth, inner)): State<(Arc<Auth>, axum::Router)>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let ours = path == auth.path || path.starts_with("/oauth/") || path.starts_with("/.well-known/");
    if !ours {
        return forward(inner, request).await;
    }
    if let Some(refused) = faultlab_http::check_origin(&request, &auth.allowed) {
        return refused;
    }
    if path == auth.path {
        return endpoint(&auth, inner, request).await;
    }
    if let Some(response) = resource::metadata(&auth, &path, request.method()) {
        return response;
    }
    server::handle(&auth, &path, request).await
}

/// A request to the MCP endpoint: admitted with a valid token (and passed on), or refused with its challenge.
async fn endpoint(auth: &Auth, inner: axum::Router, request: Request) -> Response {
    // With an `auth.match` the body is read first (bounded like the endpoint's), since which request it is decides
    // the answer; it is then passed on as read, or handed to the refusal hook: read once either way.
    let (mut request, read) = if auth.matcher.is_some() {
        let (parts, body) = request.into_parts();
        let read = faultlab_http::read_body(&parts.headers, body, MAX_REFUSED_BODY_BYTES).await;
        let passed = read.as_ref().map(|bytes| axum::body::Body::from(bytes.clone())).unwrap_or_default();
        (Request::from_parts(parts, passed), Some(read))
    } else {
        (request, None)
    };
    let frame = match &read {
        // What the endpoint itself would not parse is not parsed here either.
        Some(Ok(bytes)) if faultlab_http::cost::check_elements(bytes).is_none() => Some(Frame::parse(bytes.clone())),
        _ => None,
    };
    let challenge = match resource::admit(auth, &mut request, frame.as_ref()) {
        Ok(()) => {
            return match read {
                // The body that could not be read is answered as the endpoint would have (413, 408, 400).
                Some(Err(refused)) => refused,
                _ => forward(inner, request).await,
            };
        }
        Err(challenge) => challenge,
    };
    // The refused request's body is read (bounded like the endpoint's) before the challenge: a body left unread
    // makes hyper close the connection after the answer, and a client that reuses it for its retry meets a
    // connection closed without a response.
    let (parts, body) = request.into_parts();
    let read = match read {
        Some(read) => read,
        None => faultlab_http::read_body(&parts.headers, body, MAX_REFUSED_BODY_BYTES).await,
    };
    if let Some(hook) = &auth.config.refusals {
        let body = match &read {
            // What the endpoint itself would not parse is not parsed here either.
            Ok(bytes) if faultlab_http::cost::check_elements(bytes).is_some() => {
                Err("more JSON elements than the endpoint parses")
            }
            Ok(bytes) => Ok(bytes.as_ref()),
            Err(refused) => Err(match refused.status() {
                http::StatusCode::PAYLOAD_TOO_LARGE => "larger than the endpoint's 4 MiB",
                http::StatusCode::REQUEST_TIMEOUT => "the body did not arrive in time",
                _ => "the body could not be read",
            }),
        };
        let (error, fault) = (challenge.error, challenge.fault);
        hook(Refused { status: challenge.status.as_u16(), error, fault, method: parts.method.as_str(), body });
    }
    challenge.response
}

async fn forward(inner: axum::Router, request: Request) -> Response {
    match inner.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// An OAuth error body (`{"error": ..., "error_description": ...}`) with `status`, never cached.
pub(crate) fn oauth_error(status: http::StatusCode, error: &str, description: &str) -> Response {
    json_response(status, &json!({"error": error, "error_description": description}))
}

/// A JSON body that no cache may keep (RFC 6749 §5.1: token responses carry `Cache-Control: no-store`).
pub(crate) fn json_response(status: http::StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    headers.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}
