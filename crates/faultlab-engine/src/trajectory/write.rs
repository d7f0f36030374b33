//! Writing the trajectory: every frame that crossed the proxy, the rule and fault applied to it, and a closing
//! ledger (frames in = frames out + frames consumed - frames injected). Same event schema as the server's
//! recorder; read back by [`super::Trajectory`].

use super::reply_is_error;
use crate::recorder::{Direction, Event, FrameAction, FrameEvent, Refusal, TransportEventKind};
use crate::{FaultKind, Recorder, WireAction};
use faultlab_wire::frame::at;
use faultlab_wire::{Frame, MessageId};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The longest a frame relayed unchanged waits in memory before its event reaches the trajectory file (5 ms):
/// the relays write such events in batches (see [`crate::Recorder::defer_all`]); everything else is written at
/// once, and all of it when the run ends.
pub const FLUSH_WITHIN: Duration = Duration::from_millis(5);

/// A frame relayed unchanged, which no rule or fault touched: its event may wait (see [`FLUSH_WITHIN`]).
fn plain(event: &Event) -> bool {
    matches!(event, Event::Frame(f) if f.action == FrameAction::Forwarded && f.rule.is_none() && f.fault.is_none())
}

/// Rewrites a recorded `arguments` or `body` in place before it is written: the proxy scrubs the credentials it
/// sends upstream (an upstream may echo one back).
pub type Scrub = Arc<dyn Fn(&mut serde_json::Value) + Send + Sync>;

/// The proxy's trajectory writer (one per proxy run, shared by its connections).
pub struct Writer {
    recorder: Recorder,
    /// Record the upstream's replies in full (for replay), not only their metadata.
    bodies: bool,
    /// Record every frame and the ledger; off for `faultlab serve`, whose recorder gets only what went wrong
    /// (dropped frames, faults fired, an upstream's end).
    frames: bool,
    scrub: Option<Scrub>,
    frames_in: AtomicU64,
    frames_out: AtomicU64,
    consumed: AtomicU64,
    injected: AtomicU64,
}

