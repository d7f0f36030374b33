//! Response bodies on their way out: where armed faults meet HTTP.
//!
//! A JSON body is one reply: it is read whole, shown to the engine, and sent as it was, changed, as an HTTP
//! status, or (when a fault makes several frames of it, or closes the stream) as an SSE stream. An SSE body is
//! split into events as it arrives; events that carry a reply go through the engine, all others pass byte for
//! byte. The headers of an SSE response are held until its first JSON-RPC message, because only then is it
//! known whether an `http_status` fault replaces the whole response.

use crate::rpc_error;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use faultlab_engine::outlet::{Batch, Outlet};
use faultlab_engine::recorder::{Event, TransportEventKind};
use faultlab_engine::render::{self, Step};
use faultlab_engine::{Engine, FaultKind, Recorder, WireAction};
use faultlab_wire::{Frame, Kind, MessageId, SseDecoder, SseEvent};
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

/// Largest JSON body read whole, in bytes (the 64 MiB `oversized` ceiling plus room for the envelope).
const MAX_JSON_BODY_BYTES: usize = 80 * 1024 * 1024;
/// Body chunks buffered between the writer and hyper.
const BODY_CHANNEL: usize = 16;

/// Where the reply to one request goes: the response stream of the POST that carried the request.
#[derive(Clone)]
pub struct StreamLink {
    pub outlet: Outlet,
    /// Ends the stream cleanly once its reply has been written by someone else (a late response).
    pub finish: CancellationToken,
}

/// Something that keeps track of open response streams by request id (a legacy session does, so that a cancel
/// arriving on another POST can put a late response on the right stream).
pub trait StreamRegistry: Send + Sync {
    fn link(&self, id: MessageId, link: StreamLink);
    fn unlink(&self, id: &MessageId);
}

/// Told about every message the server sends in a response, the fault that fired on it (if any) and what went
/// out instead (the proxy's trajectory).
pub type FrameObserver = Arc<dyn Fn(&Frame, Option<&FaultKind>, &[WireAction]) + Send + Sync>;

/// One request/response exchange as the body middleware needs it.
pub struct Exchange {
    request_id: Option<MessageId>,
    engine: Arc<Engine>,
    recorder: Recorder,
    shutdown: CancellationToken,
    streams: Option<Arc<dyn StreamRegistry>>,
    /// Runs once when the response is over (sent, abandoned or replaced): releases what the exchange held.
    on_end: Option<Box<dyn FnOnce() + Send>>,
    observer: Option<FrameObserver>,
}

impl Exchange {
    pub fn new(request: &Frame, engine: Arc<Engine>, shutdown: &CancellationToken) -> Self {
        Self {
            request_id: if matches!(request.kind(), Kind::Request { .. }) { request.id().cloned() } else { None },
            // The engine's recorder already carries the exchange's scope (`http` or `session:<id>`).
            recorder: engine.recorder().clone(),
            engine,
            shutdown: shutdown.clone(),
            streams: None,
            on_end: None,
            observer: None,
        }
    }

    /// Tells `observer` about every message of the response.
    pub fn observe(mut self, observer: FrameObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Registers the response stream under the request id while it is open.
    pub fn with_streams(mut self, streams: Arc<dyn StreamRegistry>) -> Self {
        self.streams = Some(streams);
        self
    }

    /// Runs `end` once the response is over.
    pub fn on_end(mut self, end: impl FnOnce() + Send + 'static) -> Self {
        self.on_end = Some(Box::new(end));
        self
    }

    fn end(&mut self) {
        if let Some(end) = self.on_end.take() {
            end();
        }
    }
}

/// Applies the exchange's faults to the MCP layer's response.
pub async fn wrap(response: Response, exchange: Exchange) -> Response {
    if exchange.request_id.is_none() {
        return finish_plain(response, exchange);
    }
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with("application/json") {
        json(response, exchange).await
    } else if content_type.starts_with("text/event-stream") {
        sse(response, exchange).await
    } else {
        finish_plain(response, exchange)
    }
}

/// A response no fault touches (202 for a notification, an error from the MCP layer): sent as is.
fn finish_plain(response: Response, mut exchange: Exchange) -> Response {
    exchange.end();
    response
}

async fn json(response: Response, mut exchange: Exchange) -> Response {
    let (mut parts, inner) = response.into_parts();
    let bytes = match http_body_util::Limited::new(inner, MAX_JSON_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return rpc_error(StatusCode::INTERNAL_SERVER_ERROR, -32603, "response body unreadable", None);
        }
    };
    let frame = Frame::parse(bytes);
    let (fired, actions) = exchange.engine.outbound_fired(&frame);
    if let Some(observer) = &exchange.observer {
        observer(&frame, fired.as_ref(), &actions);
    }
    match actions.as_slice() {
        // A reply that overtakes one held by `out_of_order` stays a plain JSON body; the held reply may go once
        // this one is on its way.
        [WireAction::Send(out), releases @ ..] if releases.iter().all(|a| matches!(a, WireAction::Release(_))) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            exchange.end();
            for release in releases {
                if let WireAction::Release(release) = release {
                    release.fire();
                }
            }
            Response::from_parts(parts, Body::from(out.clone()))
        }
        [WireAction::HttpStatus { status, retry_after_sec, body }, ..] => {
            exchange.end();
            status_response(*status, *retry_after_sec, body.clone())
        }
        _ => {
            // Several frames, a pause, a close or nothing at all: only an event stream can carry them.
            let (outlet, queue) = Outlet::new();
            outlet.send(actions.iter().flat_map(|a| render::sse(a, None)).collect());
            if fired == Some(FaultKind::Timeout) {
                hold_open(outlet, exchange.shutdown.clone());
            } else {
                drop(outlet);
            }
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            Response::from_parts(parts, writer(queue, exchange))
        }
    }
}

