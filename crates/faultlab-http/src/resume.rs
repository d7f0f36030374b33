//! Resumable response streams (2025-11-25, "Resumability and Redelivery"), and the stream faults.
//!
//! A POST answered with an SSE stream gets a *log*: a task (the pump) reads the server's events into it, and the
//! client's connection is one reader of the log. Every event the client sees carries an id `<stream>-<index>`
//! (unique in the front, so in the session; the stream is a counter of the front, the index counts that stream's
//! events), the
//! first is a *priming* event (an id, `retry:` and empty data) so a client can resume before any message.
//! Because the pump, not the client's connection, reads the server, a client that loses its connection loses
//! nothing: a `GET` with `Last-Event-ID: <stream>-<index>` is another reader of the same log from `index + 1`,
//! replaying what it missed and then following the stream live until its reply. Only that stream is replayed.
//!
//! **Bounds.** A session keeps the logs of at most [`MAX_SESSION_STREAMS`] finished streams and
//! [`MAX_SESSION_BYTES`] of their events; all sessions of a front together hold at most [`MAX_TOTAL_BYTES`] (the
//! [`Budget`] of the front). Past a bound, the oldest finished log of the session is forgotten first; a stream
//! whose own events do not fit is forgotten when it ends (a live stream's events are what delivers them, so they
//! are held while it is open, and an event the total budget cannot hold ends the stream with an abort). A
//! resume request holds no memory but its reader: a flood of them grows nothing. A `Last-Event-ID` that is
//! malformed, names a stream the session does not have (never had, forgotten, or another session's) or an index
//! not yet sent gets **404**, never a replay. A log nobody has read for [`ABANDONED_AFTER`] stops being pumped,
//! as a dropped connection stopped it before resumption existed.
//!
//! **Faults.** A [`Plan`] says how one stream misbehaves; it is fixed when the request arrives (the `faultlab
//! serve` tool called, or a proxy rule), so it acts on the very first byte.

use crate::body::{Budget, Held};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::ReplayVariant;
use faultlab_engine::recorder::Delivery;
use faultlab_wire::SseDecoder;
use faultlab_wire::sync::lock;
use futures::StreamExt as _;
use http::{HeaderValue, StatusCode, header};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::codec::Decoder as _;
use tokio_util::sync::CancellationToken;

/// The `retry:` (reconnection delay) a priming event carries, in milliseconds (rmcp's default, 3 s).
pub const RETRY_MS: u64 = 3_000;
/// Finished streams a session keeps for resumption.
pub const MAX_SESSION_STREAMS: usize = 32;
/// Bytes of finished streams' events a session keeps for resumption (4 MiB).
pub const MAX_SESSION_BYTES: usize = 4 * 1024 * 1024;
/// Bytes of events all sessions of one front hold together (64 MiB).
pub const MAX_TOTAL_BYTES: usize = 64 * 1024 * 1024;
/// A stream no client has read for this long stops being pumped (60 s).
pub const ABANDONED_AFTER: Duration = Duration::from_secs(60);
/// Longest `Last-Event-ID` read (two `u64`s and a dash); anything longer is malformed.
const MAX_EVENT_ID_LEN: usize = 41;
/// Largest event the pump reads, in bytes (16 MiB, the stdio line limit).
const MAX_EVENT_BYTES: usize = faultlab_wire::sse::MAX_EVENT_BYTES;

/// An event id as the lab writes it: `<stream>-<index>`, both decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventId {
    pub stream: u64,
    pub index: u64,
}

impl EventId {
    /// Reads an id; `None` for anything not written by [`EventId`]'s `Display` (leading `+`, zeros, spaces...).
    pub fn parse(text: &str) -> Option<Self> {
        if text.len() > MAX_EVENT_ID_LEN {
            return None;
        }
        let (stream, index) = text.split_once('-')?;
        let number = |s: &str| {
            let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
            canonical.then(|| s.parse::<u64>().ok()).flatten()
        };
        Some(Self { stream: number(stream)?, index: number(index)? })
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.stream, self.index)
    }
}

