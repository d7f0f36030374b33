//! The Streamable HTTP proxy: an HTTP front (loopback) in front of an HTTP upstream.
//!
//! Every request is checked like `faultlab serve` checks them (path, `Host`, `Origin`, size), shown to the rules,
//! and forwarded with its headers (MCP headers and `Mcp-Session-Id` included; `Host` becomes the upstream's; hop-by-
//! hop headers are dropped). The upstream's answer streams back through the same fault-applying body as the
//! server's, so a reply is faulted on the response of the POST that carried its request. A client that goes away
//! drops the upstream request too.

use super::http_sessions::{AtResume, HeldReplies, Lifecycle, Opened, Resumable};
use crate::remote::{HyperClient, Remote};
use crate::rules::{Fired, Mode, SharedRules};
use crate::trajectory::TrajectoryWriter;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use faultlab_engine::catalogue::{Latency, session_expired_in_flight};
use faultlab_engine::engine::Shared;
use faultlab_engine::recorder::TransportEventKind;
use faultlab_engine::recorder::{Delivery, Direction, FrameAction, ResumeAnswer};
use faultlab_engine::{Engine, Event, FaultKind, WireAction};
use faultlab_http::body::{self, Exchange};
use faultlab_http::guard::AllowedHosts;
use faultlab_http::resume::{EventId, OnReply, Plan};
use faultlab_http::rpc_error;
use faultlab_http::server::Limits;
use faultlab_wire::Frame;
use faultlab_wire::sync::lock;
use http::{StatusCode, header};
use http_body_util::Full;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Largest request body accepted, in bytes (4 MiB, as `faultlab serve`).
const MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Headers that belong to one connection, not to the message, and so are not forwarded (RFC 9110 §7.6.1), plus
/// `host` (rewritten for the upstream) and `content-length` (recomputed).
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

pub struct HttpProxyOptions {
    /// The front's endpoint path (the upstream URL's path for an HTTP upstream).
    pub path: String,
    pub allowed_hosts: AllowedHosts,
    /// Timeouts, the connection cap and the shutdown grace of the listener.
    pub limits: Limits,
    /// Put in front of the proxy when it starts (`--auth`: the proxy is then the protected resource).
    pub wrap: Option<faultlab_http::Wrap>,
}

/// Where the HTTP front sends what it does not answer itself (its upstream).
pub enum Backend {
    /// Another Streamable HTTP server.
    /// (Boxed: it is the larger variant by far, and the front holds one upstream for its whole life.)
    Url { url: reqwest::Url, target: Box<UrlTarget> },
    /// A stdio server child, bridged: one line per POST, its reply as the POST's answer; a child per session the
    /// front gives out, as a stateful server's sessions ([`crate::upstream::bridged`]).
    Child(Arc<crate::upstream::bridged::Bridged>),
    /// A recording (`--replay`): each POSTed request answered with the recorded reply to the same call.
    Recording(crate::recording::Replayer),
}

/// An HTTP upstream as the forwarding path needs it: its URI parsed once, and hyper's pooled client. reqwest on
/// top of the same client re-parsed the URL and rebuilt each request (13% of the proxy's CPU per request in a
/// profile); without it the proxy spends 124 µs of CPU per request instead of 132 (proxy benchmark, figure 5).
pub struct UrlTarget {
    uri: http::Uri,
    client: HyperClient,
    /// The user's headers and the TLS trust (see [`crate::remote`]).
    remote: Remote,
}

impl Backend {
    /// A plain or https:// upstream at `url`, with no headers of the user's own and the system's roots.
    pub fn url(url: reqwest::Url) -> std::io::Result<Self> {
        Self::remote(Remote::new(url.as_str()).map_err(std::io::Error::other)?)
    }

    /// An HTTP upstream as resolved from the command line (redirects are not followed: the upstream is the
    /// server that was named).
    pub fn remote(remote: Remote) -> std::io::Result<Self> {
        let url = remote.url().clone();
        let uri = url.as_str().parse::<http::Uri>().map_err(std::io::Error::other)?;
        let client = remote.hyper_client();
        Ok(Self::Url { url, target: Box::new(UrlTarget { uri, client, remote }) })
    }
}

