//! The Streamable HTTP front.
//!
//! Every request passes, in order: shutdown (503), endpoint path (404), `Host` and `Origin` (403; 400 when given
//! twice), body size (413, at once for a declared `Content-Length`; 408 for a body that stalls); then it is
//! routed:
//! - a request carrying `Mcp-Session-Id` goes to its legacy session (400 for an id given twice or not visible
//!   ASCII; 404 with JSON-RPC -32001 if the registry does not know the id); its SSE responses are resumable
//!   and a `GET` with `Last-Event-ID` is answered from the session's stream logs ([`stream`]);
//! - an `initialize` opens a new legacy session if the cap allows; at the cap, the least recently used session
//!   idle for [`sessions::EVICTABLE_AFTER`] (or the idle timeout, if shorter) is closed to make room; 503 when
//!   none is;
//! - everything else (all 2026-07-28 requests, and legacy requests without a session) is served statelessly.
//!
//! Two rmcp services do the protocol work: one stateless (JSON bodies when the reply is the only message), one
//! with legacy sessions. Their responses pass through [`body`], which applies armed faults to JSON bodies and
//! SSE events.

pub mod lifecycle;
pub mod sessions;
pub mod stream;

pub use faultlab_http::{body, guard};

use crate::scope::{Scope, TransportKind};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use body::{Exchange, StreamRegistry};
use bytes::Bytes;
use faultlab_engine::render;
use faultlab_engine::{Engine, Recorder};
use faultlab_http::rpc_error;
use faultlab_wire::Frame;
use guard::AllowedHosts;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::Full;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{SessionManager, StreamableHttpServerConfig, StreamableHttpService};
use sessions::{Registry, SessionHandle};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// Largest request body accepted, in bytes (4 MiB, rmcp's default).
pub const MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

const SESSION_HEADER: &str = "mcp-session-id";

/// How the front is set up.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The one endpoint path, e.g. `/mcp` (already validated with [`guard::endpoint_path`]).
    pub path: String,
    pub allowed_hosts: AllowedHosts,
    pub max_body_bytes: usize,
    pub max_sessions: usize,
    /// A session idle this long is closed.
    pub session_idle: Duration,
    /// Timeouts, the connection cap and the shutdown grace of the listener.
    pub limits: faultlab_http::server::Limits,
    /// Put in front of the endpoint when the front starts (`--auth`).
    pub wrap: Option<faultlab_http::Wrap>,
}

impl HttpOptions {
    pub fn new(path: String, allowed_hosts: AllowedHosts) -> Self {
        Self {
            path,
            allowed_hosts,
            max_body_bytes: MAX_REQUEST_BODY_BYTES,
            max_sessions: sessions::MAX_SESSIONS,
            session_idle: sessions::SESSION_IDLE,
            limits: faultlab_http::server::Limits::default(),
            wrap: None,
        }
    }
}

struct Front<S: ServerHandler> {
    options: HttpOptions,
    stateless: StreamableHttpService<S, NeverSessionManager>,
    sessions: StreamableHttpService<S, LocalSessionManager>,
    manager: Arc<LocalSessionManager>,
    registry: Arc<Registry>,
    recorder: Recorder,
    shutdown: CancellationToken,
}

/// Serves MCP over Streamable HTTP on `listener` until `shutdown` is cancelled; then stops taking requests,
/// ends open streams and closes every session.
pub async fn serve<S, F>(
    listener: TcpListener,
    options: HttpOptions,
    make: F,
    recorder: Recorder,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    S: ServerHandler,
    F: Fn(TransportKind) -> S + Send + Sync + Clone + 'static,
{
    let base = StreamableHttpServerConfig::default()
        // Host and Origin are checked here, before dispatch, against the bound address.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(shutdown.child_token());
    let mut manager = LocalSessionManager::default();
    // The registry reclaims idle sessions (and counts them against the cap); rmcp must not do it behind its back.
    manager.session_config.keep_alive = None;
    let manager = Arc::new(manager);
    let stateless_make = make.clone();
    let front = Arc::new(Front {
        stateless: StreamableHttpService::new(
            move || Ok(stateless_make(TransportKind::HttpStateless)),
            Arc::new(NeverSessionManager::default()),
            base.clone().with_legacy_session_mode(false).with_json_response(true),
        ),
        sessions: StreamableHttpService::new(
            move || Ok(make(TransportKind::HttpSession)),
            manager.clone(),
            base.with_legacy_session_mode(true),
        ),
        manager,
        registry: Registry::new(options.max_sessions, recorder.clone()),
        recorder,
        shutdown: shutdown.clone(),
        options,
    });
    tokio::spawn(reclaim_idle(front.clone()));
    let app = axum::Router::new().fallback(handle::<S>).with_state(front.clone());
    let app = match &front.options.wrap {
        Some(wrap) => wrap.apply(app),
        None => app,
    };
    let served = faultlab_http::server::serve(listener, app, front.options.limits, shutdown).await;
    for id in front.registry.take_all() {
        let _ = front.manager.close_session(&Arc::from(id)).await;
    }
    served
}

/// Closes sessions idle for the configured time, checking a tenth as often (every 30 s by default).
async fn reclaim_idle<S: ServerHandler>(front: Arc<Front<S>>) {
    let period = (front.options.session_idle / 10).max(Duration::from_millis(10));
    let mut tick = tokio::time::interval(period);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = front.shutdown.cancelled() => return,
        }
        for id in front.registry.take_idle(front.options.session_idle) {
            let _ = front.manager.close_session(&Arc::from(id)).await;
        }
    }
}

