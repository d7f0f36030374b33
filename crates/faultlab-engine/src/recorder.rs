//! The diagnostics recorder: one JSON object per line for every fault activation, protocol ping and transport
//! event, with the request id it belongs to.
//!
//! The schema is [`Record`] (shipped as `schemas/diagnostic-event.schema.json`); the server writes it to stderr,
//! and the proxy's trajectory uses the same events. Times are milliseconds on the tokio clock since the recorder
//! was created, so a paused-clock test gets exact values. Every type here also deserialises: the proxy's
//! trajectory is read back through [`crate::trajectory`] with these same types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// One line of the diagnostics stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Milliseconds since the recorder started (tokio clock).
    pub ts_ms: f64,
    /// Which connection the event belongs to: `stdio`, `http`, or `session:<id>`.
    pub scope: String,
    #[serde(flatten)]
    pub event: Event,
}

/// What happened.
// A `Frame` event is much larger than the others; events are built, written and dropped one at a time, never
// stored in bulk, so boxing it would only add an allocation per frame.
#[allow(clippy::large_enum_variant)]
// Readers ignore members they do not know (no `deny_unknown_fields`), so a field added to an event later (with
// `#[serde(default)]`) neither breaks older readers nor needs older recordings to have it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Event {
    /// A tool armed a fault on its own response.
    FaultArmed { fault: String, request_id: Value },
    /// A fault changed what went on the wire.
    FaultActivated { fault: String, request_id: Value },
    /// A fault was due on this reply but could not apply without breaking what it promises (`wrong_value` and
    /// `contradictory` keep a result valid against the tool's output schema), so the reply went out unchanged.
    /// Recorded instead of `fault_activated`; `reason` says why, in words.
    FaultSkipped { fault: String, request_id: Value, reason: String },
    /// The outcome of one server-to-client protocol ping (`protocol_ping_liveness`).
    ProtocolPingLiveness { request_id: Value, protocol_ping: PingOutcome, transport: TransportOutcome },
    /// One server-to-client request a tool sent during a call (`ask_client`): its method, the fault the tool was
    /// asked to commit with it (`none` when well-behaved), the outcome (`accept`, `decline`, `cancel`, `answered`,
    /// `error`, `timeout`, `invalid_answer`, `cancelled`: the outer call was cancelled first) and the client's
    /// answer as it arrived (a result or an error object).
    AskBack { request_id: Value, method: String, fault: String, outcome: String, answer: Option<Value> },
    /// A transport event: a closure requested, done, failed or impossible; a connection ending.
    Transport { outcome: TransportEventKind, request_id: Option<Value>, detail: Option<String> },
    /// An inbound frame the wire layer could not pass on (over the size limit).
    FrameRejected { reason: String },
    /// A frame the lab could not carry (longer than the frame-size limit, `--max-frame-bytes`): its bytes were
    /// dropped, and when its id could be read from its start, the peer waiting on that id got a JSON-RPC error
    /// instead (`answered`). `bytes` counts what was read of it (at least the limit).
    Dropped { direction: Direction, id: Option<Value>, bytes: usize, answered: bool, reason: String },
    /// The proxy's upstream process exited without being asked to (the proxy had not started stopping it):
    /// `status` in words (`exit code 3`, `signal 9 (SIGKILL)`), and how many requests it left unanswered (each
    /// got a JSON-RPC error naming the exit).
    UpstreamExit { status: String, code: Option<i32>, signal: Option<i32>, pending: usize },
    /// One step of stopping the upstream process, in order: `stdin_closed`, then after the grace `sigterm` and
    /// `sigkill` to its process group when it has not exited yet, and `exited` with its status.
    Shutdown { step: ShutdownStep, detail: String },
    /// A proxy run starts: the seed that drives every random choice, and how many rules are active.
    RunStarted { seed: u64, rules: usize },
    /// One frame crossed the proxy (the trajectory).
    Frame(FrameEvent),
    /// A rule with `match.at: resume` acted at the resume of a response stream (the proxy's HTTP front): the
    /// stream the request `requestId` (`method`, `tool`) opened, which a stream fault had cut; the rule, its fault
    /// and effect; the resume's `Last-Event-ID`; and what the client got instead of the replay (`answer`).
    ResumeFaulted {
        rule: String,
        fault: String,
        effect: crate::catalogue::Effect,
        request_id: Value,
        method: Option<String>,
        tool: Option<String>,
        last_event_id: String,
        answer: ResumeAnswer,
    },
    /// Totals at the end of a proxy run: frames in = frames out + frames consumed - frames injected.
    Ledger { frames_in: u64, frames_out: u64, consumed: u64, injected: u64 },
}