impl UrlTarget {
    /// The upstream and the header names the proxy adds (never their values), for the start-up line.
    pub fn describe(&self) -> String {
        let names = self.remote.header_names();
        if names.is_empty() {
            return self.remote.shown();
        }
        format!("{} (adding headers: {})", self.remote.shown(), names.join(", "))
    }
}

struct Proxy {
    /// What the per-request engines of the whole front share: a reply held by `out_of_order` on one request's
    /// response is released by the next reply on any other, and `stale`, `wrong_value` and `contradictory` build on
    /// replies that came on other requests' responses.
    shared: Shared,
    options: HttpProxyOptions,
    rules: SharedRules,
    trajectory: Arc<TrajectoryWriter>,
    upstream: Backend,
    start: Instant,
    shutdown: CancellationToken,
    /// The stream faults' logs, by session ([`super::http_sessions`]).
    resumable: Resumable,
    /// What the session-lifecycle faults changed.
    lifecycle: Lifecycle,
    /// The trajectory events of replies on faulted streams, until a client reads them.
    held: HeldReplies,
    /// The rules armed at the resumes of faulted streams (`match.at: resume`).
    at_resume: AtResume,
}

/// Serves until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    options: HttpProxyOptions,
    upstream: Backend,
    rules: SharedRules,
    trajectory: Arc<TrajectoryWriter>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    {
        let rules = lock(&rules);
        trajectory.started(rules.seed(), rules.len());
    }
    let proxy = Arc::new(Proxy {
        shared: Shared::default(),
        options,
        rules,
        trajectory: trajectory.clone(),
        upstream,
        start: Instant::now(),
        shutdown: shutdown.clone(),
        resumable: Resumable::default(),
        lifecycle: Lifecycle::default(),
        held: HeldReplies::default(),
        at_resume: AtResume::default(),
    });
    let limits = proxy.options.limits;
    let wrap = proxy.options.wrap.clone();
    let app = axum::Router::new().fallback(handle).with_state(proxy.clone());
    let app = match wrap {
        Some(wrap) => wrap.apply(app),
        None => app,
    };
    // Unchanged frames' events are written in batches, at most `FLUSH_WITHIN` late; the rest when the front ends.
    let flusher = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(trajectory.flusher()));
    let served = faultlab_http::server::serve(listener, app, limits, shutdown).await;
    flusher.abort();
    // Replies no client read from a cut stream's log are written (as undelivered) before the ledger.
    proxy.held.settle_all();
    trajectory.finish();
    served
}