async fn handle<S: ServerHandler>(State(front): State<Arc<Front<S>>>, request: Request) -> Response {
    if front.shutdown.is_cancelled() {
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, "Server shutting down").into_response();
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    if let Some(refused) = faultlab_http::check_request(&request, &front.options.path, &front.options.allowed_hosts) {
        return refused;
    }
    match *request.method() {
        Method::POST => post(front, request).await,
        Method::GET | Method::DELETE => get_or_delete(front, request).await,
        _ => {
            let mut response = (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").into_response();
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

async fn post<S: ServerHandler>(front: Arc<Front<S>>, request: Request) -> Response {
    let session_id = match session_id(request.headers()) {
        Ok(id) => id,
        Err(refused) => return refused,
    };
    let (parts, body) = request.into_parts();
    let bytes = match faultlab_http::read_body(&parts.headers, body, front.options.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    if let Some(refused) = faultlab_http::cost::check_elements(&bytes) {
        return refused;
    }
    let frame = Frame::parse(bytes.clone());
    let id_value = frame.id().map(|id| id.to_value());
    if let Some(session_id) = session_id {
        let Some(session) = front.registry.get(&session_id) else {
            return unknown_session(&front.registry, &session_id, id_value);
        };
        let active = session.begin_request();
        if let Some((id, actions)) = session.engine.inbound(&frame)
            && let Some(link) = session.stream(&id)
        {
            // A cancel released a late response: it goes on the stream of the request it answers, which then
            // ends, since that request has had its reply.
            link.outlet.send(actions.iter().flat_map(|a| render::sse(a, None)).collect());
            session.unlink_stream(&id);
            link.finish.cancel();
        }
        let scope = Scope {
            engine: session.engine.clone(),
            transport: TransportKind::HttpSession,
            session: Some(SessionHandle(session.clone())),
        };
        let response = call(&front.sessions, parts, bytes, Some(scope)).await;
        let (manager, lost, registry) = (front.manager.clone(), session.clone(), front.registry.clone());
        let exchange = Exchange::new(&frame, session.engine.clone(), &front.shutdown)
            .with_streams(session.clone() as Arc<dyn StreamRegistry>)
            .on_end(move || {
                // The request is over: the session may go idle; a session lost during it is closed in rmcp.
                drop(active);
                // A restart (`session_lifecycle`) forgot other sessions too: they close in rmcp with this one.
                let mut closing = registry.lifecycle.take_closing();
                if lost.is_lost() {
                    closing.push(lost.id.clone());
                }
                if !closing.is_empty() {
                    tokio::spawn(async move {
                        for id in closing {
                            let _ = manager.close_session(&Arc::from(id)).await;
                        }
                    });
                }
            });
        let response = body::wrap(response, exchange).await;
        return stream::record(&session, response, stream::plan_for(&frame), &front.shutdown).await;
    }
    if frame.method() == Some("initialize") {
        if front.registry.lifecycle.refuses_initialize() {
            // `session_lifecycle` `reinit_404`: the new session is refused as the old one was.
            return rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found", id_value);
        }
        let reservation = match front.registry.reserve() {
            Some(reservation) => Some(reservation),
            None => {
                // At the cap: make room by closing the least recently used session that has been idle a while.
                let min_idle = sessions::EVICTABLE_AFTER.min(front.options.session_idle);
                match front.registry.evict_lru(min_idle) {
                    Some(evicted) => {
                        let _ = front.manager.close_session(&Arc::from(evicted)).await;
                        front.registry.reserve()
                    }
                    None => None,
                }
            }
        };
        let Some(reservation) = reservation else {
            return rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32603, "Too many active sessions", id_value);
        };
        let response = call(&front.sessions, parts, bytes, None).await;
        if let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            front.registry.commit(reservation, id.to_owned());
        }
        return response;
    }
    let engine = Arc::new(Engine::new(front.recorder.scoped("http")).listing_task_support(crate::tools::task_support));
    engine.inbound(&frame);
    let scope = Scope { engine: engine.clone(), transport: TransportKind::HttpStateless, session: None };
    let response = call(&front.stateless, parts, bytes, Some(scope)).await;
    body::wrap(response, Exchange::new(&frame, engine, &front.shutdown)).await
}

async fn get_or_delete<S: ServerHandler>(front: Arc<Front<S>>, request: Request) -> Response {
    let session_id = match session_id(request.headers()) {
        Ok(id) => id,
        Err(refused) => return refused,
    };
    let Some(session_id) = session_id else {
        // Without a session there is nothing to stream or end: the stateless service answers 405.
        let (parts, _) = request.into_parts();
        return call(&front.stateless, parts, Bytes::new(), None).await;
    };
    let Some(session) = front.registry.get(&session_id) else {
        return unknown_session(&front.registry, &session_id, None);
    };
    let is_delete = request.method() == Method::DELETE;
    if !is_delete && session.refuses_get() {
        // `session_lifecycle` `get_404`: the stream is refused while the session's POSTs are served.
        return rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found", None);
    }
    if !is_delete && let Some(resumed) = stream::resume(&session, request.headers()) {
        return resumed;
    }
    let active = session.begin_request();
    let (parts, _) = request.into_parts();
    let response = call(&front.sessions, parts, Bytes::new(), None).await;
    if is_delete && response.status().is_success() {
        front.registry.remove(&session_id);
        // rmcp answers 202; clients expect the plain success of a completed DELETE (the Python SDK logs 202 as a
        // failed termination).
        return StatusCode::OK.into_response();
    }
    // A standalone GET stream keeps the session busy (not idle) for as long as it is open.
    let (parts, inner) = response.into_parts();
    let inner = inner.into_data_stream();
    let held = futures::StreamExt::map(inner, move |chunk| {
        let _ = &active;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(held))
}

/// The answer for a session id the registry does not know: 404 with -32001, or, for the ids `session_lifecycle`
/// `unknown_400` forgot, 400 with -32600 as servers that do not tell an unknown session from a missing one answer.
fn unknown_session(registry: &Registry, id: &str, request_id: Option<serde_json::Value>) -> Response {
    match registry.lifecycle.unknown_session_status(id) {
        StatusCode::BAD_REQUEST => {
            rpc_error(StatusCode::BAD_REQUEST, -32600, "Bad Request: No valid session ID provided", request_id)
        }
        status => rpc_error(status, -32001, "Session not found", request_id),
    }
}

/// The request's `Mcp-Session-Id`: at most one, of visible ASCII (0x21-0x7E, as the spec requires of ids);
/// anything else is malformed (400) rather than read as "no session".
#[allow(clippy::result_large_err)]
fn session_id(headers: &http::HeaderMap) -> Result<Option<String>, Response> {
    let mut values = headers.get_all(SESSION_HEADER).iter();
    let Some(first) = values.next() else { return Ok(None) };
    let malformed = |message: &str| rpc_error(StatusCode::BAD_REQUEST, -32600, message, None);
    if values.next().is_some() {
        return Err(malformed("Bad Request: more than one Mcp-Session-Id header"));
    }
    let bytes = first.as_bytes();
    if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(malformed("Bad Request: Mcp-Session-Id must be visible ASCII characters"));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// Hands a request to an rmcp service, with the request's scope in its extensions for the tool handlers.
async fn call<Svc>(service: &Svc, parts: http::request::Parts, bytes: Bytes, scope: Option<Scope>) -> Response
where
    Svc: tower::Service<http::Request<Full<Bytes>>, Error = std::convert::Infallible> + Clone,
    Svc::Response: IntoResponse,
{
    let mut request = http::Request::from_parts(parts, Full::new(bytes));
    if let Some(scope) = scope {
        request.extensions_mut().insert(scope);
    }
    match service.clone().oneshot(request).await {
        Ok(response) => response.into_response(),
        Err(never) => match never {},
    }
}
