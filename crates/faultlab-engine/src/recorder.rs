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
    /// Totals at the end of a proxy run: frames in = frames out + frames consumed - frames injected.
    Ledger { frames_in: u64, frames_out: u64, consumed: u64, injected: u64 },
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
    /// An append-only file, written line by line (each event reaches the file before the next is recorded, so a
    /// killed process loses nothing it recorded).
    File(Arc<Mutex<std::fs::File>>),
    Memory(Arc<Mutex<Vec<Record>>>),
    Discard,
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
        Ok(Self::with_sink(Sink::File(Arc::new(Mutex::new(file)))))
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
    /// records them together, instead of paying a system call per frame. Each is still written before the
    /// caller goes on.
    pub fn record_all(&self, events: impl IntoIterator<Item = Event>) {
        let ts_ms = self.start.elapsed().as_secs_f64() * 1000.0;
        let records = events.into_iter().map(|event| Record { ts_ms, scope: self.scope.to_string(), event });
        match &self.sink {
            // One write for all the lines keeps them whole when several tasks record at once.
            Sink::Stderr => {
                let _ = std::io::stderr().lock().write_all(&json_lines(records));
            }
            Sink::File(file) => {
                // Serialised before the lock is taken: other tasks wait only for the write.
                let lines = json_lines(records);
                let _ = faultlab_wire::sync::lock(file).write_all(&lines);
            }
            Sink::Memory(kept) => faultlab_wire::sync::lock(kept).extend(records),
            Sink::Discard => {}
        }
    }

    /// The records kept by a [`Recorder::memory`] recorder (empty for other sinks).
    pub fn records(&self) -> Vec<Record> {
        match &self.sink {
            Sink::Memory(records) => faultlab_wire::sync::lock(records).clone(),
            _ => Vec::new(),
        }
    }
}

/// One JSON line per record; a record that cannot be serialised is left out whole, never half written.
fn json_lines(records: impl Iterator<Item = Record>) -> Vec<u8> {
    let mut lines = Vec::new();
    for record in records {
        let start = lines.len();
        match serde_json::to_writer(&mut lines, &record) {
            Ok(()) => lines.push(b'\n'),
            Err(_) => lines.truncate(start),
        }
    }
    lines
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
}