async fn handle(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    if let Some(refused) = faultlab_http::check_request(&request, &proxy.options.path, &proxy.options.allowed_hosts) {
        return refused;
    }
    if matches!(proxy.upstream, Backend::Child(_) | Backend::Recording(_))
        && request.method() == http::Method::POST
        && let Some(refused) = crate::upstream::bridge::check_media_types(request.headers())
    {
        return refused;
    }
    let (parts, body) = request.into_parts();
    let bytes = match faultlab_http::read_body(&parts.headers, body, MAX_REQUEST_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let session = session_id(&parts.headers);
    if parts.method != http::Method::POST {
        if let Some(answered) = resume_faulted(&proxy, &parts, session.as_deref()).await {
            return answered;
        }
        if let Some(answered) = answer_for_session(&proxy, &parts, session.as_deref(), None) {
            return answered;
        }
        // GET streams and DELETE pass untouched: rules act on requests, which only POST carries.
        return forward(&proxy, &parts, bytes, None).await;
    }
    if let Some(refused) = faultlab_http::cost::check_elements(&bytes) {
        return refused;
    }
    let frame = Frame::parse(bytes.clone());
    if let Some(answered) = answer_for_session(&proxy, &parts, session.as_deref(), Some(&frame)) {
        // Answered for a session a lifecycle fault forgot (or a refused initialize): the upstream never sees it.
        proxy.trajectory.client_frame(&frame, FrameAction::Consumed, None, None, 0);
        return recorded_answer(&proxy, &frame, answered).await;
    }
    let (fired, at_resume) = {
        let mut rules = lock(&proxy.rules);
        (rules.decide(&frame, proxy.start.elapsed()), rules.take_at_resume())
    };
    // One engine per exchange: over HTTP a reply always comes on the response of the POST that carried its
    // request, so faults armed here fire there and cannot meet another client's equal id.
    let engine = Arc::new(Engine::sharing(proxy.trajectory.recorder().clone(), proxy.shared.clone()));
    engine.inbound(&frame);
    let executed = fired.as_ref().is_none_or(|f| f.mode == Mode::After);
    // A stream fault keeps the answer in a log the client reads later, if at all: the reply's event waits until
    // the proxy knows which connection carried it.
    let plan = fired.as_ref().and_then(|f| Plan::of(&f.fault));
    let held = plan.as_ref().map(|_| proxy.held.hold(proxy.trajectory.clone()));
    let exchange = {
        let (trajectory, rule) = (proxy.trajectory.clone(), fired.as_ref().map(|f| f.rule.clone()));
        let held = held.clone();
        Exchange::new(&frame, engine.clone(), &proxy.shutdown).observe(Arc::new(move |reply, fault, actions| {
            let rule = rule.as_deref().filter(|_| fault.is_some());
            let event = trajectory.server_frame_event(reply, rule, fault, actions, executed);
            match &held {
                Some(held) if reply.is_reply() => held.event(event),
                _ => trajectory.record(event),
            }
        }))
    };
    let Some(Fired { rule, mode, fault }) = fired else {
        proxy.trajectory.client_frame(&frame, FrameAction::Forwarded, None, None, 1);
        let response = forward(&proxy, &parts, bytes, Some(&frame)).await;
        saw_session(&proxy, &response);
        return body::wrap(response, exchange).await;
    };
    // A stream fault acts on the response stream, not on the reply: nothing is armed, the stream is kept in a
    // log that follows the fault's plan.
    if plan.is_none()
        && let Some(id) = frame.id()
    {
        let _ = engine.arm(id.clone(), fault.clone());
    }
    let response = match (mode, &fault) {
        (Mode::After, _) => {
            proxy.trajectory.client_frame(&frame, FrameAction::Forwarded, Some(&rule), Some(&fault), 1);
            forward(&proxy, &parts, bytes, Some(&frame)).await
        }
        (Mode::Before, FaultKind::Latency(Latency { delay_ms })) => {
            proxy.trajectory.client_frame(&frame, FrameAction::Faulted, Some(&rule), Some(&fault), 1);
            engine.disarm(&frame.id().cloned().unwrap_or_else(|| 0.into()));
            // This request's own task waits; other requests are served meanwhile.
            faultlab_engine::clock::precise_sleep(Duration::from_millis(*delay_ms)).await;
            forward(&proxy, &parts, bytes, Some(&frame)).await
        }
        // `instead`, and `before` with a disconnect: the upstream never sees the request.
        _ => {
            proxy.trajectory.client_frame(&frame, FrameAction::Consumed, Some(&rule), Some(&fault), 0);
            stand_in(&frame, &rule)
        }
    };
    saw_session(&proxy, &response);
    let session = session.or_else(|| session_id(response.headers()));
    match (&fault, session.as_deref()) {
        (FaultKind::SessionLifecycle(lifecycle), Some(id)) => proxy.lifecycle.apply(lifecycle.variant, id),
        (FaultKind::SessionExpiredInFlight(_), Some(id)) => proxy.lifecycle.expire(id),
        _ => {}
    }
    if let Backend::Child(bridged) = &proxy.upstream
        && matches!(fault, FaultKind::SessionLifecycle(_) | FaultKind::SessionExpiredInFlight(_))
    {
        // The sessions the front now answers as unknown lose their servers too, as a real server's would: a
        // re-initialize meets a fresh one.
        bridged.end_where(|id| proxy.lifecycle.gone(id).is_some(), &format!("forgotten by rule {rule}"));
    }
    if matches!(fault, FaultKind::SessionExpiredInFlight(_)) {
        // The request stays in flight after its session is gone (the engine then answers it 404); this request's
        // own task waits, others are served meanwhile.
        tokio::time::sleep(Duration::from_millis(session_expired_in_flight::IN_FLIGHT_MS)).await;
    }
    let response = body::wrap(response, exchange).await;
    if matches!(fault, FaultKind::StreamLost(_)) {
        // The stream breaks where the reply would be (armed above). It is kept under the proxy's own event ids, so
        // a client's resume comes here and is answered 404 (a broken stream has nothing to resume), not passed to
        // an upstream that can resume, which would replay the reply the fault lost.
        return proxy
            .resumable
            .streams(session.as_deref())
            .record_watched(response, Plan::default(), &proxy.shutdown, None)
            .await;
    }
    let (Some(plan), Some(held)) = (plan, held) else { return response };
    let response = if accepts_event_stream(&parts.headers) { as_event_stream(response).await } else { response };
    if !is_event_stream(response.headers()) {
        // Not a stream to cut (an error status, JSON for a client that takes no SSE): the reply, if any, is on
        // the POST's own response.
        held.delivered(Delivery::response());
        return response;
    }
    let on_reply: OnReply = Arc::new(move |delivery| held.delivered(delivery));
    let resumable = plan.ids;
    let streams = proxy.resumable.streams(session.as_deref());
    let (response, stream) = streams.record_numbered(response, plan, &proxy.shutdown, Some(on_reply)).await;
    // Armed before the client has the stream's first id, so its first resume finds the rules. A stream without
    // ids cannot be resumed: its rules never fire.
    if let Some(stream) = stream.filter(|_| resumable) {
        let opened = Opened {
            session,
            request_id: frame.id().map_or(serde_json::Value::Null, |id| id.to_value()),
            method: frame.method().map(str::to_owned),
            tool: frame.tool_name().map(str::to_owned),
        };
        proxy.at_resume.arm(stream, opened, at_resume);
    }
    response
}

/// A resume (`GET` with one of the proxy's `Last-Event-ID`s) that a rule with `match.at: resume` is armed on:
/// answered as its fault says instead of from the log, and recorded (`resume_faulted`). `None` for any other
/// request, and for a resume in a session the lifecycle faults already forgot (answered as forgotten).
async fn resume_faulted(proxy: &Proxy, parts: &http::request::Parts, session: Option<&str>) -> Option<Response> {
    if parts.method != http::Method::GET || session.is_some_and(|s| proxy.lifecycle.gone(s).is_some()) {
        return None;
    }
    let mut ids = parts.headers.get_all(LAST_EVENT_ID).iter();
    let (Some(last), None) = (ids.next(), ids.next()) else { return None };
    let last = last.to_str().ok()?;
    if !proxy.resumable.issued(last.as_bytes()) {
        return None;
    }
    let stream = EventId::parse(last)?.stream;
    let (opened, Fired { rule, fault, .. }) = proxy.at_resume.take(stream, session)?;
    let streams = proxy.resumable.streams(session);
    let record = |answer: ResumeAnswer| {
        proxy.trajectory.record(Event::ResumeFaulted {
            rule: rule.clone(),
            fault: fault.name().into(),
            effect: fault.effect(),
            request_id: opened.request_id.clone(),
            method: opened.method.clone(),
            tool: opened.tool.clone(),
            last_event_id: last.to_owned(),
            answer,
        });
    };
    Some(match &fault {
        FaultKind::Latency(Latency { delay_ms }) => {
            record(ResumeAnswer::Delayed { delay_ms: *delay_ms });
            // This resume's own task waits; the stream's log fills on meanwhile.
            faultlab_engine::clock::precise_sleep(Duration::from_millis(*delay_ms)).await;
            streams.resume(last.as_bytes())
        }
        FaultKind::Disconnect(_) => {
            streams.count_resume(last.as_bytes());
            record(ResumeAnswer::Reset);
            aborted()
        }
        FaultKind::Timeout(_) => {
            streams.count_resume(last.as_bytes());
            record(ResumeAnswer::Held);
            // No head is sent: the client waits until it gives up; this task is held until the proxy ends (one
            // per armed rule, which acts once), when the connection is aborted.
            proxy.shutdown.cancelled().await;
            aborted()
        }
        FaultKind::SessionExpiredInFlight(_) => {
            streams.count_resume(last.as_bytes());
            record(ResumeAnswer::Status { status: 404, session_lost: session.is_some() });
            if let Some(id) = session {
                proxy.lifecycle.expire(id);
                if let Backend::Child(bridged) = &proxy.upstream {
                    bridged.end_where(|known| known == id, &format!("forgotten at a resume by rule {rule}"));
                }
            }
            rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found", None)
        }
        // `http_status` and its presets (the only other faults a rule at a resume takes: checked at load).
        _ => {
            streams.count_resume(last.as_bytes());
            let reply = Frame::from_value(json!({"jsonrpc": "2.0", "id": null, "result": {}}));
            let actions = fault.apply(faultlab_engine::catalogue::Reply { frame: &reply, request: None });
            let Some(WireAction::HttpStatus { status, retry_after_sec, body, media }) = actions.into_iter().next()
            else {
                record(ResumeAnswer::Reset);
                return Some(aborted());
            };
            record(ResumeAnswer::Status { status, session_lost: false });
            body::status_response(status, retry_after_sec, body, media)
        }
    })
}

fn is_event_stream(headers: &http::HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The request's `Mcp-Session-Id`, when it has exactly one that is text.
fn session_id(headers: &http::HeaderMap) -> Option<String> {
    let mut values = headers.get_all(SESSION_HEADER).iter();
    let first = values.next()?.to_str().ok()?.to_owned();
    values.next().is_none().then_some(first)
}

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";

/// The proxy's own answer to a request (a JSON-RPC error it wrote in the upstream's place), recorded as the reply
/// the client got: the call then has its error in the trajectory, like any other, instead of reading as never
/// answered. The answer is a small JSON body ([`rpc_error`]), read whole (64 KiB at most) and sent as it was.
async fn recorded_answer(proxy: &Proxy, request: &Frame, answered: Response) -> Response {
    let (head, body) = answered.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
    if request.id().is_some() {
        let reply = Frame::parse(bytes.clone());
        proxy.trajectory.injected_frame(Direction::ServerToClient, &reply, None, None, Some(false));
    }
    Response::from_parts(head, Body::from(bytes))
}

/// Remembers a session the upstream gave out (a `restart` forgets it with the others).
fn saw_session(proxy: &Proxy, response: &Response) {
    if let Some(id) = session_id(response.headers()) {
        proxy.lifecycle.seen(&id);
    }
}

/// What the proxy answers itself, before any rule: a session the lifecycle faults made unknown (400 or 404), its
/// refused `GET` stream, a refused `initialize`, and a resume of one of the proxy's own streams.
fn answer_for_session(
    proxy: &Proxy,
    parts: &http::request::Parts,
    session: Option<&str>,
    frame: Option<&Frame>,
) -> Option<Response> {
    let id = frame.and_then(Frame::id).map(|id| id.to_value());
    if let Some(session) = session
        && let Some(status) = proxy.lifecycle.gone(session)
    {
        return Some(match status {
            400 => rpc_error(StatusCode::BAD_REQUEST, -32600, "Bad Request: No valid session ID provided", id),
            _ => rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found", id),
        });
    }
    if session.is_none() && frame.and_then(Frame::method) == Some("initialize") && proxy.lifecycle.refuses_initialize()
    {
        return Some(rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found", id));
    }
    if parts.method != http::Method::GET {
        return None;
    }
    let mut last_event_ids = parts.headers.get_all(LAST_EVENT_ID).iter();
    match (last_event_ids.next(), last_event_ids.next()) {
        (Some(_), Some(_)) => {
            let message = "Bad Request: more than one Last-Event-ID header";
            Some(rpc_error(StatusCode::BAD_REQUEST, -32600, message, None))
        }
        (Some(last), None) if proxy.resumable.issued(last.as_bytes()) => {
            Some(proxy.resumable.streams(session).resume(last.as_bytes()))
        }
        (None, _) if session.is_some_and(|s| proxy.lifecycle.refuses_get(s)) => {
            Some(rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found", None))
        }
        _ => None,
    }
}

/// Whether the client accepts an SSE answer to its POST.
fn accepts_event_stream(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|media| media.trim().starts_with("text/event-stream")))
}

/// Largest JSON answer turned into an SSE event for a stream fault, in bytes (the resume log's event limit).
const MAX_JSON_EVENT_BYTES: usize = faultlab_wire::sse::MAX_EVENT_BYTES;

/// A `200 application/json` answer as the one-event SSE stream a server may send instead, so a stream fault has a
/// stream to act on; any other answer unchanged. An answer too large to hold is broken off, as the log would.
async fn as_event_stream(response: Response) -> Response {
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if response.status() != StatusCode::OK || !json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_JSON_EVENT_BYTES).await else { return aborted() };
    let mut event = Vec::with_capacity(bytes.len() + 32);
    event.extend_from_slice(b"event: message\n");
    for line in bytes.split(|b| *b == b'\n') {
        event.extend_from_slice(b"data: ");
        event.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        event.push(b'\n');
    }
    event.push(b'\n');
    parts.headers.insert(header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(event))
}

/// A plain result for a request the proxy answers itself; the armed fault then turns it into what the rule says.
fn stand_in(frame: &Frame, rule: &str) -> Response {
    let id = frame.id().map(|id| id.to_value());
    let reply = json!({"jsonrpc": "2.0", "id": id,
        "result": {"content": [{"type": "text", "text": format!("answered by faultlab rule {rule}")}]}});
    let mut response = (StatusCode::OK, reply.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// A response whose body breaks at once: the connection is dropped before anything is delivered.
fn aborted() -> Response {
    let broken =
        futures::stream::once(async { Err::<Bytes, _>(std::io::Error::other("the upstream broke the connection")) });
    Response::new(Body::from_stream(broken))
}

/// Sends the request upstream and streams the answer back as it arrives.
async fn forward(proxy: &Proxy, parts: &http::request::Parts, bytes: Bytes, frame: Option<&Frame>) -> Response {
    let (url, target) = match &proxy.upstream {
        Backend::Url { url, target } => (url, target),
        Backend::Child(bridged) => {
            return bridged.forward(parts.method.clone(), session_id(&parts.headers).as_deref(), frame).await;
        }
        Backend::Recording(replayer) => return replayer.respond(&parts.method, frame),
    };
    // The client's query string goes along (the path is the upstream's own).
    let uri = match parts.uri.query() {
        None => target.uri.clone(),
        Some(query) => {
            let mut with_query = url.clone();
            with_query.set_query(Some(query));
            match with_query.as_str().parse::<http::Uri>() {
                Ok(uri) => uri,
                Err(_) => return rpc_error(StatusCode::BAD_REQUEST, -32600, "the query string is not valid", None),
            }
        }
    };
    let mut request = http::Request::builder().method(parts.method.clone()).uri(uri);
    if let Some(headers) = request.headers_mut() {
        for (name, value) in &parts.headers {
            if !HOP_BY_HOP.contains(&name.as_str()) {
                headers.append(name, value.clone());
            }
        }
    }
    if let Some(headers) = request.headers_mut() {
        target.remote.apply_headers(headers);
    }
    // `Host` is left out above: hyper's client sets it from the URI, the upstream's own.
    let Ok(request) = request.body(Full::new(bytes)) else {
        return rpc_error(StatusCode::BAD_REQUEST, -32600, "the request cannot be forwarded as HTTP", None);
    };
    let upstream = match target.client.request(request).await {
        Ok(response) => response,
        Err(e) => {
            let connect = e.is_connect();
            let what = if connect { "cannot be reached" } else { "broke the connection" };
            let detail = target.remote.explain(&faultlab_client::transport::http::describe(&e));
            let message = format!("the upstream {} {what}: {detail}", target.remote.shown());
            let id = frame.and_then(Frame::id);
            proxy.trajectory.transport(TransportEventKind::Closed, id, message.clone());
            // Nothing listens there, or its certificate is not trusted: say so, naming the upstream and the cause
            // (a misconfiguration, not a fault to mirror).
            if connect {
                return rpc_error(StatusCode::BAD_GATEWAY, -32603, &message, id.map(|id| id.to_value()));
            }
            // The upstream broke the connection before its answer: break ours the same way, as a direct client
            // would see; the trajectory says why.
            return aborted();
        }
    };
    let (mut head, body) = upstream.into_parts();
    for name in HOP_BY_HOP {
        head.headers.remove(name);
    }
    Response::from_parts(head, Body::new(body))
}