enum Head {
    Stream,
    Status(Response),
    /// The first message's fault closes the stream: nothing queued before it (a priming event) is sent, so the
    /// client gets no event id to resume from and sees the stream break, deterministically.
    Abort,
}

async fn sse(response: Response, mut exchange: Exchange) -> Response {
    let (parts, inner) = response.into_parts();
    let (outlet, queue) = Outlet::new();
    let finish = CancellationToken::new();
    if let (Some(streams), Some(id)) = (&exchange.streams, &exchange.request_id) {
        streams.link(id.clone(), StreamLink { outlet: outlet.clone(), finish: finish.clone() });
    }
    let (head_tx, head_rx) = oneshot::channel();
    let unlink = exchange.streams.clone().zip(exchange.request_id.clone());
    let pumping = Pumping { engine: exchange.engine.clone(), observer: exchange.observer.clone(), holding: false };
    tokio::spawn(pump(inner, pumping, outlet, head_tx, finish, exchange.shutdown.clone(), unlink));
    match head_rx.await {
        Ok(Head::Status(response)) => {
            exchange.end();
            response
        }
        Ok(Head::Abort) => {
            drop(queue);
            let request_id = exchange.request_id.as_ref().map(MessageId::to_value);
            exchange.recorder.record(Event::Transport {
                outcome: TransportEventKind::ClosureRequested,
                request_id: request_id.clone(),
                detail: Some("http: aborting the response stream".into()),
            });
            exchange.end();
            exchange.recorder.record(Event::Transport {
                outcome: TransportEventKind::Closed,
                request_id,
                detail: None,
            });
            let broken =
                futures::stream::once(async { Err::<Bytes, _>(std::io::Error::other("faultlab: disconnect fault")) });
            Response::from_parts(parts, Body::from_stream(broken))
        }
        Ok(Head::Stream) | Err(_) => Response::from_parts(parts, writer(queue, exchange)),
    }
}

/// Reads the MCP layer's event stream, passes each event through the engine, and queues the result for the writer.
/// What the event pump needs from the exchange.
struct Pumping {
    engine: Arc<Engine>,
    observer: Option<FrameObserver>,
    /// A `timeout` swallowed the reply: the stream stays open until the client gives up.
    holding: bool,
}

async fn pump(
    mut inner: Body,
    mut pumping: Pumping,
    outlet: Outlet,
    head: oneshot::Sender<Head>,
    finish: CancellationToken,
    shutdown: CancellationToken,
    unlink: Option<(Arc<dyn StreamRegistry>, MessageId)>,
) {
    let mut head = Some(head);
    let mut decoder = SseDecoder::default();
    let mut buf = BytesMut::new();
    'read: loop {
        let chunk = tokio::select! {
            chunk = inner.frame() => chunk,
            () = outlet.closed() => break,
            () = finish.cancelled() => break,
            () = shutdown.cancelled() => break,
        };
        let at_end = match chunk {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                }
                false
            }
            _ => true,
        };
        loop {
            let event = if at_end { decoder.decode_eof(&mut buf) } else { decoder.decode(&mut buf) };
            let Ok(Some(event)) = event else { break };
            if !forward(event, &mut pumping, &outlet, &mut head) {
                break 'read;
            }
        }
        if at_end {
            break;
        }
    }
    if let Some((streams, id)) = unlink {
        streams.unlink(&id);
    }
    if let Some(head) = head.take() {
        let _ = head.send(Head::Stream);
    }
    if pumping.holding {
        hold_open(outlet, shutdown);
    }
}

