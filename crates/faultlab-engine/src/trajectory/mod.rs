//! The proxy's trajectory, written ([`Writer`]) and read back: the one reader, the one pairing of requests with
//! replies, and the one definition of a failed call, shared by `faultlab diagnose`, eval's grader and replay.
//!
//! A trajectory is what the proxy's recorder wrote ([`Record`] per line, the same types in both directions).
//! [`Trajectory::read`] streams it line by line: a line longer than [`MAX_RECORD_BYTES`] or nested deeper than
//! [`faultlab_wire::nesting::MAX_NESTING`] is refused, and every error names the line (from 1). A last line cut
//! short (no newline after it, and it does not parse: the proxy was killed while writing) is set aside in
//! [`Trajectory::cut_short`] for the caller to judge; blank lines are skipped.

use crate::FaultKind;
use crate::catalogue::Effect;
use crate::recorder::{DeliveredOn, Direction, Event, FrameAction, FrameEvent, Record, Refusal, TransportEventKind};
use faultlab_wire::Frame;
use faultlab_wire::frame::at;
use faultlab_wire::json_kind as kind;
use serde::Deserialize as _;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read as _};

pub mod backoff;
mod write;
pub use write::{Scrub, Writer, frames_written};

/// Longest trajectory line read, in bytes: the largest frame a stdio front carries (`--max-frame-bytes` up to
/// 1 GiB) recorded as a body, plus 1 MiB for the event around it.
pub const MAX_RECORD_BYTES: usize = (1 << 30) + (1 << 20);

/// A trajectory line that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}{}: {message}", column.map(|c| format!(", column {c}")).unwrap_or_default())]
pub struct ReadError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, for text that is not JSON.
    pub column: Option<usize>,
    pub message: String,
}

impl ReadError {
    fn at(line: usize, message: impl Into<String>) -> Self {
        Self { line, column: None, message: message.into() }
    }
}

/// One record and where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// 1-based line in the file.
    pub number: usize,
    pub record: Record,
}

/// A whole trajectory, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trajectory {
    pub lines: Vec<Line>,
    /// The last line, when it was cut short (see the module documentation): what reading it said.
    pub cut_short: Option<ReadError>,
}

/// One `frame` event and where it stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameAt<'a> {
    /// 1-based line in the file.
    pub line: usize,
    pub ts_ms: f64,
    pub scope: &'a str,
    pub frame: &'a FrameEvent,
}

impl Trajectory {
    /// Reads a trajectory from `input`, line by line.
    pub fn read(mut input: impl BufRead) -> Result<Self, ReadError> {
        Self::read_with_limit(&mut input, MAX_RECORD_BYTES)
    }

    /// Reads the text of a trajectory.
    pub fn parse(text: &str) -> Result<Self, ReadError> {
        Self::read(text.as_bytes())
    }