/// What the first `GET` resuming a stream gets instead of its replay (once, the next resume is answered right;
/// a cut again cuts that many resumes in a row; a refusal by status refuses every resume of the stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeFault {
    /// `200 text/event-stream` that closes before any id-bearing event, for this many resumes in a row (1 or more).
    CutAgain(u32),
    /// The events the client already saw (from the first message to the one it named) are sent again, with
    /// their ids, before the missed ones.
    Duplicate,
    /// The last message of another stream of the session is sent first, with its id (the spec forbids it).
    Foreign,
    /// Answered with this status (404 or 405) instead, every time.
    Status(u16),
}

/// How one stream misbehaves. The default is a healthy resumable stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Events carry ids and the stream is primed; `false`: no id anywhere, no priming (not resumable).
    pub ids: bool,
    /// The priming event's `retry:` in milliseconds; `None` writes no `retry:` line.
    pub retry_ms: Option<u64>,
    /// The first connection is closed (cleanly: the body ends) after the priming event and this many messages,
    /// and always before the reply; the reply stays in the log for a resume.
    pub cut_after: Option<usize>,
    /// The last event before the cut carries an explicit empty `id:` line (which clears a client's last event
    /// id, so a correct client resumes without `Last-Event-ID`).
    pub empty_id_before_cut: bool,
    pub on_resume: Option<ResumeFault>,
}

impl Plan {
    /// The plan of a catalogue stream fault ([`FaultKind::on_stream`]); `None` for any other fault. The one
    /// reading of those faults' parameters: `faultlab serve`'s stream tools and the proxy's rules both go through
    /// it.
    pub fn of(fault: &FaultKind) -> Option<Self> {
        let cut = |after: u64, retry_ms: Option<u64>| Self {
            cut_after: Some(usize::try_from(after).unwrap_or(usize::MAX)),
            retry_ms: retry_ms.or(Some(RETRY_MS)),
            ..Self::default()
        };
        Some(match fault {
            FaultKind::StreamCut(c) => Self { ids: c.ids, ..cut(c.after_events, c.retry_ms) },
            FaultKind::StreamCutAgain(c) => {
                Self { on_resume: Some(ResumeFault::CutAgain(c.resumes.unwrap_or(1))), ..cut(0, c.retry_ms) }
            }
            // Absent means no `retry:` line here, not the default.
            FaultKind::StreamRetry(c) => Self { retry_ms: c.retry_ms, ..cut(0, None) },
            FaultKind::EmptyEventId(c) => Self { empty_id_before_cut: true, ..cut(1, c.retry_ms) },
            FaultKind::StreamReplay(c) => match c.variant {
                ReplayVariant::Duplicate => Self { on_resume: Some(ResumeFault::Duplicate), ..cut(1, c.retry_ms) },
                ReplayVariant::Foreign => Self { on_resume: Some(ResumeFault::Foreign), ..cut(0, c.retry_ms) },
            },
            FaultKind::ResumeRefused(c) => {
                Self { on_resume: Some(ResumeFault::Status(c.status)), ..cut(0, c.retry_ms) }
            }
            _ => return None,
        })
    }
}

impl Default for Plan {
    fn default() -> Self {
        Self { ids: true, retry_ms: Some(RETRY_MS), cut_after: None, empty_id_before_cut: false, on_resume: None }
    }
}

#[derive(Debug, Clone)]
struct Stored {
    event: Option<String>,
    data: String,
    reply: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Clean,
    Aborted,
}

struct LogState {
    /// Index 0 is the priming event (empty data).
    events: Vec<Stored>,
    bytes: usize,
    end: Option<End>,
    held: Held,
    /// An event did not fit the session's bound: forget the log when it ends.
    oversize: bool,
}

/// Told each time a reader writes a log's reply to a client, with where (see [`Streams::record_watched`]).
pub type OnReply = Arc<dyn Fn(Delivery) + Send + Sync>;