/// What a client got from a resume a rule acted at ([`Event::ResumeFaulted`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum ResumeAnswer {
    /// An HTTP status instead of the replay (`http_status`; 404 for `session_expired_in_flight`, with
    /// `sessionLost`: the session's every later request answered 404 too).
    Status {
        status: u16,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        session_lost: bool,
    },
    /// The connection closed before a byte of the answer (`disconnect`).
    Reset,
    /// The answer's headers never sent; the resume held open until the client gave up or the proxy ended
    /// (`timeout`).
    Held,
    /// The replay, `delayMs` late (`latency`).
    Delayed { delay_ms: u64 },
}

/// The members of a `frame` event: one frame that crossed the proxy, and what the proxy did with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrameEvent {
    pub direction: Direction,
    /// What happened to it: forwarded unchanged, changed by a fault, consumed (not forwarded), or injected by
    /// the proxy itself.
    pub action: FrameAction,
    pub id: Option<Value>,
    pub method: Option<String>,
    pub tool: Option<String>,
    pub rule: Option<String>,
    pub fault: Option<String>,
    /// What the client sees for the request when `fault` acts on it (the catalogue's effect: `result`,
    /// `wrong_data`, `error`, `invalid`, `timeout`, `transport_loss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<crate::catalogue::Effect>,
    /// For a reply: whether the upstream executed the request (false when a rule answered instead).
    pub executed: Option<bool>,
    pub bytes: usize,
    /// For a `tools/call` request: its `arguments`, so a grader can tell identical calls and paths apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// For a reply: whether the peer saw a failure (a JSON-RPC error or a tool result with `isError: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<bool>,
    /// For a reply from the server, when the proxy records bodies (`--record-bodies`): the message as the
    /// upstream sent it, before any fault, so a run can be replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// For a request the authorization in front of the proxy refused (`--auth`; `action` is `refused`): the
    /// status and the challenge's error code. No token, code or secret is ever recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refusal>,
    /// For a reply to a request whose response stream a stream fault acted on (the proxy kept it in a resume
    /// log): how the reply reached the client. The event is written when that is known (when a client read the
    /// reply, or when the log was dropped without it). Absent for every other frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
}

/// Why the authorization in front of the proxy refused a request to the MCP endpoint (see [`FrameEvent::refused`]).
/// The request never reached the proxy's rules, engine or upstream: the client got the challenge instead of a
/// reply, a failed call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    /// The HTTP status of the answer: 401 (no usable token), 403 (`insufficient_scope`) or 400 (a malformed
    /// `Authorization`).
    pub status: u16,
    /// The challenge's `error` code (`invalid_token`, `insufficient_scope`, `invalid_request`); absent when the
    /// request carried no credentials (RFC 6750 §3: that challenge names no error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The auth fault that refused this very request (`token_expired`, `token_revoked`, `insufficient_scope`: by its
    /// own count, or at a request a rules file's `auth.match` named); absent for a refusal the token itself earned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// The request's HTTP method (`POST` carries a JSON-RPC message; a `GET` opening a stream or a `DELETE`
    /// ending a session has none).
    pub http_method: String,
    /// Why the body was not read, when it was not (larger than the endpoint's 4 MiB, more JSON elements than it
    /// parses, a failed read): its method, id and tool are then unknown, and `bytes` is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