impl Writer {
    pub fn new(recorder: Recorder) -> Self {
        Self {
            recorder,
            bodies: false,
            frames: true,
            scrub: None,
            frames_in: AtomicU64::new(0),
            frames_out: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// Also records every upstream reply's message (`body`), so `faultlab replay` can serve it again.
    pub fn with_bodies(mut self) -> Self {
        self.bodies = true;
        self
    }

    /// Records no frames, no start and no ledger: only the events that say something went wrong (a frame dropped,
    /// an upstream's end). What `faultlab serve` writes to its diagnostics.
    pub fn diagnostics_only(mut self) -> Self {
        self.frames = false;
        self
    }

    /// Passes every recorded argument and body through `scrub` first.
    pub fn redacting(mut self, scrub: Scrub) -> Self {
        self.scrub = Some(scrub);
        self
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Writes the events of unchanged frames within [`FLUSH_WITHIN`]; a relay runs it beside itself until it ends
    /// (then [`Writer::finish`] writes the rest).
    pub fn flusher(&self) -> impl Future<Output = ()> + Send + 'static {
        self.recorder.clone().flush_deferred(FLUSH_WITHIN)
    }

    pub fn started(&self, seed: u64, rules: usize) {
        if self.frames {
            self.recorder.record(Event::RunStarted { seed, rules });
        }
    }

    /// Accounts for one frame in that left as `out` frames.
    pub fn account(&self, out: u64) {
        self.frames_in.fetch_add(1, Ordering::Relaxed);
        self.frames_out.fetch_add(out, Ordering::Relaxed);
        match out {
            0 => self.consumed.fetch_add(1, Ordering::Relaxed),
            n => self.injected.fetch_add(n - 1, Ordering::Relaxed),
        };
    }

    /// Frames the proxy wrote that no peer sent.
    pub fn injected(&self, n: u64) {
        self.frames_out.fetch_add(n, Ordering::Relaxed);
        self.injected.fetch_add(n, Ordering::Relaxed);
    }

    /// One frame the proxy wrote that no peer sent (a replayed `initialize`, an answer in place of the upstream).
    pub fn injected_frame(
        &self,
        direction: Direction,
        frame: &Frame,
        rule: Option<&str>,
        fault: Option<&FaultKind>,
        executed: Option<bool>,
    ) {
        self.injected(1);
        self.record(self.frame_event(direction, FrameAction::Injected, frame, rule, fault, executed));
    }

    /// Something the proxy did to its upstream connection (stopped or restarted the upstream), with the request
    /// that caused it; `detail` names the rule.
    pub fn transport(&self, outcome: TransportEventKind, request_id: Option<&MessageId>, detail: String) {
        let request_id = request_id.map(MessageId::to_value);
        self.recorder.record(Event::Transport { outcome, request_id, detail: Some(detail) });
    }

    /// A client-to-server frame that left as `out` frames.
    pub fn client_frame(
        &self,
        frame: &Frame,
        action: FrameAction,
        rule: Option<&str>,
        fault: Option<&FaultKind>,
        out: u64,
    ) {
        self.client_frame_going(frame, action, rule, fault);
        self.account(out);
    }

    /// A client-to-server frame about to be written to the upstream, recorded before it goes: the upstream's reply
    /// can be read and recorded (on another thread) before the write returns, and a reply recorded before its
    /// request reads as a call never answered. What went out is [`Writer::account`]ed after the write.
    pub fn client_frame_going(
        &self,
        frame: &Frame,
        action: FrameAction,
        rule: Option<&str>,
        fault: Option<&FaultKind>,
    ) {
        let executed = (action == FrameAction::Consumed).then_some(false);
        self.record(self.frame_event(Direction::ClientToServer, action, frame, rule, fault, executed));
    }

    /// Client-to-server frames no rule fired on, written to the upstream together; `sent[i]` says whether frame
    /// `i` went out. Recorded with one write.
    pub fn client_frames_forwarded(&self, frames: &[Frame], sent: &[bool]) {
        self.client_frames_going(frames);
        self.client_frames_sent(sent);
    }

    /// Client-to-server frames no rule fired on, about to be written to the upstream together: recorded with one
    /// write, before they go (see [`Writer::client_frame_going`]).
    pub fn client_frames_going(&self, frames: &[Frame]) {
        if self.frames {
            let events = frames.iter().map(|frame| {
                self.frame_event(Direction::ClientToServer, FrameAction::Forwarded, frame, None, None, None)
            });
            self.recorder.defer_all(events);
        }
    }

    /// Whether each frame of [`Writer::client_frames_going`] went out.
    pub fn client_frames_sent(&self, sent: &[bool]) {
        for &sent in sent {
            self.account(u64::from(sent));
        }
    }

    /// A server-to-client frame and what went out for it: accounted for, and its event returned for the caller to
    /// record (with others read at the same time, see [`Writer::record_events`]).
    pub fn server_frame_event(
        &self,
        frame: &Frame,
        rule: Option<&str>,
        fault: Option<&FaultKind>,
        actions: &[WireAction],
        executed: bool,
    ) -> Event {
        let out = frames_written(actions);
        self.account(out);
        let action = match (fault, out) {
            (None, _) => FrameAction::Forwarded,
            (Some(_), 0) => FrameAction::Consumed,
            (Some(_), _) => FrameAction::Faulted,
        };
        self.frame_event(Direction::ServerToClient, action, frame, rule, fault, fault.map(|_| executed))
    }

    /// Events built elsewhere (see [`Writer::server_frame_event`]), with one write; deferred when all are frames
    /// relayed unchanged.
    pub fn record_events(&self, events: Vec<Event>) {
        if events.is_empty() {
        } else if !self.frames {
            self.recorder.record_all(events.into_iter().filter(|e| !matches!(e, Event::Frame(_))));
        } else if events.iter().all(plain) {
            self.recorder.defer_all(events);
        } else {
            self.recorder.record_all(events);
        }
    }

    /// Records one event (see [`Writer::frame_event`]); deferred when it is a frame relayed unchanged.
    pub fn record(&self, event: Event) {
        if !self.frames && matches!(event, Event::Frame(_)) {
        } else if plain(&event) {
            self.recorder.defer_all(std::iter::once(event));
        } else {
            self.recorder.record(event);
        }
    }

    /// The event for one frame; recording it is the caller's.
    pub fn frame_event(
        &self,
        direction: Direction,
        action: FrameAction,
        frame: &Frame,
        rule: Option<&str>,
        fault: Option<&FaultKind>,
        executed: Option<bool>,
    ) -> Event {
        let mut arguments = (frame.method() == Some("tools/call"))
            .then(|| at(frame.value()?, &["params", "arguments"]).cloned())
            .flatten();
        let mut body = (self.bodies && direction == Direction::ServerToClient && frame.is_reply())
            .then(|| frame.value().cloned())
            .flatten();
        if let Some(scrub) = &self.scrub {
            for value in [&mut arguments, &mut body].into_iter().flatten() {
                scrub(value);
            }
        }
        Event::Frame(FrameEvent {
            direction,
            action,
            id: frame.id().map(MessageId::to_value),
            method: frame.method().map(str::to_owned),
            tool: frame.tool_name().map(str::to_owned),
            rule: rule.map(str::to_owned),
            fault: fault.map(|f| f.name().to_owned()),
            effect: fault.map(FaultKind::effect),
            executed,
            bytes: frame.bytes().len(),
            arguments,
            error: frame.is_reply().then(|| reply_is_error(frame)),
            body,
            delivery: None,
            refused: None,
        })
    }

    /// A request the authorization in front of the proxy refused (`--auth`): `frame` is its body as read (empty
    /// when it was not read, `refusal.unread` says why), recorded at once as a `refused` client frame. It never
    /// entered the proxy, so the ledger does not count it.
    pub fn refused(&self, frame: &Frame, refusal: Refusal) {
        if !self.frames {
            return;
        }
        let mut event =
            self.frame_event(Direction::ClientToServer, FrameAction::Refused, frame, None, None, Some(false));
        if let Event::Frame(f) = &mut event {
            f.refused = Some(refusal);
        }
        self.recorder.record(event);
    }

    /// Writes the ledger, and everything still deferred before it.
    pub fn finish(&self) {
        if !self.frames {
            self.recorder.flush();
            return;
        }
        self.recorder.record(Event::Ledger {
            frames_in: self.frames_in.load(Ordering::Relaxed),
            frames_out: self.frames_out.load(Ordering::Relaxed),
            consumed: self.consumed.load(Ordering::Relaxed),
            injected: self.injected.load(Ordering::Relaxed),
        });
    }
}

/// How many frames a list of actions writes.
pub fn frames_written(actions: &[WireAction]) -> u64 {
    actions
        .iter()
        .filter(|a| matches!(a, WireAction::Send(_) | WireAction::SendFramed { .. } | WireAction::HttpStatus { .. }))
        .count() as u64
}
