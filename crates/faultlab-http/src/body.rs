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
use faultlab_engine::catalogue::Media;
use faultlab_engine::outlet::{Batch, Outlet};
use faultlab_engine::recorder::{Event, TransportEventKind};
use faultlab_engine::render::{self, Step};
use faultlab_engine::{Engine, FaultKind, Recorder, WireAction};
use faultlab_wire::{Frame, Kind, MessageId, SseDecoder, SseEvent};
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

/// Largest JSON body read whole, in bytes (the 64 MiB `oversized` ceiling plus room for the envelope).
const MAX_JSON_BODY_BYTES: usize = 80 * 1024 * 1024;

/// Default ceiling on the JSON response bodies a process holds whole at once (256 MiB: three 64 MiB `oversized`
/// replies and their envelopes).
pub const RESPONSE_MEMORY_BUDGET: usize = 256 * 1024 * 1024;

/// A ceiling on the bytes of JSON response bodies held whole at once, shared by every exchange that uses it (by
/// default one for the whole process). A body that would go past it is not read further: the client gets 503 and
/// the recorder a `frame_rejected` event, instead of the process growing without bound under concurrent large
/// replies. The model endpoint bounds the requests it parses with one of its own.
#[derive(Clone, Debug)]
pub struct Budget {
    limit: usize,
    held: Arc<AtomicUsize>,
}

impl Budget {
    pub fn new(limit: usize) -> Self {
        Self { limit, held: Arc::default() }
    }

    /// The process-wide budget of [`RESPONSE_MEMORY_BUDGET`] bytes.
    pub fn process() -> Self {
        static PROCESS: std::sync::OnceLock<Budget> = std::sync::OnceLock::new();
        PROCESS.get_or_init(|| Budget::new(RESPONSE_MEMORY_BUDGET)).clone()
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// The ceiling, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `bytes`, or `None` (nothing taken) when that would pass the limit.
    pub fn take(&self, bytes: usize) -> Option<Held> {
        let mut held = self.empty_hold();
        held.grow(bytes).then_some(held)
    }

    fn empty_hold(&self) -> Held {
        Held { budget: self.clone(), bytes: 0 }
    }
}

/// Bytes taken from a [`Budget`], given back on drop.
#[derive(Debug)]
pub struct Held {
    budget: Budget,
    bytes: usize,
}

impl Held {
    /// Takes `more` bytes; false (nothing taken) when that would pass the limit.
    pub fn grow(&mut self, more: usize) -> bool {
        let taken = self.budget.held.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
            held.checked_add(more).filter(|total| *total <= self.budget.limit)
        });
        if taken.is_ok() {
            self.bytes += more;
        }
        taken.is_ok()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

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
    budget: Budget,
    /// What the response's body holds of the budget, until the response is over.
    held: Option<Held>,
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
            budget: Budget::process(),
            held: None,
        }
    }

    /// Counts JSON bodies read whole against `budget` instead of the process-wide one.
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
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

/// A response dropped before its end (the client went away) still releases what the exchange held.
impl Drop for Exchange {
    fn drop(&mut self) {
        self.end();
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
    let mut held = exchange.budget.empty_hold();
    let bytes = match read_within(inner, &mut held).await {
        Ok(bytes) => bytes,
        Err(Unread::OverBudget(read)) => return over_budget(&mut exchange, read),
        Err(Unread::Broken) => {
            return rpc_error(StatusCode::INTERNAL_SERVER_ERROR, -32603, "response body unreadable", None);
        }
    };
    let frame = Frame::parse(bytes);
    let (fired, actions) = exchange.engine.outbound_fired(&frame);
    if let Some(observer) = &exchange.observer {
        observer(&frame, fired.as_ref(), &actions);
    }
    // What the fault made of the reply (an `oversized` padding, duplicates) is what stays held until sent; the
    // reply as read is dropped once it is out.
    let made: usize = actions.iter().map(|a| if let WireAction::Send(out) = a { out.len() } else { 0 }).sum();
    let made = made.saturating_sub(held.bytes);
    if !held.grow(made) {
        let total = held.bytes + made;
        drop(actions);
        return over_budget(&mut exchange, total);
    }
    exchange.held = Some(held);
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
            // The budget is given back when the body has been sent (or dropped), not before.
            let held = exchange.held.take();
            let out = futures::stream::once(std::future::ready(Ok::<_, std::io::Error>(out.clone())));
            let release = futures::stream::poll_fn(move |_| {
                let _ = &held;
                std::task::Poll::Ready(None)
            });
            Response::from_parts(parts, Body::from_stream(futures::StreamExt::chain(out, release)))
        }
        [WireAction::HttpStatus { status, retry_after_sec, body, media }, ..] => {
            exchange.end();
            status_response(*status, *retry_after_sec, body.clone(), *media)
        }
        _ => {
            // Several frames, a pause, a close or nothing at all: only an event stream can carry them.
            let (outlet, queue) = Outlet::new();
            outlet.send(actions.iter().flat_map(|a| render::sse(a, None)).collect());
            if matches!(fired, Some(FaultKind::Timeout(_))) {
                hold_open(outlet, exchange.shutdown.clone());
            } else {
                drop(outlet);
            }
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            Response::from_parts(parts, writer(queue, exchange, None))
        }
    }
}