/// One stream's events.
pub struct Log {
    stream: u64,
    plan: Plan,
    state: Mutex<LogState>,
    changed: Notify,
    resume_fault: Mutex<Option<ResumeFault>>,
    readers: AtomicUsize,
    readers_changed: Notify,
    /// Requests that resumed this stream so far (refused and cut ones included); the next one's number is one
    /// more.
    resumes: AtomicU32,
    on_reply: Option<OnReply>,
}

impl Log {
    /// Waits until the log holds a message or has ended; the end if it ended with no message.
    async fn first_message_or_end(&self) -> Option<End> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let state = lock(&self.state);
                if state.events.len() > 1 {
                    return None;
                }
                if let Some(end) = state.end {
                    return Some(end);
                }
            }
            changed.await;
        }
    }
}

/// The resumable streams of one session.
pub struct Streams {
    /// Shared by every session of a front, so a stream number names one stream of one session: another
    /// session's id is unknown here, not a stream of ours.
    next: Arc<AtomicU64>,
    logs: Mutex<VecDeque<Arc<Log>>>,
    budget: Budget,
    resumes: AtomicU64,
}

impl Streams {
    /// Streams whose events are counted against `budget` (one per front, of [`MAX_TOTAL_BYTES`]) and numbered
    /// from `numbers` (one per front).
    pub fn new(budget: Budget, numbers: Arc<AtomicU64>) -> Self {
        Self { next: numbers, logs: Mutex::default(), budget, resumes: AtomicU64::new(0) }
    }

    /// Bytes of events this session holds now.
    pub fn held_bytes(&self) -> usize {
        lock(&self.logs).iter().map(|log| lock(&log.state).bytes).sum()
    }

    /// Logs this session holds now (open and finished).
    pub fn len(&self) -> usize {
        lock(&self.logs).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resume requests answered so far (replays and refusals alike).
    pub fn resumes(&self) -> u64 {
        self.resumes.load(Ordering::SeqCst)
    }

    /// Makes an SSE `response` resumable: its events are pumped into a new log and the client reads that log.
    /// Any other response is returned unchanged.
    pub async fn record(self: &Arc<Self>, response: Response, plan: Plan, shutdown: &CancellationToken) -> Response {
        self.record_watched(response, plan, shutdown, None).await
    }

    /// As [`Streams::record`]; `on_reply` is told each time a reader writes the stream's reply to a client: on the
    /// POST's own response or on which resume. Not told for a response that is not SSE (returned unchanged).
    pub async fn record_watched(
        self: &Arc<Self>,
        response: Response,
        plan: Plan,
        shutdown: &CancellationToken,
        on_reply: Option<OnReply>,
    ) -> Response {
        self.record_numbered(response, plan, shutdown, on_reply).await.0
    }

    /// As [`Streams::record_watched`], with the stream's number (`None`: not SSE, returned unchanged), so that the
    /// caller can tell a later resume of this stream from its `Last-Event-ID` ([`EventId::stream`]).
    pub async fn record_numbered(
        self: &Arc<Self>,
        response: Response,
        plan: Plan,
        shutdown: &CancellationToken,
        on_reply: Option<OnReply>,
    ) -> (Response, Option<u64>) {
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            return (response, None);
        }
        let stream = self.next.fetch_add(1, Ordering::SeqCst);
        let log = Arc::new(Log {
            stream,
            plan: plan.clone(),
            state: Mutex::new(LogState {
                events: vec![Stored { event: None, data: String::new(), reply: false }],
                bytes: 0,
                end: None,
                held: self.budget.take(0).expect("an empty hold always fits"),
                oversize: false,
            }),
            changed: Notify::new(),
            resume_fault: Mutex::new(plan.on_resume),
            readers: AtomicUsize::new(0),
            readers_changed: Notify::new(),
            resumes: AtomicU32::new(0),
            on_reply,
        });
        lock(&self.logs).push_back(log.clone());
        let (mut parts, body) = response.into_parts();
        tokio::spawn(pump(self.clone(), log.clone(), body, shutdown.clone()));
        // The head waits for the server's first message (the body middleware held it until then, so this is at
        // once): a stream the server breaks before any message breaks before its head, as without resumption,
        // instead of priming a stream that can never answer.
        if log.first_message_or_end().await == Some(End::Aborted) {
            let broken = futures::stream::once(async { Err::<Bytes, _>(aborted()) });
            return (Response::from_parts(parts, Body::from_stream(broken)), Some(stream));
        }
        // The client reads the log; its length is not known, and intermediaries must not buffer it.
        parts.headers.remove(header::CONTENT_LENGTH);
        let reader = Reader::new(log, 1, Mode::First, Delivery::response());
        (Response::from_parts(parts, reader.into_body()), Some(stream))
    }

