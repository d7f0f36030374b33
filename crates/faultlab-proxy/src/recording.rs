//! A recording as the upstream (`faultlab proxy --replay TRAJECTORY`), behind the stdio front ([`run`]) or the
//! HTTP front ([`Replayer::respond`]): no child, no URL. Each request is answered
//! with the reply the real server gave to the same call in a trajectory recorded with bodies (`--record FILE
//! --record-bodies`), matched by method, tool and canonical arguments (`faultlab_engine::recording`), with this
//! request's id. The rules apply on top exactly as in front of a live server.
//!
//! A call recorded more often than it is asked is served in recorded order; asked more often, its last reply
//! again.
//!
//! Laid over a live upstream instead ([`Over`], `--replay TRAJECTORY -- CMD`: what `faultlab replay` runs), every
//! request still reaches the live server, so its writes really happen again and the end state can be graded, but
//! the reply the recording holds for the same call (same occurrence) replaces the live one; a call the recording
//! lacks (the agent went another way) gets the live reply. Each reply's source can be logged. A request the recording has no reply for gets a JSON-RPC error naming the closest recorded call; a
//! `ping` it lacks is answered as any server would. Notifications and the client's replies need no answer.

use crate::relay::{Connect, Link, ProxyError, Upstream};
use axum::response::{IntoResponse as _, Response};
use faultlab_engine::recording::{CallKey, Recording};
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, Kind, MessageId};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The JSON-RPC error code of a request the recording cannot answer (implementation-defined server error).
pub const NOT_RECORDED: i64 = -32001;

/// A recording's replies, answering requests for either front.
pub struct Replayer(Mutex<Recording>);

impl Replayer {
    pub fn new(recording: Recording) -> Self {
        Self(Mutex::new(recording))
    }

    /// The answer to a request; `None` for what needs none (a notification, the client's reply).
    fn answer(&self, frame: &Frame) -> Option<Frame> {
        let Kind::Request { id, method } = frame.kind() else { return None };
        let key = frame.value().and_then(CallKey::of_request)?;
        let id = id.to_value();
        let mut recording = lock(&self.0);
        let message = match recording.take_or_repeat(&key) {
            Some(mut reply) => {
                reply["id"] = id;
                reply
            }
            None if method == "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            None => not_recorded(id, &key, recording.closest(&key)),
        };
        Some(Frame::from_value(message))
    }