/// The answer when a reply of `size` bytes does not fit the budget: 503, and a `frame_rejected` event.
fn over_budget(exchange: &mut Exchange, size: usize) -> Response {
    let limit = exchange.budget.limit;
    exchange.recorder.record(Event::FrameRejected {
        reason: format!(
            "http: a reply of {size}+ bytes does not fit the response memory budget ({limit} bytes held at most \
             at once); answered 503"
        ),
    });
    exchange.end();
    let id = exchange.request_id.as_ref().map(MessageId::to_value);
    let message = "the reply is too large to hold now (response memory budget exhausted); try again later";
    rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32603, message, id)
}

enum Unread {
    /// Reading on would pass the budget; how many bytes had been read.
    OverBudget(usize),
    Broken,
}

/// Reads a body whole, up to [`MAX_JSON_BODY_BYTES`], taking each chunk from the budget as it arrives.
async fn read_within(mut body: Body, held: &mut Held) -> Result<Bytes, Unread> {
    let mut bytes = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| Unread::Broken)?.into_data() else { continue };
        if bytes.len() + data.len() > MAX_JSON_BODY_BYTES {
            return Err(Unread::Broken);
        }
        if !held.grow(data.len()) {
            return Err(Unread::OverBudget(bytes.len() + data.len()));
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes.freeze())
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
    let unlink = exchange.streams.clone().zip(exchange.request_id.clone());
    let mut pump = Pump {
        inner,
        decoder: SseDecoder::default(),
        buf: BytesMut::new(),
        pumping: Pumping { engine: exchange.engine.clone(), observer: exchange.observer.clone(), holding: false },
        outlet,
        finish,
        shutdown: exchange.shutdown.clone(),
        unlink,
        head: None,
        decided: false,
    };
    // The head waits for the first JSON-RPC message. Reading up to it here, on the request's own task, saves a
    // hand-over on the way of every reply: a one-reply stream leaves with its head and event together.
    let mut more = true;
    while more && pump.head.is_none() {
        more = pump.step().await;
    }
    let head = pump.head.take();
    // The rest of the stream is read by the response body itself, as hyper polls it: one hand-over (from the
    // upstream connection to the client's) instead of two.
    let pump = if more {
        Some(pump)
    } else {
        pump.end();
        None
    };
    match head {
        Some(Head::Status(response)) => {
            exchange.end();
            response
        }
        Some(Head::Abort) => {
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
        Some(Head::Stream) | None => Response::from_parts(parts, writer(queue, exchange, pump)),
    }
}

/// What the event pump needs from the exchange.
struct Pumping {
    engine: Arc<Engine>,
    observer: Option<FrameObserver>,
    /// A `timeout` swallowed the reply: the stream stays open until the client gives up.
    holding: bool,
}

/// Reads the MCP layer's event stream, passes each event through the engine, and queues the result for the writer.
struct Pump {
    inner: Body,
    decoder: SseDecoder,
    buf: BytesMut,
    pumping: Pumping,
    outlet: Outlet,
    finish: CancellationToken,
    shutdown: CancellationToken,
    unlink: Option<(Arc<dyn StreamRegistry>, MessageId)>,
    /// How the response starts, once the first JSON-RPC message has decided it (taken by `sse`).
    head: Option<Head>,
    /// The first JSON-RPC message has passed: later ones do not decide the head.
    decided: bool,
}