    /// [`Trajectory::read`] with another line limit (tests use small ones).
    pub fn read_with_limit(input: &mut impl BufRead, limit: usize) -> Result<Self, ReadError> {
        let mut trajectory = Trajectory::default();
        let mut buf = Vec::new();
        let mut number = 0;
        loop {
            buf.clear();
            number += 1;
            // One byte past the limit tells a line at the limit from a longer one.
            let read = input
                .by_ref()
                .take(limit as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| ReadError::at(number, format!("cannot read: {e}")))?;
            if read == 0 {
                return Ok(trajectory);
            }
            let ended = buf.last() == Some(&b'\n');
            if ended {
                buf.pop();
            }
            if buf.len() > limit {
                return Err(ReadError::at(number, format!("longer than {limit} bytes")));
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_line(number, &buf) {
                Ok(record) => trajectory.lines.push(Line { number, record }),
                Err(error) if !ended => {
                    trajectory.cut_short = Some(error);
                    return Ok(trajectory);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Every `frame` event, in order.
    pub fn frames(&self) -> impl Iterator<Item = FrameAt<'_>> {
        self.lines.iter().filter_map(|line| match &line.record.event {
            Event::Frame(frame) => {
                Some(FrameAt { line: line.number, ts_ms: line.record.ts_ms, scope: &line.record.scope, frame })
            }
            _ => None,
        })
    }

    /// Whether the server sent anything at all through the proxy: a frame from the upstream, neither one the
    /// proxy injected nor the error it wrote for a request whose upstream connection it lost (see
    /// [`Trajectory::upstream_lost`]).
    pub fn upstream_answered(&self) -> bool {
        let lost: HashSet<(&str, String)> = self.lost().map(|(scope, id, _)| (scope, id.to_string())).collect();
        self.frames().any(|f| {
            f.frame.direction == Direction::ServerToClient
                && f.frame.action != FrameAction::Injected
                && !f.frame.id.as_ref().is_some_and(|id| lost.contains(&(f.scope, id.to_string())))
        })
    }

    /// Why the proxy first lost its upstream connection for a request (nothing listening, a refused certificate,
    /// a killed server): the detail of the first `transport` `closed` event that names a request.
    pub fn upstream_lost(&self) -> Option<&str> {
        self.lost().map(|(_, _, detail)| detail).next()
    }

    /// Every `transport` `closed` event naming a request, but those the lab asked for itself (a `closure_requested`
    /// for the same request before it: a fault closing the connection or aborting the stream where the reply would
    /// be, after the upstream answered): (scope, request id, detail).
    fn lost(&self) -> impl Iterator<Item = (&str, &Value, &str)> {
        let mut requested: HashSet<(&str, String)> = HashSet::new();
        self.lines.iter().filter_map(move |line| match &line.record.event {
            Event::Transport { outcome: TransportEventKind::ClosureRequested, request_id: Some(id), .. } => {
                requested.insert((line.record.scope.as_str(), id.to_string()));
                None
            }
            Event::Transport { outcome: TransportEventKind::Closed, request_id: Some(id), detail }
                if !requested.contains(&(line.record.scope.as_str(), id.to_string())) =>
            {
                Some((line.record.scope.as_str(), id, detail.as_deref().unwrap_or("the connection closed")))
            }
            _ => None,
        })
    }

    /// Every request (a client-to-server frame with a method and an id) with its reply, in arrival order.
    ///
    /// The pairing: a reply is a server-to-client frame without a method whose id (in the same scope) names a
    /// request still waiting; the first such frame answers it, and later ones with that id are its duplicates.
    /// A reply that names no waiting request is not anyone's. A request the authorization refused has no reply
    /// and waits for none.
    pub fn exchanges(&self) -> Vec<Exchange<'_>> {
        let mut exchanges: Vec<Exchange<'_>> = Vec::new();
        // (scope, id as JSON text) → the exchange of the latest request with that id.
        let mut by_id: HashMap<(&str, String), usize> = HashMap::new();
        for at in self.frames() {
            let frame = at.frame;
            let Some(id) = frame.id.as_ref().filter(|id| !id.is_null()) else { continue };
            let key = (at.scope, id.to_string());
            match (frame.direction, frame.method.is_some()) {
                // Refused by the authorization: its challenge was its answer, and the server, which never saw
                // it, cannot reply to it; a request still waiting on the same id keeps its place.
                (Direction::ClientToServer, true) if frame.action == FrameAction::Refused => {
                    exchanges.push(Exchange { request: at, reply: None, duplicates: Vec::new() });
                }
                (Direction::ClientToServer, true) => {
                    by_id.insert(key, exchanges.len());
                    exchanges.push(Exchange { request: at, reply: None, duplicates: Vec::new() });
                }
                (Direction::ServerToClient, false) => {
                    let Some(&index) = by_id.get(&key) else { continue };
                    let exchange = &mut exchanges[index];
                    match exchange.reply {
                        None => exchange.reply = Some(at),
                        Some(_) => exchange.duplicates.push(at.line),
                    }
                }
                _ => {}
            }
        }
        exchanges
    }

    /// The `tools/call` exchanges, in arrival order.
    pub fn tool_calls(&self) -> Vec<Exchange<'_>> {
        self.exchanges().into_iter().filter(|e| e.method() == "tools/call").collect()
    }
}

fn parse_line(number: usize, bytes: &[u8]) -> Result<Record, ReadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ReadError::at(number, format!("not UTF-8: {e}")))?;
    faultlab_wire::nesting::check(text, faultlab_wire::nesting::Syntax::Json)
        .map_err(|e| ReadError::at(number, format!("nested deeper than {} levels", e.limit)))?;
    let value: Value = serde_json::from_str(text).map_err(|e| ReadError {
        line: number,
        column: Some(e.column()),
        message: format!("invalid JSON: {}", without_position(&e)),
    })?;
    let fail = |message: String| ReadError::at(number, message);
    let Value::Object(object) = &value else {
        return Err(fail(format!("expected an event object, found {}", kind(&value))));
    };
    let event = match object.get("event") {
        Some(Value::String(event)) => event.clone(),
        Some(other) => return Err(fail(format!("`event` is {}, not a string", kind(other)))),
        None => return Err(fail("no `event`".into())),
    };
    match object.get("tsMs") {
        Some(Value::Number(_)) => {}
        Some(_) => return Err(fail("`tsMs` is not a number of milliseconds".into())),
        None => return Err(fail("no `tsMs`".into())),
    }
    // Any JSON is an `id` to serde; JSON-RPC allows only these.
    if let Some(id) = object.get("id").filter(|id| !matches!(id, Value::Null | Value::String(_) | Value::Number(_))) {
        return Err(fail(format!("`id` is {}, not a string or a number", kind(id))));
    }
    // From a borrowed value: on an error, the object is still there to name the member.
    let mut record = Record::deserialize(&value).map_err(|e| {
        let message = e.to_string();
        match member_named_by(object, &message) {
            Some(key) => fail(format!("`{event}` event: `{key}`: {message}")),
            None => fail(format!("`{event}` event: {message}")),
        }
    })?;
    // What the client saw for a faulted frame: as recorded, or (trajectories older than `effect`) the catalogue's
    // effect for the fault's name. A fault neither names is not guessed at.
    if let Event::Frame(frame) = &mut record.event
        && let (Some(fault), None) = (&frame.fault, frame.effect)
    {
        frame.effect = Some(FaultKind::effect_of(fault).ok_or_else(|| {
            fail(format!("fault {fault:?} is not in this version's catalogue and the line records no `effect`"))
        })?);
    }
    Ok(record)
}