/// How a reply on a faulted response stream reached the client (see [`FrameEvent::delivery`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub on: DeliveredOn,
    /// For `resume`: which request resuming the stream carried it, from 1 (resumes refused or cut before any
    /// event count too, so `2` after a `stream_cut_again` says the first resume brought nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<u32>,
    /// For `resume`: the `Last-Event-ID` that resume named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<String>,
}

/// Where a reply on a faulted response stream went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveredOn {
    /// On the POST's own response: the answer was not a stream the fault could cut (an error status, or JSON
    /// for a client that does not accept SSE), or the stream was not cut before it.
    Response,
    /// On a `GET` that resumed the cut stream with `Last-Event-ID`.
    Resume,
    /// Never: no resume read it before the proxy dropped the stream's log (the run ended, or the log was
    /// forgotten past its bounds or abandoned).
    Undelivered,
}

impl Delivery {
    /// On the POST's own response.
    pub fn response() -> Self {
        Self { on: DeliveredOn::Response, resume: None, last_event_id: None }
    }

    /// On resume `number` (from 1), which named `last_event_id`.
    pub fn resume(number: u32, last_event_id: &str) -> Self {
        Self { on: DeliveredOn::Resume, resume: Some(number), last_event_id: Some(last_event_id.to_owned()) }
    }