impl Pump {
    /// Reads one chunk and forwards the events it completes. False when the stream is over for the pump: the
    /// upstream ended, the client left, or the response was replaced.
    async fn step(&mut self) -> bool {
        let chunk = tokio::select! {
            chunk = self.inner.frame() => chunk,
            () = self.outlet.closed() => return false,
            () = self.finish.cancelled() => return false,
            () = self.shutdown.cancelled() => return false,
        };
        let at_end = match chunk {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.buf.extend_from_slice(&data);
                }
                false
            }
            _ => true,
        };
        loop {
            let event =
                if at_end { self.decoder.decode_eof(&mut self.buf) } else { self.decoder.decode(&mut self.buf) };
            let Ok(Some(event)) = event else { break };
            let head = if self.decided { None } else { Some(&mut self.head) };
            let go_on = forward(event, &mut self.pumping, &self.outlet, head);
            self.decided |= self.head.is_some();
            if !go_on {
                return false;
            }
        }
        !at_end
    }

    /// The upstream's stream is over for the pump: a `timeout` that swallowed the reply keeps the response open.
    fn end(self) {
        if self.pumping.holding {
            hold_open(self.outlet.clone(), self.shutdown.clone());
        }
    }
}

/// However the pump goes (its stream ended, or the client left and the response was dropped), the response stream
/// is unregistered.
impl Drop for Pump {
    fn drop(&mut self) {
        if let Some((streams, id)) = self.unlink.take() {
            streams.unlink(&id);
        }
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

/// Queues one event (changed or not); while `head` is given, the first JSON-RPC message decides it. False when
/// the response has been replaced (by an HTTP status, or a stream broken before it starts).
fn forward(event: SseEvent, pumping: &mut Pumping, outlet: &Outlet, head: Option<&mut Option<Head>>) -> bool {
    let Some(data) = event.data.as_deref().filter(|d| !d.is_empty()) else {
        outlet.send(vec![Step::Write(event.raw)]);
        return true;
    };
    let frame = Frame::parse(Bytes::copy_from_slice(data.as_bytes()));
    let (fired, actions) = pumping.engine.outbound_fired(&frame);
    if let Some(observer) = &pumping.observer {
        observer(&frame, fired.as_ref(), &actions);
    }
    pumping.holding |= matches!(fired, Some(FaultKind::Timeout(_)));
    let steps: Vec<Step> = match actions.as_slice() {
        [WireAction::Send(out)] if out == frame.bytes() => vec![Step::Write(event.raw.clone())],
        _ => actions.iter().flat_map(|a| render::sse(a, event.id.as_deref())).collect(),
    };
    if let Some(head) = head {
        match steps.first() {
            Some(Step::Status { status, retry_after_sec, body, media }) => {
                *head = Some(Head::Status(status_response(*status, *retry_after_sec, body.clone(), *media)));
                return false;
            }
            Some(Step::Close) => {
                *head = Some(Head::Abort);
                return false;
            }
            _ => *head = Some(Head::Stream),
        }
    }
    outlet.send(steps);
    true
}

/// The response body: performs the queued steps in order. A `Close` step aborts the body mid-stream, which makes
/// hyper drop the connection; the client sees the response cut off. The body itself does the work as hyper polls
/// it (no task between the queue and the connection), and the exchange ends when the body does or is dropped.
fn writer(queue: mpsc::UnboundedReceiver<Batch>, exchange: Exchange, pump: Option<Pump>) -> Body {
    let writing = Writing { queue, steps: VecDeque::new(), exchange, pump, closed: false };
    Body::from_stream(futures::stream::unfold(writing, Writing::next))
}

struct Writing {
    queue: mpsc::UnboundedReceiver<Batch>,
    /// What is left of the batch being performed.
    steps: VecDeque<Step>,
    exchange: Exchange,
    /// Reads the rest of the upstream's event stream into `queue`, until it ends.
    pump: Option<Pump>,
    /// A `Close` step has broken the body: nothing more follows.
    closed: bool,
}

impl Writing {
    /// The next chunk of the body, or `None` at its end.
    async fn next(mut self) -> Option<(Result<Bytes, std::io::Error>, Self)> {
        if self.closed {
            return None;
        }
        loop {
            let Some(step) = self.steps.pop_front() else {
                let batch = tokio::select! {
                    biased;
                    batch = self.queue.recv() => batch,
                    more = pump_step(&mut self.pump) => {
                        if !more && let Some(pump) = self.pump.take() {
                            pump.end();
                        }
                        continue;
                    }
                    () = self.exchange.shutdown.cancelled() => None,
                };
                match batch {
                    Some(batch) => self.steps.extend(batch),
                    None => {
                        self.exchange.end();
                        return None;
                    }
                }
                continue;
            };
            match step {
                Step::Write(bytes) => return Some((Ok(bytes), self)),
                Step::Gap(d) => tokio::time::sleep(d).await,
                Step::Pause(d) => faultlab_engine::clock::precise_sleep(d).await,
                // Split off by `Outlet::send`; never queued, so nothing to wait for here.
                Step::Await { .. } => {}
                Step::Release(release) => release.fire(),
                Step::Close => {
                    // One pending poll first: hyper then flushes what is buffered (the head, events already
                    // taken), so the client sees the response start and break off, not a connection closed
                    // before any answer.
                    tokio::task::yield_now().await;
                    let request_id = self.exchange.request_id.as_ref().map(MessageId::to_value);
                    self.exchange.recorder.record(Event::Transport {
                        outcome: TransportEventKind::ClosureRequested,
                        request_id: request_id.clone(),
                        detail: Some("http: aborting the response stream".into()),
                    });
                    // The error is the last thing hyper takes from the body; it then drops the connection.
                    self.exchange.recorder.record(Event::Transport {
                        outcome: TransportEventKind::Closed,
                        request_id,
                        detail: None,
                    });
                    self.exchange.end();
                    self.closed = true;
                    return Some((Err(std::io::Error::other("faultlab: disconnect fault")), self));
                }
                // Headers are already out: the status can only be told as a JSON-RPC error event.
                Step::Status { body, .. } => {
                    return Some((Ok(SseEvent::message(&String::from_utf8_lossy(&body))), self));
                }
            }
        }
    }
}

/// One step of the pump, if there is one still reading; otherwise never ready.
async fn pump_step(pump: &mut Option<Pump>) -> bool {
    match pump {
        Some(pump) => pump.step().await,
        None => std::future::pending().await,
    }
}

/// The answer for a status fault (`http_status` and its presets, `html_page`, `not_jsonrpc`, `protocol_error`).
pub fn status_response(status: u16, retry_after_sec: Option<u32>, body: Bytes, media: Media) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media.content_type()));
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer error=\"invalid_token\""));
    }
    if let Some(secs) = retry_after_sec {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultlab_wire::sync::lock;
    use futures::channel::mpsc::{UnboundedSender, unbounded};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Remembers what was linked and unlinked, in order.
    #[derive(Default)]
    struct Registry(Mutex<Vec<String>>);

    impl StreamRegistry for Registry {
        fn link(&self, id: MessageId, _: StreamLink) {
            lock(&self.0).push(format!("link {}", id.as_json()));
        }
        fn unlink(&self, id: &MessageId) {
            lock(&self.0).push(format!("unlink {}", id.as_json()));
        }
    }

    impl Registry {
        fn seen(&self) -> Vec<String> {
            lock(&self.0).clone()
        }
    }

    /// The exchange for request 1, registered in `registry`; `ended` is set when it ends.
    fn exchange(registry: &Arc<Registry>, ended: &Arc<AtomicBool>) -> Exchange {
        let request = Frame::parse(Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#));
        let engine = Arc::new(Engine::new(Recorder::memory()));
        let ended = ended.clone();
        Exchange::new(&request, engine, &CancellationToken::new())
            .with_streams(registry.clone() as Arc<dyn StreamRegistry>)
            .on_end(move || ended.store(true, Ordering::SeqCst))
    }

    /// An upstream SSE response whose body is whatever is sent on the returned channel.
    fn upstream() -> (UnboundedSender<Result<Bytes, std::io::Error>>, Response) {
        let (tx, rx) = unbounded();
        let mut response = Response::new(Body::from_stream(rx));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        (tx, response)
    }

    fn event(json: &str) -> Result<Bytes, std::io::Error> {
        Ok(Bytes::from(format!("event: message\ndata: {json}\n\n")))
    }

    const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#;
    const REPLY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

    #[tokio::test]
    async fn a_stream_is_relayed_whole_and_ends_with_its_upstream() {
        let (registry, ended) = (Arc::new(Registry::default()), Arc::new(AtomicBool::new(false)));
        let (tx, response) = upstream();
        tx.unbounded_send(event(PROGRESS)).unwrap();
        let wrapped = wrap(response, exchange(&registry, &ended)).await;
        // Sent after the head has gone: read by the body itself.
        tx.unbounded_send(event(REPLY)).unwrap();
        drop(tx);
        let body = wrapped.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert_eq!(text, format!("event: message\ndata: {PROGRESS}\n\nevent: message\ndata: {REPLY}\n\n"));
        assert!(ended.load(Ordering::SeqCst), "the exchange ended with its body");
        assert_eq!(registry.seen(), ["link 1", "unlink 1"]);
    }

    fn json_reply(id: u32, pad: usize) -> Response {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"pad":"{}"}}}}"#, "x".repeat(pad));
        let mut response = Response::new(Body::from(body));
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }

    #[tokio::test]
    async fn concurrent_large_json_replies_beyond_the_budget_get_503_and_an_event() {
        let budget = Budget::new(1000);
        let recorder = Recorder::memory();
        let exchange = |id: u32| {
            let request = Frame::parse(Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"}}"#)));
            let engine = Arc::new(Engine::new(recorder.clone()));
            Exchange::new(&request, engine, &CancellationToken::new()).with_budget(budget.clone())
        };
        let first = wrap(json_reply(1, 600), exchange(1)).await;
        assert_eq!(first.status(), StatusCode::OK);
        assert!(budget.held() > 600, "the first reply holds its bytes until it is sent");
        let second = wrap(json_reply(2, 600), exchange(2)).await;
        assert_eq!(second.status(), StatusCode::SERVICE_UNAVAILABLE);
        let error: serde_json::Value =
            serde_json::from_slice(&second.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(error["id"], 2);
        assert!(recorder.records().iter().any(|r| format!("{r:?}").contains("response memory")));
        let body = first.into_body().collect().await.unwrap().to_bytes();
        assert!(body.starts_with(br#"{"jsonrpc":"2.0","id":1"#));
        assert_eq!(budget.held(), 0, "a sent reply gives its bytes back");
        assert_eq!(wrap(json_reply(3, 600), exchange(3)).await.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_client_that_leaves_mid_stream_unregisters_it() {
        let (registry, ended) = (Arc::new(Registry::default()), Arc::new(AtomicBool::new(false)));
        let (tx, response) = upstream();
        tx.unbounded_send(event(PROGRESS)).unwrap();
        let mut body = wrap(response, exchange(&registry, &ended)).await.into_body();
        let first = body.frame().await.expect("a frame").unwrap().into_data().unwrap();
        assert!(first.starts_with(b"event: message"), "{first:?}");
        // The client goes away while the upstream's stream is still open (`tx` is alive).
        drop(body);
        assert_eq!(registry.seen(), ["link 1", "unlink 1"]);
        assert!(ended.load(Ordering::SeqCst), "a dropped response still ends its exchange");
        drop(tx);
    }

    #[tokio::test]
    async fn a_client_that_leaves_before_the_first_message_unregisters_it() {
        let (registry, ended) = (Arc::new(Registry::default()), Arc::new(AtomicBool::new(false)));
        let (tx, response) = upstream();
        let waiting = tokio::spawn(wrap(response, exchange(&registry, &ended)));
        while registry.seen().is_empty() {
            tokio::task::yield_now().await;
        }
        // hyper drops the handler's future when its client disconnects.
        waiting.abort();
        assert!(waiting.await.unwrap_err().is_cancelled());
        assert_eq!(registry.seen(), ["link 1", "unlink 1"]);
        assert!(ended.load(Ordering::SeqCst));
        drop(tx);
    }
}