/// Keeps a response stream open (nothing more is written) until the client goes away or the server shuts down:
/// how a `timeout` fault holds a request open over HTTP.
fn hold_open(outlet: Outlet, shutdown: CancellationToken) {
    tokio::spawn(async move {
        tokio::select! {
            () = outlet.closed() => {}
            () = shutdown.cancelled() => {}
        }
    });
}

/// Queues one event (changed or not). False when the response has been replaced by an HTTP status.
fn forward(event: SseEvent, pumping: &mut Pumping, outlet: &Outlet, head: &mut Option<oneshot::Sender<Head>>) -> bool {
    let Some(data) = event.data.as_deref().filter(|d| !d.is_empty()) else {
        outlet.send(vec![Step::Write(event.raw)]);
        return true;
    };
    let frame = Frame::parse(Bytes::copy_from_slice(data.as_bytes()));
    let (fired, actions) = pumping.engine.outbound_fired(&frame);
    if let Some(observer) = &pumping.observer {
        observer(&frame, fired.as_ref(), &actions);
    }
    pumping.holding |= fired == Some(FaultKind::Timeout);
    let steps: Vec<Step> = match actions.as_slice() {
        [WireAction::Send(out)] if out == frame.bytes() => vec![Step::Write(event.raw.clone())],
        _ => actions.iter().flat_map(|a| render::sse(a, event.id.as_deref())).collect(),
    };
    if let Some(first) = head.take() {
        match steps.first() {
            Some(Step::Status { status, retry_after_sec, body }) => {
                let _ = first.send(Head::Status(status_response(*status, *retry_after_sec, body.clone())));
                return false;
            }
            Some(Step::Close) => {
                let _ = first.send(Head::Abort);
                return false;
            }
            _ => {
                let _ = first.send(Head::Stream);
            }
        }
    }
    outlet.send(steps);
    true
}

/// The response body: performs the queued steps in order. A `Close` step aborts the body mid-stream, which makes
/// hyper drop the connection; the client sees the response cut off.
fn writer(mut queue: mpsc::UnboundedReceiver<Batch>, mut exchange: Exchange) -> Body {
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(BODY_CHANNEL);
    tokio::spawn(async move {
        'outer: loop {
            let batch = tokio::select! {
                batch = queue.recv() => batch,
                () = tx.closed() => None,
                () = exchange.shutdown.cancelled() => None,
            };
            let Some(batch) = batch else { break };
            for step in batch {
                match step {
                    Step::Write(bytes) => {
                        if tx.send(Ok(bytes)).await.is_err() {
                            break 'outer;
                        }
                    }
                    Step::Gap(d) => tokio::time::sleep(d).await,
                    Step::Pause(d) => faultlab_engine::clock::precise_sleep(d).await,
                    // Split off by `Outlet::send`; never queued, so nothing to wait for here.
                    Step::Await { .. } => {}
                    Step::Release(release) => release.fire(),
                    Step::Close => {
                        let request_id = exchange.request_id.as_ref().map(MessageId::to_value);
                        exchange.recorder.record(Event::Transport {
                            outcome: TransportEventKind::ClosureRequested,
                            request_id: request_id.clone(),
                            detail: Some("http: aborting the response stream".into()),
                        });
                        let _ = tx.send(Err(std::io::Error::other("faultlab: disconnect fault"))).await;
                        exchange.recorder.record(Event::Transport {
                            outcome: TransportEventKind::Closed,
                            request_id,
                            detail: None,
                        });
                        break 'outer;
                    }
                    // Headers are already out: the status can only be told as a JSON-RPC error event.
                    Step::Status { body, .. } => {
                        let event = SseEvent::message(&String::from_utf8_lossy(&body));
                        if tx.send(Ok(event)).await.is_err() {
                            break 'outer;
                        }
                    }
                }
            }
        }
        exchange.end();
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Body::from_stream(stream)
}

/// The answer for an `http_status` fault.
fn status_response(status: u16, retry_after_sec: Option<u32>, body: Bytes) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer error=\"invalid_token\""));
    }
    if let Some(secs) = retry_after_sec {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}