/// The member an "unknown variant `X`" error is about (serde names the value, not the key): the one whose value
/// is the string `X`.
fn member_named_by<'a>(object: &'a serde_json::Map<String, Value>, message: &str) -> Option<&'a str> {
    let variant = message.strip_prefix("unknown variant `")?.split('`').next()?;
    object.iter().find(|(_, v)| v.as_str() == Some(variant)).map(|(k, _)| k.as_str())
}

/// serde_json's message without its ` at line L column C` (the line is the trajectory's, said once).
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// One request and what came back for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange<'a> {
    pub request: FrameAt<'a>,
    /// The first reply with the request's id, whatever the proxy did with it.
    pub reply: Option<FrameAt<'a>>,
    /// Lines of later replies with the same id (a duplicated reply, or one the upstream sent twice).
    pub duplicates: Vec<usize>,
}

/// What the client got for a request: how a call ended, as the agent saw it. The one name for it: the trajectory's
/// pairing gives it, and the trace clinic (`faultlab diagnose`) reads OpenAI-message traces into it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Outcome {
    /// A reply, unchanged and not an error. Shown as `ok`, serialised as `success` (the trace clinic's JSON).
    #[serde(rename = "success")]
    #[strum(serialize = "ok")]
    Ok,
    /// An error: a JSON-RPC error or `isError: true` from the server, or one a fault put in its place
    /// (`http_status`, `rate_limit`, `forbidden`, a malformed or truncated reply...).
    Error,
    /// No usable reply (a fault held it, or sent it where the client cannot match it). The request may still
    /// have been executed.
    Timeout,
    /// The connection went away. The request may still have been executed.
    Lost,
    /// A reply came, but a fault changed how or what (late, repeated, reframed, with wrong content): a robust
    /// client copes, a fragile one does not.
    Faulted,
    /// The authorization in front of the server (`--auth`) refused the request with a challenge (401, 403 or
    /// 400): the server never saw it.
    Refused,
}

impl Outcome {
    /// Anything but a plain reply.
    pub fn failed(self) -> bool {
        self != Outcome::Ok
    }

    /// Whether the server may have carried the request out although the client got no result.
    pub fn ambiguous(self) -> bool {
        matches!(self, Outcome::Timeout | Outcome::Lost)
    }

    /// The word reports show (`ok`, `error`, `timeout`, `lost`, `faulted`, `refused`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// What the client got, from what a trajectory says of a call: whether the authorization refused it, the
    /// effect of the fault that acted on it, whether a reply was written for it (`Some(true)` it reached the
    /// client, `Some(false)` a fault consumed it) and whether that reply was an error. `None`: nothing came and
    /// nothing says why (the request is unanswered).
    pub fn of_call(refused: bool, fault: Option<Effect>, reply: Option<bool>, error: bool) -> Option<Self> {
        if refused {
            return Some(Outcome::Refused);
        }
        match (fault, reply) {
            (Some(effect), _) => Some(Outcome::of_effect(effect)),
            (None, None) => None,
            (None, Some(false)) => Some(Outcome::Timeout),
            (None, Some(true)) if error => Some(Outcome::Error),
            (None, Some(true)) => Some(Outcome::Ok),
        }
    }

    /// The one definition of a failed call: anything but a clean reply, an unanswered request and one the
    /// authorization refused included.
    pub fn call_failed(outcome: Option<Self>) -> bool {
        outcome.is_none_or(Outcome::failed)
    }

    /// What the client got when a fault with this effect (the catalogue's) acted on a call: a reply that still
    /// arrives, right or wrong, was changed by the fault (`Faulted`).
    pub fn of_effect(effect: Effect) -> Self {
        match effect {
            Effect::Timeout => Outcome::Timeout,
            Effect::TransportLoss => Outcome::Lost,
            Effect::Error | Effect::Invalid => Outcome::Error,
            Effect::Result | Effect::WrongData => Outcome::Faulted,
        }
    }
}