    pub fn undelivered() -> Self {
        Self { on: DeliveredOn::Undelivered, resume: None, last_event_id: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShutdownStep {
    /// The upstream's stdin was closed (the first, polite step).
    StdinClosed,
    /// The grace passed: SIGTERM went to the upstream's process group.
    Sigterm,
    /// The grace passed again: SIGKILL went to the upstream's process group.
    Sigkill,
    /// The upstream exited (and was reaped).
    Exited,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrameAction {
    Forwarded,
    Faulted,
    Consumed,
    Injected,
    /// A client request the authorization in front of the proxy (`--auth`) answered with a challenge: it never
    /// reached the rules or the upstream (see [`FrameEvent::refused`]). Outside the ledger, which counts the
    /// frames the proxy itself carried.
    Refused,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PingOutcome {
    pub outcome: PingResult,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PingResult {
    Success,
    Unsupported,
    InvalidResponse,
    Timeout,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TransportOutcome {
    pub outcome: TransportEventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransportEventKind {
    /// The connection is kept.
    Retained,
    /// A closure was asked for (written before the closure starts).
    ClosureRequested,
    Closed,
    CloseFailed,
    /// The transport cannot close for one request without hurting others (stdio), so it did not.
    ClosureUnavailable,
}

#[derive(Clone)]
enum Sink {
    Stderr,
    /// An append-only file: see [`FileSink`].
    File(Arc<FileSink>),
    Memory(Arc<Mutex<Vec<Record>>>),
    Discard,
}

/// Most bytes of deferred lines held before they are written anyway (64 KiB).
const MAX_DEFERRED_BYTES: usize = 64 * 1024;

/// An append-only file written line by line. A recorded event reaches the file before the recorder returns;
/// a deferred one ([`Recorder::defer_all`]: a frame relayed unchanged) waits in memory, at most
/// [`MAX_DEFERRED_BYTES`], until the next recorded event, a [`Recorder::flush`], or the flusher
/// ([`Recorder::flush_deferred`]) writes it, in the order they were recorded. So a relay pays one write for many
/// frames instead of one per frame, while everything that says something happened is written at once.
struct FileSink {
    state: Mutex<FileState>,
    /// Told when deferred lines wait and the buffer was empty: the flusher then writes them within its bound.
    waiting: tokio::sync::Notify,
}

struct FileState {
    file: std::fs::File,
    /// Deferred lines not written yet.
    pending: Vec<u8>,
}

impl FileState {
    /// Writes what is pending, then `lines`, with one write.
    fn write(&mut self, lines: &[u8]) {
        if self.pending.is_empty() {
            let _ = self.file.write_all(lines);
            return;
        }
        self.pending.extend_from_slice(lines);
        let _ = self.file.write_all(&self.pending);
        self.pending.clear();
        // A burst must not keep its buffer for the rest of the run.
        if self.pending.capacity() > 2 * MAX_DEFERRED_BYTES {
            self.pending = Vec::new();
        }
    }
}

/// The last recorder of a file dropped: what is still deferred is written.
impl Drop for FileState {
    fn drop(&mut self) {
        self.write(&[]);
    }
}

impl FileSink {
    fn lock(&self) -> std::sync::MutexGuard<'_, FileState> {
        faultlab_wire::sync::lock(&self.state)
    }
}

/// Where diagnostics go. Cheap to clone; every clone shares the start time and sink.
#[derive(Clone)]
pub struct Recorder {
    sink: Sink,
    start: Instant,
    scope: Arc<str>,
}

impl Recorder {
    /// JSON lines on stderr (the server's default: stdout is reserved for MCP frames).
    pub fn stderr() -> Self {
        Self::with_sink(Sink::Stderr)
    }

    /// Keeps records in memory, for tests; read them with [`Recorder::records`].
    pub fn memory() -> Self {
        Self::with_sink(Sink::Memory(Arc::default()))
    }

    /// Appends JSON lines to `path` (created if missing).
    pub fn file(path: &std::path::Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let state = Mutex::new(FileState { file, pending: Vec::new() });
        Ok(Self::with_sink(Sink::File(Arc::new(FileSink { state, waiting: tokio::sync::Notify::new() }))))
    }

    pub fn discard() -> Self {
        Self::with_sink(Sink::Discard)
    }

    fn with_sink(sink: Sink) -> Self {
        Self { sink, start: Instant::now(), scope: Arc::from("") }
    }

    /// The same sink and clock, labelling events with another scope.
    pub fn scoped(&self, scope: impl Into<Arc<str>>) -> Self {
        Self { scope: scope.into(), ..self.clone() }
    }

    pub fn record(&self, event: Event) {
        self.record_all(std::iter::once(event));
    }

    /// Records `events` with one write (they share a timestamp): a relay that read several frames at once
    /// records them together, instead of paying a system call per frame. Each is written (after anything deferred
    /// before it) before the caller goes on.
    pub fn record_all(&self, events: impl IntoIterator<Item = Event>) {
        match &self.sink {
            // One write for all the lines keeps them whole when several tasks record at once.
            Sink::Stderr => {
                let _ = std::io::stderr().lock().write_all(&self.json_lines(events));
            }
            Sink::File(sink) => {
                // Serialised before the lock is taken: other tasks wait only for the write.
                let lines = self.json_lines(events);
                sink.lock().write(&lines);
            }
            Sink::Memory(kept) => {
                let ts_ms = self.now_ms();
                let records = events.into_iter().map(|event| Record { ts_ms, scope: self.scope.to_string(), event });
                faultlab_wire::sync::lock(kept).extend(records);
            }
            Sink::Discard => {}
        }
    }

    /// Records `events` that may wait to be written (frames relayed unchanged): to a file they go with the next
    /// recorded event, the next [`Recorder::flush`], or when the flusher's bound passes; they keep their place
    /// and timestamp. Other sinks take them at once.
    pub fn defer_all(&self, events: impl IntoIterator<Item = Event>) {
        let Sink::File(sink) = &self.sink else {
            return self.record_all(events);
        };
        let lines = self.json_lines(events);
        let mut state = sink.lock();
        let was_empty = state.pending.is_empty();
        state.pending.extend_from_slice(&lines);
        if state.pending.len() >= MAX_DEFERRED_BYTES {
            state.write(&[]);
        } else if was_empty {
            drop(state);
            sink.waiting.notify_one();
        }
    }

    /// Writes what is deferred.
    pub fn flush(&self) {
        if let Sink::File(sink) = &self.sink {
            sink.lock().write(&[]);
        }
    }

    /// The flusher: writes deferred events at most `within` after they were deferred. Runs until dropped; a
    /// relay runs it beside itself and [`Recorder::flush`]es when it ends. Returns at once for sinks that defer
    /// nothing.
    pub async fn flush_deferred(self, within: std::time::Duration) {
        let Sink::File(sink) = &self.sink else { return };
        loop {
            sink.waiting.notified().await;
            tokio::time::sleep(within).await;
            self.flush();
        }
    }

    fn now_ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    /// One JSON line per event, all with the time now; an event that cannot be serialised is left out whole,
    /// never half written.
    fn json_lines(&self, events: impl IntoIterator<Item = Event>) -> Vec<u8> {
        let ts_ms = self.now_ms();
        let events = events.into_iter();
        // Room for the usual frame event, so that the buffer does not grow several times for each line.
        let mut lines = Vec::with_capacity(LINE_BYTES_HINT * events.size_hint().0.max(1));
        for event in events {
            let start = lines.len();
            lines.reserve(LINE_BYTES_HINT);
            match serde_json::to_writer(&mut lines, &RecordRef { ts_ms, scope: &self.scope, event: &event }) {
                Ok(()) => lines.push(b'\n'),
                Err(_) => lines.truncate(start),
            }
        }
        lines
    }

    /// The records kept by a [`Recorder::memory`] recorder (empty for other sinks).
    pub fn records(&self) -> Vec<Record> {
        match &self.sink {
            Sink::Memory(records) => faultlab_wire::sync::lock(records).clone(),
            _ => Vec::new(),
        }
    }
}

/// Bytes of a typical line: a frame event without arguments is about 230.
const LINE_BYTES_HINT: usize = 320;

/// A [`Record`] as it is written, borrowing its scope and event instead of copying them for each line.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordRef<'a> {
    ts_ms: f64,
    scope: &'a str,
    #[serde(flatten)]
    event: &'a Event,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_serialise_with_event_tag_and_camel_case_fields() {
        let rec = Recorder::memory().scoped("stdio");
        rec.record(Event::ProtocolPingLiveness {
            request_id: 3.into(),
            protocol_ping: PingOutcome { outcome: PingResult::Timeout },
            transport: TransportOutcome { outcome: TransportEventKind::ClosureUnavailable },
        });
        let json = serde_json::to_value(&rec.records()[0]).unwrap();
        assert_eq!(json["event"], "protocol_ping_liveness");
        assert_eq!(json["scope"], "stdio");
        assert_eq!(json["requestId"], 3);
        assert_eq!(json["protocolPing"]["outcome"], "timeout");
        assert_eq!(json["transport"]["outcome"], "closure_unavailable");
    }

    fn lines(path: &std::path::Path) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()["event"].to_string()).collect()
    }

    fn started(seed: u64) -> Event {
        Event::RunStarted { seed, rules: 0 }
    }

    #[test]
    fn deferred_events_keep_their_place_and_reach_the_file_with_the_next_recorded_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectory.jsonl");
        let rec = Recorder::file(&path).unwrap();
        rec.defer_all([started(1), started(2)]);
        assert!(lines(&path).is_empty(), "deferred, not written yet");
        rec.record(Event::Ledger { frames_in: 0, frames_out: 0, consumed: 0, injected: 0 });
        assert_eq!(lines(&path), ["\"run_started\"", "\"run_started\"", "\"ledger\""]);
        rec.defer_all([started(3)]);
        drop(rec);
        assert_eq!(lines(&path).len(), 4, "the last recorder dropped writes what waits");
    }

    #[tokio::test(start_paused = true)]
    async fn the_flusher_writes_deferred_events_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectory.jsonl");
        let rec = Recorder::file(&path).unwrap();
        let flusher = tokio::spawn(rec.clone().flush_deferred(std::time::Duration::from_millis(5)));
        tokio::task::yield_now().await;
        rec.defer_all([started(1)]);
        tokio::time::sleep(std::time::Duration::from_millis(4)).await;
        assert!(lines(&path).is_empty());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        assert_eq!(lines(&path).len(), 1, "written within 5 ms");
        rec.defer_all([started(2)]);
        tokio::time::sleep(std::time::Duration::from_millis(6)).await;
        assert_eq!(lines(&path).len(), 2, "and again for the next ones");
        flusher.abort();
    }
}