    /// The HTTP front's answer to one message: a request's reply as a JSON body, 202 for what needs no answer, and
    /// 405 for a GET or DELETE (a recording has no standalone stream and no session to end).
    pub fn respond(&self, method: &http::Method, frame: Option<&Frame>) -> Response {
        let Some(frame) = frame.filter(|_| method == http::Method::POST) else {
            return (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").into_response();
        };
        let Some(answer) = self.answer(frame) else { return StatusCode::ACCEPTED.into_response() };
        let mut response = (StatusCode::OK, answer.bytes().clone()).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

/// A recording to use as the upstream of the stdio front (`faultlab proxy --replay TRAJECTORY`).
pub struct Replay(pub Recording);

/// A connected [`Replay`].
pub struct RecordingUpstream {
    replayer: Replayer,
    /// Where answers go; dropped when the client leaves, which ends the run once they are written.
    answers: Mutex<Option<mpsc::UnboundedSender<Frame>>>,
    /// Hands the answers to the relay in order, on a task of its own (as a live upstream's replies arrive).
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl Connect for Replay {
    type Upstream = RecordingUpstream;

    fn connect(self, link: Link) -> Result<Arc<RecordingUpstream>, ProxyError> {
        let (tx, mut answers) = mpsc::unbounded_channel::<Frame>();
        let reader = tokio::spawn(async move {
            while let Some(answer) = answers.recv().await {
                link.deliver([answer]);
            }
            link.end();
        });
        Ok(Arc::new(RecordingUpstream {
            replayer: Replayer::new(self.0),
            answers: Mutex::new(Some(tx)),
            reader: Mutex::new(Some(reader)),
        }))
    }
}

/// A recording laid over the live upstream `live`, its replies in place of the live ones for the same call.
pub struct Over<C> {
    pub recording: Recording,
    pub live: C,
    /// Gets one JSON line per reply to a call: `{"key": "<call>", "from": "recorded" | "live"}`.
    pub log: Option<std::fs::File>,
}

impl<C: Connect> Connect for Over<C> {
    type Upstream = C::Upstream;

    fn connect(self, link: Link) -> Result<Arc<C::Upstream>, ProxyError> {
        SharedRecording::new(self.recording, self.log).over(self.live).connect(link)
    }
}

/// A recording laid over the live upstream of each connection of one run (the Unix-socket front): its replies
/// are used up across the connections in order, as they were recorded across the run's connections.
#[derive(Clone)]
pub struct SharedRecording {
    recording: Arc<Mutex<Recording>>,
    log: Arc<Mutex<Option<std::fs::File>>>,
}

impl SharedRecording {
    pub fn new(recording: Recording, log: Option<std::fs::File>) -> Self {
        Self { recording: Arc::new(Mutex::new(recording)), log: Arc::new(Mutex::new(log)) }
    }

    /// This recording over one connection's live upstream.
    pub fn over<C>(&self, live: C) -> OverShared<C> {
        OverShared { shared: self.clone(), live }
    }
}

/// A [`SharedRecording`] laid over one connection's live upstream.
pub struct OverShared<C> {
    shared: SharedRecording,
    live: C,
}

impl<C: Connect> Connect for OverShared<C> {
    type Upstream = C::Upstream;

    fn connect(self, link: Link) -> Result<Arc<C::Upstream>, ProxyError> {
        let SharedRecording { recording, log } = self.shared;
        let overlay = Overlay { recording, calls: Mutex::default(), log };
        // Set before the live upstream starts, so no reply can pass without it.
        let _ = link.relay.overlay.set(Arc::new(overlay));
        self.live.connect(link)
    }
}

/// The state of [`Over`] the relay consults: which call each request id is (this connection's), and the replies
/// left to serve (the run's).
pub struct Overlay {
    recording: Arc<Mutex<Recording>>,
    calls: Mutex<HashMap<MessageId, CallKey>>,
    log: Arc<Mutex<Option<std::fs::File>>>,
}

impl Overlay {
    /// A frame going to the live upstream: a request's call is remembered until its reply.
    pub(crate) fn request(&self, frame: &Frame) {
        if let (Kind::Request { id, .. }, Some(key)) = (frame.kind(), frame.value().and_then(CallKey::of_request)) {
            lock(&self.calls).insert(id.clone(), key);
        }
    }

    /// A frame from the live upstream: the recorded reply in its place when the recording holds one for its call.
    pub(crate) fn reply(&self, frame: Frame) -> Frame {
        let key = match (frame.is_reply(), frame.id()) {
            (true, Some(id)) => lock(&self.calls).remove(id),
            _ => None,
        };
        let Some(key) = key else { return frame };
        let recorded = lock(&self.recording).take(&key);
        let from = if recorded.is_some() { "recorded" } else { "live" };
        if let Some(log) = lock(&self.log).as_mut() {
            use std::io::Write as _;
            let _ = writeln!(log, "{}", json!({"key": key.to_string(), "from": from}));
        }
        match (recorded, frame.id()) {
            (Some(mut reply), Some(id)) => {
                reply["id"] = id.to_value();
                Frame::from_value(reply)
            }
            _ => frame,
        }
    }
}

/// The error for a request the recording holds no reply for.
fn not_recorded(id: Value, key: &CallKey, closest: Option<&CallKey>) -> Value {
    let message = match closest {
        Some(closest) => {
            format!("faultlab replay: the recording has no reply for {key}; the closest recorded call is {closest}")
        }
        None => format!("faultlab replay: the recording has no reply for {key}, nor any other reply"),
    };
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": NOT_RECORDED, "message": message,
        "data": {"request": key.to_string(), "closest": closest.map(CallKey::to_string)}}})
}

impl Upstream for RecordingUpstream {
    async fn send(&self, frame: &Frame) -> bool {
        if let Some(answer) = self.replayer.answer(frame)
            && let Some(answers) = lock(&self.answers).as_ref()
        {
            let _ = answers.send(answer);
        }
        true
    }

    async fn client_left(&self) {
        lock(&self.answers).take();
    }

    fn stop(&self) {
        lock(&self.answers).take();
    }

    async fn finish(&self) -> Option<String> {
        if let Some(reader) = lock(&self.reader).take() {
            reader.abort();
        }
        None
    }
}