impl<'a> Exchange<'a> {
    pub fn method(&self) -> &'a str {
        self.request.frame.method.as_deref().unwrap_or_default()
    }

    pub fn tool(&self) -> Option<&'a str> {
        self.request.frame.tool.as_deref()
    }

    /// The request's id (never null: a request has one).
    pub fn id(&self) -> &'a Value {
        self.request.frame.id.as_ref().unwrap_or(&Value::Null)
    }

    /// A `tools/call`'s arguments, when recorded.
    pub fn arguments(&self) -> Option<&'a Value> {
        self.request.frame.arguments.as_ref()
    }

    /// Whether a reply reached the client: not one a fault consumed, nor one left unread in the log of a response
    /// stream a stream fault cut (a reply read by a resume reached it).
    pub fn reached(&self) -> bool {
        self.reply.is_some_and(|r| r.frame.action != FrameAction::Consumed) && !self.undelivered()
    }

    /// Whether the reply waited in the log of a cut response stream and no client ever read it
    /// (`delivery: undelivered`): the upstream answered, the client never got it.
    fn undelivered(&self) -> bool {
        self.reply.and_then(|r| r.frame.delivery.as_ref()).is_some_and(|d| d.on == DeliveredOn::Undelivered)
    }

    /// The line of the reply that reached the client.
    pub fn reply_line(&self) -> Option<usize> {
        self.reply.filter(|_| self.reached()).map(|r| r.line)
    }

    /// The rule and fault that acted on the call: on its reply, else the one that consumed the request.
    pub fn fault(&self) -> Option<(Option<&'a str>, &'a str)> {
        self.faulted().and_then(|at| at.frame.fault.as_deref().map(|fault| (at.frame.rule.as_deref(), fault)))
    }

    /// What the client saw of the fault that acted on the call (the catalogue's effect; see [`Exchange::fault`]).
    pub fn effect(&self) -> Option<Effect> {
        self.faulted().and_then(|at| at.frame.effect)
    }

    /// The frame a fault acted on: the reply, the request a fault consumed on its way in, or the request a stream
    /// fault was armed on when its reply stayed undelivered (the proxy records a stream fault on the request; the
    /// reply's `delivery` says whether the cut cost the client its reply).
    fn faulted(&self) -> Option<FrameAt<'a>> {
        let on = |at: FrameAt<'a>| at.frame.fault.is_some().then_some(at);
        self.reply.and_then(on).or_else(|| match self.request.frame.action {
            FrameAction::Consumed => on(self.request),
            _ if self.undelivered() => on(self.request),
            _ => None,
        })
    }

    /// How the authorization refused the request, when it did (then nothing answers it: the challenge was the
    /// answer).
    pub fn refused(&self) -> Option<&'a Refusal> {
        self.request.frame.refused.as_ref().filter(|_| self.request.frame.action == FrameAction::Refused)
    }

    /// Whether the upstream executed the request: `None` when nothing says (no reply, nothing consumed it).
    pub fn executed(&self) -> Option<bool> {
        if self.refused().is_some() {
            return Some(false);
        }
        match self.reply {
            Some(reply) if reply.frame.action == FrameAction::Injected => Some(false),
            Some(reply) => Some(reply.frame.executed.unwrap_or(true)),
            None if self.request.frame.action == FrameAction::Consumed => Some(false),
            None => None,
        }
    }

    /// Whether the reply was an error (a JSON-RPC error or `isError: true`), as recorded.
    pub fn error(&self) -> bool {
        self.reply.and_then(|r| r.frame.error).unwrap_or(false)
    }

    /// What the client got; `None` while no reply and no fault says anything (the request is unanswered).
    pub fn outcome(&self) -> Option<Outcome> {
        Outcome::of_call(self.refused().is_some(), self.effect(), self.reply.map(|_| self.reached()), self.error())
    }

    /// The one definition of a failed call: the agent met a failure on it, i.e. an error, a fault, a refusal by
    /// the authorization, or no reply at all.
    pub fn failed(&self) -> bool {
        Outcome::call_failed(self.outcome())
    }

    /// The server's own reply message as recorded (`--record-bodies`), when it has one: a reply the proxy
    /// injected is not the server's.
    pub fn recorded_reply(&self) -> Option<&'a Value> {
        self.reply.filter(|r| r.frame.action != FrameAction::Injected).and_then(|r| r.frame.body.as_ref())
    }
}

/// Whether a reply says the call failed: a JSON-RPC error, or a tool result with `isError: true`.
pub fn reply_is_error(frame: &Frame) -> bool {
    let Some(value) = frame.value() else { return false };
    at(value, &["error"]).is_some() || at(value, &["result", "isError"]) == Some(&Value::Bool(true))
}