    /// Counts a resume of the stream `last_event_id` names that the caller answered itself instead of
    /// [`Streams::resume`] (a proxy rule acting at the resume), so the resume that later carries the reply has the
    /// number the client's count gives it ([`Delivery::resume`]).
    pub fn count_resume(&self, last_event_id: &[u8]) {
        self.resumes.fetch_add(1, Ordering::SeqCst);
        let Some(id) = std::str::from_utf8(last_event_id).ok().and_then(EventId::parse) else { return };
        if let Some(log) = lock(&self.logs).iter().find(|log| log.stream == id.stream) {
            log.resumes.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Whether `last_event_id` is written as this front writes its ids and names a stream number it has given out
    /// (to this session or another, kept or forgotten): a resume [`Streams::resume`] must answer, never one to
    /// pass on (the proxy forwards any other `Last-Event-ID` to its upstream, whose ids they are).
    pub fn issued(&self, last_event_id: &[u8]) -> bool {
        issued(&self.next, last_event_id)
    }

    /// Answers a `GET` carrying `Last-Event-ID`: the missed events of that stream only, or 404.
    pub fn resume(&self, last_event_id: &[u8]) -> Response {
        self.resumes.fetch_add(1, Ordering::SeqCst);
        let not_found = || {
            crate::rpc_error(
                StatusCode::NOT_FOUND,
                -32001,
                "Not found: Last-Event-ID names no event of this session's streams",
                None,
            )
        };
        let Some(id) = std::str::from_utf8(last_event_id).ok().and_then(EventId::parse) else {
            return not_found();
        };
        let Some(log) = lock(&self.logs).iter().find(|log| log.stream == id.stream).cloned() else {
            return not_found();
        };
        let Ok(index) = usize::try_from(id.index) else { return not_found() };
        {
            let state = lock(&log.state);
            // A stream the server broke (an abort, not a cut) will never carry its reply: nothing to resume.
            if index >= state.events.len() || state.end == Some(End::Aborted) {
                return not_found();
            }
        }
        let number = log.resumes.fetch_add(1, Ordering::SeqCst).saturating_add(1);
        let via = Delivery::resume(number, &id.to_string());
        let fault = {
            let mut armed = lock(&log.resume_fault);
            match *armed {
                // A server that refuses a resume refuses every one: it has lost the stream or cannot resume.
                Some(ResumeFault::Status(status)) => Some(ResumeFault::Status(status)),
                // Each resume of the run uses one; the one after the last replays.
                Some(ResumeFault::CutAgain(left)) if left > 1 => {
                    *armed = Some(ResumeFault::CutAgain(left - 1));
                    Some(ResumeFault::CutAgain(left))
                }
                _ => armed.take(),
            }
        };
        let mode = match fault {
            Some(ResumeFault::Status(405)) => {
                let mut response = (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").into_response();
                response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
                return response;
            }
            Some(ResumeFault::Status(_)) => return not_found(),
            Some(ResumeFault::CutAgain(_)) => {
                return sse_response(Body::from(Bytes::new()));
            }
            Some(ResumeFault::Duplicate) => Mode::Resume { prelude: Vec::new(), from_first: true },
            Some(ResumeFault::Foreign) => {
                let foreign = lock(&self.logs)
                    .iter()
                    .filter(|other| other.stream != log.stream)
                    .filter_map(|other| {
                        let state = lock(&other.state);
                        let last = state.events.len().checked_sub(1).filter(|i| *i > 0)?;
                        Some(render(&other.plan, other.stream, last, &state.events[last], false))
                    })
                    .next_back();
                Mode::Resume { prelude: foreign.into_iter().collect(), from_first: false }
            }
            None => Mode::Resume { prelude: Vec::new(), from_first: false },
        };
        let from = match mode {
            Mode::Resume { from_first: true, .. } => 1,
            _ => index + 1,
        };
        sse_response(Reader::new(log, from, mode, via).into_body())
    }

    /// Keeps the session's finished logs within its bounds, oldest forgotten first.
    fn enforce_bounds(&self) {
        let mut logs = lock(&self.logs);
        logs.retain(|log| {
            let state = lock(&log.state);
            !(state.end.is_some() && state.oversize)
        });
        loop {
            let finished = logs.iter().filter(|log| lock(&log.state).end.is_some()).count();
            let bytes: usize =
                logs.iter().filter(|log| lock(&log.state).end.is_some()).map(|log| lock(&log.state).bytes).sum();
            if finished <= MAX_SESSION_STREAMS && bytes <= MAX_SESSION_BYTES {
                return;
            }
            let Some(oldest) = logs.iter().position(|log| lock(&log.state).end.is_some()) else { return };
            logs.remove(oldest);
        }
    }

    /// Forgets the oldest finished log to make room in the total budget; false when there is none.
    fn forget_oldest_finished(&self) -> bool {
        let mut logs = lock(&self.logs);
        match logs.iter().position(|log| lock(&log.state).end.is_some()) {
            Some(oldest) => {
                logs.remove(oldest);
                true
            }
            None => false,
        }
    }
}

/// Whether `last_event_id` is an id of the form [`EventId`] writes whose stream number `numbers` (a front's stream
/// counter, as handed to [`Streams::new`]) has given out.
pub fn issued(numbers: &AtomicU64, last_event_id: &[u8]) -> bool {
    std::str::from_utf8(last_event_id)
        .ok()
        .and_then(EventId::parse)
        .is_some_and(|id| id.stream < numbers.load(Ordering::SeqCst))
}

fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Reads the server's SSE body into `log` until it ends, the front shuts down, or nobody has read the log for
/// [`ABANDONED_AFTER`].
async fn pump(streams: Arc<Streams>, log: Arc<Log>, body: Body, shutdown: CancellationToken) {
    let mut chunks = body.into_data_stream();
    let mut decoder = SseDecoder::new(MAX_EVENT_BYTES);
    let mut buffer = bytes::BytesMut::new();
    let end = loop {
        let next = tokio::select! {
            next = chunks.next() => next,
            () = abandoned(&log) => break End::Aborted,
            () = shutdown.cancelled() => break End::Aborted,
        };
        match next {
            None => break End::Clean,
            Some(Err(_)) => break End::Aborted,
            Some(Ok(chunk)) => {
                buffer.extend_from_slice(&chunk);
                let mut fits = true;
                loop {
                    match decoder.decode(&mut buffer) {
                        Ok(Some(event)) => {
                            // rmcp's own priming event and keep-alive comments carry no data worth keeping: the
                            // log has its own priming event, and its readers their own liveness.
                            let Some(data) = event.data.filter(|d| !d.is_empty()) else { continue };
                            fits &= append(&streams, &log, Stored { reply: is_reply(&data), event: event.event, data });
                        }
                        Ok(None) => break,
                        Err(_) => {
                            fits = false;
                            break;
                        }
                    }
                }
                if !fits {
                    break End::Aborted;
                }
            }
        }
    };
    lock(&log.state).end = Some(end);
    log.changed.notify_waiters();
    streams.enforce_bounds();
}

/// Waits until the log has had no reader for [`ABANDONED_AFTER`].
async fn abandoned(log: &Log) {
    loop {
        let changed = log.readers_changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if log.readers.load(Ordering::SeqCst) == 0 {
            tokio::select! {
                () = tokio::time::sleep(ABANDONED_AFTER) => return,
                () = &mut changed => {}
            }
        } else {
            changed.await;
        }
    }
}

/// Whether an event's data is a reply (an id and no method). Read without building a value: a 64 MiB reply is
/// scanned, not copied into a tree.
fn is_reply(data: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Shape {
        method: Option<serde::de::IgnoredAny>,
        id: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Shape>(data).is_ok_and(|shape| shape.method.is_none() && shape.id.is_some())
}

/// Adds one event to the log; false when the total budget cannot hold it even after forgetting this session's
/// finished logs.
fn append(streams: &Streams, log: &Log, stored: Stored) -> bool {
    let size = stored.data.len() + stored.event.as_ref().map_or(0, String::len);
    loop {
        let mut state = lock(&log.state);
        if state.held.grow(size) {
            state.bytes += size;
            state.oversize |= state.bytes > MAX_SESSION_BYTES;
            state.events.push(stored);
            drop(state);
            log.changed.notify_waiters();
            return true;
        }
        drop(state);
        if !streams.forget_oldest_finished() {
            return false;
        }
    }
}

/// The bytes of event `index` of a stream as a reader writes them.
fn render(plan: &Plan, stream: u64, index: usize, stored: &Stored, empty_id: bool) -> Bytes {
    let mut out = String::with_capacity(stored.data.len() + 48);
    if let Some(event) = &stored.event {
        let _ = writeln!(out, "event: {event}");
    }
    if empty_id {
        out.push_str("id:\n");
    } else if plan.ids {
        let _ = writeln!(out, "id: {}", EventId { stream, index: index as u64 });
    }
    if index == 0
        && let Some(retry) = plan.retry_ms
    {
        let _ = writeln!(out, "retry: {retry}");
    }
    for line in stored.data.split('\n') {
        let _ = writeln!(out, "data: {line}");
    }
    out.push('\n');
    Bytes::from(out)
}

enum Mode {
    /// The POST's own connection: the plan's cut applies.
    First,
    /// A resuming GET: `prelude` goes first (a fault's foreign event).
    Resume { prelude: Vec<Bytes>, from_first: bool },
}

/// One reader of a log: a client connection.
struct Reader {
    log: Arc<Log>,
    next: usize,
    mode: Mode,
    /// Messages (not the priming event) this reader has written.
    sent: usize,
    /// Which connection this reader writes to, as the log's `on_reply` is told.
    via: Delivery,
}

impl Reader {
    fn new(log: Arc<Log>, next: usize, mode: Mode, via: Delivery) -> Self {
        log.readers.fetch_add(1, Ordering::SeqCst);
        log.readers_changed.notify_waiters();
        let next = if matches!(mode, Mode::First) && log.plan.ids { 0 } else { next };
        Self { log, next, mode, sent: 0, via }
    }

    fn into_body(self) -> Body {
        let stream = futures::stream::unfold(self, |mut reader| async move {
            let item = reader.next_item().await?;
            Some((item, reader))
        });
        Body::from_stream(stream)
    }

    async fn next_item(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if let Mode::Resume { prelude, .. } = &mut self.mode
            && !prelude.is_empty()
        {
            return Some(Ok(prelude.remove(0)));
        }
        loop {
            let changed = self.log.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let broken = {
                let state = lock(&self.log.state);
                // The POST's own stream starts when the server's first message does (the body middleware holds
                // the headers until then): a stream the server breaks before any message breaks before its
                // head, as it did before resumption existed, instead of priming a stream that can never answer.
                let unprimed = matches!(self.mode, Mode::First) && self.next == 0 && state.events.len() < 2;
                if unprimed && state.end == Some(End::Aborted) {
                    return Some(Err(aborted()));
                }
                if let Some(stored) = state.events.get(self.next).filter(|_| !unprimed || state.end.is_some()) {
                    if matches!(self.mode, Mode::First)
                        && self.next > 0
                        && let Some(limit) = self.log.plan.cut_after
                        && (self.sent >= limit || stored.reply)
                    {
                        // The cut: the body ends cleanly here, as a load balancer closing an idle stream would.
                        return None;
                    }
                    let empty_id = matches!(self.mode, Mode::First)
                        && self.log.plan.empty_id_before_cut
                        && self.log.plan.cut_after.is_some_and(|limit| self.sent + 1 == limit)
                        && self.next > 0;
                    let bytes = render(&self.log.plan, self.log.stream, self.next, stored, empty_id);
                    let reply = stored.reply;
                    // Told outside the log's lock: the watcher may write a trajectory line.
                    drop(state);
                    if reply && let Some(on_reply) = &self.log.on_reply {
                        on_reply(self.via.clone());
                    }
                    if self.next > 0 {
                        self.sent += 1;
                    }
                    self.next += 1;
                    return Some(Ok(bytes));
                }
                match state.end.filter(|_| !unprimed) {
                    Some(End::Clean) => return None,
                    Some(End::Aborted) if self.next == 0 => return Some(Err(aborted())),
                    Some(End::Aborted) => true,
                    None => false,
                }
            };
            if !broken {
                changed.await;
                continue;
            }
            // A break after events this reader wrote: hyper drops what it has not flushed when a body fails, so
            // without a pause the events just written (the ids a client resumes from) could be lost with the
            // connection, depending on the machine's load. The break comes FLUSH_BEFORE_ABORT later, as a stream
            // that breaks mid-way does.
            tokio::time::sleep(FLUSH_BEFORE_ABORT).await;
            return Some(Err(aborted()));
        }
    }
}

/// How long a reader waits, after the events it wrote, before it breaks its stream (ms): time for them to be
/// flushed to the socket.
const FLUSH_BEFORE_ABORT: std::time::Duration = std::time::Duration::from_millis(50);

fn aborted() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "the server's stream was aborted")
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.log.readers.fetch_sub(1, Ordering::SeqCst);
        self.log.readers_changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_read_only_in_the_form_the_lab_writes() {
        assert_eq!(EventId::parse("3-0"), Some(EventId { stream: 3, index: 0 }));
        assert_eq!(EventId::parse("18446744073709551615-7").map(|id| id.stream), Some(u64::MAX));
        for bad in [
            "",
            "3",
            "3-",
            "-3",
            "03-1",
            "3-01",
            "+3-1",
            "3-1-2",
            " 3-1",
            "3-1 ",
            "a-b",
            "0/0",
            "99999999999999999999-1",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad:?}");
        }
        assert_eq!(EventId::parse(&"1".repeat(60)), None);
        assert_eq!(EventId { stream: 4, index: 2 }.to_string(), "4-2");
    }

    #[test]
    fn a_healthy_priming_event_carries_an_id_a_retry_and_empty_data() {
        let priming = Stored { event: None, data: String::new(), reply: false };
        assert_eq!(&render(&Plan::default(), 2, 0, &priming, false)[..], b"id: 2-0\nretry: 3000\ndata: \n\n");
        let plan = Plan { retry_ms: None, ..Plan::default() };
        assert_eq!(&render(&plan, 2, 0, &priming, false)[..], b"id: 2-0\ndata: \n\n");
        let message = Stored { event: Some("message".into()), data: "{}".into(), reply: true };
        assert_eq!(&render(&Plan::default(), 2, 1, &message, true)[..], b"event: message\nid:\ndata: {}\n\n");
        let plan = Plan { ids: false, ..Plan::default() };
        assert_eq!(&render(&plan, 2, 1, &message, false)[..], b"event: message\ndata: {}\n\n");
    }

    #[test]
    fn every_stream_fault_has_a_plan_and_no_other_fault_does() {
        for (name, examples) in FaultKind::examples() {
            for example in examples {
                let fault: FaultKind = serde_json::from_str(example).unwrap();
                assert_eq!(Plan::of(&fault).is_some(), fault.on_stream(), "{name}");
            }
        }
        let read = |json: &str| Plan::of(&serde_json::from_str(json).unwrap()).unwrap();
        let plan = read(r#"{"type": "stream_cut", "after_events": 2, "ids": false}"#);
        assert_eq!((plan.ids, plan.cut_after, plan.retry_ms), (false, Some(2), Some(RETRY_MS)));
        assert_eq!(read(r#"{"type": "stream_retry"}"#).retry_ms, None, "absent: no retry line");
        assert_eq!(read(r#"{"type": "stream_retry", "retry_ms": 0}"#).retry_ms, Some(0));
        let refused = read(r#"{"type": "resume_refused", "status": 405}"#);
        assert_eq!(refused.on_resume, Some(ResumeFault::Status(405)));
        let foreign = read(r#"{"type": "stream_replay", "variant": "foreign"}"#);
        assert_eq!((foreign.on_resume, foreign.cut_after), (Some(ResumeFault::Foreign), Some(0)));
        assert!(read(r#"{"type": "empty_event_id"}"#).empty_id_before_cut);
        assert_eq!(read(r#"{"type": "stream_cut_again"}"#).on_resume, Some(ResumeFault::CutAgain(1)), "absent: one");
        let again = read(r#"{"type": "stream_cut_again", "resumes": 5}"#);
        assert_eq!((again.on_resume, again.cut_after), (Some(ResumeFault::CutAgain(5)), Some(0)));
    }

    fn finished_log(streams: &Arc<Streams>, bytes: usize) -> Arc<Log> {
        let stream = streams.next.fetch_add(1, Ordering::SeqCst);
        let log = Arc::new(Log {
            stream,
            plan: Plan::default(),
            state: Mutex::new(LogState {
                events: vec![Stored { event: None, data: String::new(), reply: false }],
                bytes: 0,
                end: None,
                held: streams.budget.take(0).unwrap(),
                oversize: false,
            }),
            changed: Notify::new(),
            resume_fault: Mutex::new(None),
            readers: AtomicUsize::new(0),
            readers_changed: Notify::new(),
            resumes: AtomicU32::new(0),
            on_reply: None,
        });
        lock(&streams.logs).push_back(log.clone());
        let fits = append(streams, &log, Stored { event: None, data: "x".repeat(bytes), reply: true });
        if fits {
            lock(&log.state).end = Some(End::Clean);
            streams.enforce_bounds();
        }
        log
    }

    #[test]
    fn a_session_keeps_at_most_its_bounds_of_finished_streams_oldest_forgotten_first() {
        let budget = Budget::new(MAX_TOTAL_BYTES);
        let streams = Arc::new(Streams::new(budget.clone(), Arc::default()));
        for _ in 0..MAX_SESSION_STREAMS + 5 {
            finished_log(&streams, 10);
        }
        assert_eq!(streams.len(), MAX_SESSION_STREAMS);
        let oldest = lock(&streams.logs).front().unwrap().stream;
        assert_eq!(oldest, 5, "the five oldest were forgotten");
        assert_eq!(streams.resume(b"0-1").status(), 404, "a forgotten stream's id is unknown");
        finished_log(&streams, MAX_SESSION_BYTES - 10);
        assert!(streams.held_bytes() <= MAX_SESSION_BYTES);
        finished_log(&streams, MAX_SESSION_BYTES + 1);
        assert!(streams.held_bytes() <= MAX_SESSION_BYTES, "a stream bigger than the bound is not kept");
        assert_eq!(budget.held(), streams.held_bytes(), "forgotten logs give their bytes back");
    }

    #[test]
    fn the_total_budget_is_shared_and_a_session_makes_room_from_its_own_finished_streams() {
        let budget = Budget::new(100);
        let numbers = Arc::new(AtomicU64::new(0));
        let a = Arc::new(Streams::new(budget.clone(), numbers.clone()));
        let b = Arc::new(Streams::new(budget.clone(), numbers));
        finished_log(&a, 60);
        finished_log(&b, 30);
        finished_log(&b, 30);
        assert_eq!(b.len(), 1, "b forgot its older stream to fit the newer one");
        assert!(budget.held() <= 100);
        let log = finished_log(&b, 50);
        assert!(lock(&log.state).end.is_none(), "no room left: the event is refused (the pump aborts the stream)");
    }
}
