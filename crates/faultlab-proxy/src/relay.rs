//! The relay every front shares, between a front (the client's side) and an [`Upstream`]:
//!
//! ```text
//! front ─▶ [pump_client: rules] ─▶ Upstream::send          upstream frames ─▶ [Link::deliver: engine] ─▶ outlet ─▶ front
//! ```
//!
//! Lines pass byte for byte unless a rule fires. `after` arms the rule's fault on the request id in the one
//! fault engine, which applies it to the upstream's reply; `instead` answers from the proxy without forwarding;
//! `before` delays or disconnects before forwarding. Every frame is recorded, and the run ends with a ledger.
//! Upstreams live in [`crate::upstream`]; the stdio front that drives this is [`crate::front::stdio`].

use crate::recording::Overlay;
use crate::rules::{Fired, Mode, Restart, SharedRules};
use crate::trajectory::{TrajectoryWriter, frames_written};
use faultlab_engine::catalogue::Reply;
use faultlab_engine::outlet::Outlet;
use faultlab_engine::recorder::{Direction, Event, FrameAction};
use faultlab_engine::render::{self, Step};
use faultlab_engine::{Engine, FaultKind, WireAction};
use faultlab_proc::child;
use faultlab_wire::frame::{IdMap, IdSet, at};
use faultlab_wire::line::Line;
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES, MessageId};
use futures::StreamExt;
use serde_json::json;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

pub const DEFAULT_SHUTDOWN_GRACE: Duration = child::DEFAULT_GRACE;
/// JSON-RPC error code for a request the upstream can no longer answer (it exited, or the proxy stopped it): an
/// implementation-defined server error.
pub(crate) const UPSTREAM_GONE: i64 = -32000;
/// JSON-RPC error code for a frame over the frame-size limit (the spec's "Invalid Request").
const TOO_LARGE: i64 = -32600;
/// How a proxy run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyEnd {
    /// The client closed its side (or a signal stopped the proxy) and the upstream was stopped in order.
    Finished,
    /// A disconnect fault closed the client's connection.
    Disconnected,
    /// The upstream exited on its own while the client was still connected, or with requests left unanswered;
    /// `status` says how (`exit code 1`). Each pending request got a JSON-RPC error.
    UpstreamExited { status: String },
}

/// Limits of a stdio proxy run.
#[derive(Debug, Clone, Copy)]
pub struct ProxyOptions {
    /// How long the upstream gets after its stdin is closed, and again after SIGTERM, before the next step.
    pub shutdown_grace: Duration,
    /// The longest line (frame) carried in either direction, in bytes.
    pub max_frame_bytes: usize,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        Self { shutdown_grace: DEFAULT_SHUTDOWN_GRACE, max_frame_bytes: MAX_LINE_BYTES }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The upstream could not be started or reached at all.
    #[error("cannot start the upstream server {command:?}: {source}")]
    Spawn { command: String, source: std::io::Error },
    /// Writing to the client failed (it closed its end of stdout).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What the relay of one connection shares: the engine, the trajectory, and which rule armed which fault.
pub struct Relay {
    /// The proxy's own; for `faultlab serve`, the one the server's tools arm their faults on.
    pub(crate) engine: Arc<Engine>,
    pub(crate) trajectory: Arc<TrajectoryWriter>,
    /// Which rule armed a fault on which request id (to name it when the reply passes).
    pub(crate) armed_by: Mutex<IdMap<String>>,
    /// The rules' clock starts here.
    pub(crate) start: Instant,
    /// A recording laid over a live upstream (`--replay` with a server): set once, when the upstream connects.
    pub(crate) overlay: OnceLock<Arc<Overlay>>,
}

impl Relay {
    pub(crate) fn with_engine(engine: Arc<Engine>, trajectory: Arc<TrajectoryWriter>) -> Arc<Self> {
        let (armed_by, start, overlay) = (Mutex::default(), Instant::now(), OnceLock::new());
        Arc::new(Self { engine, trajectory, armed_by, start, overlay })
    }

    /// A connection's relay whose rules' clock started at `start` (the run's, shared by its connections).
    pub(crate) fn starting_at(trajectory: Arc<TrajectoryWriter>, start: Instant) -> Arc<Self> {
        let engine = Arc::new(Engine::new(trajectory.recorder().clone()));
        let (armed_by, overlay) = (Mutex::default(), OnceLock::new());
        Arc::new(Self { engine, trajectory, armed_by, start, overlay })
    }

    /// Notes frames about to go upstream (a recording laid over the upstream remembers which call each id is).
    fn going_upstream(&self, frames: &[Frame]) {
        if let Some(overlay) = self.overlay.get() {
            frames.iter().for_each(|frame| overlay.request(frame));
        }
    }

    /// Answers each request in `ids` with a JSON-RPC error the proxy writes itself (the upstream can no longer
    /// answer it), after disarming what a rule armed on it.
    pub(crate) fn fail(&self, outlet: &Outlet, ids: Vec<MessageId>, message: &str, data: &serde_json::Value) {
        for id in ids {
            self.engine.disarm(&id);
            lock(&self.armed_by).remove(&id);
            reply_error(self, outlet, &id, UPSTREAM_GONE, message, data.clone());
        }
    }
}

/// Most requests remembered as waiting for the upstream's reply (to fail them if it ends). Beyond this a request
/// is not remembered; only a server that leaves thousands of requests unanswered gets there.
const MAX_IN_FLIGHT: usize = 10_000;

/// The requests sent upstream that it has not answered and the client has not cancelled: when the upstream ends,
/// each gets an error instead of waiting forever.
#[derive(Default)]
pub(crate) struct InFlight(IdSet);

impl InFlight {
    /// Notes a frame going upstream: a request is now waiting; a cancelled one no longer is (the spec lets the
    /// server drop it).
    pub(crate) fn sent(&mut self, frame: &Frame) {
        match (frame.method(), frame.id()) {
            (Some(_), Some(id)) if self.0.len() < MAX_IN_FLIGHT => {
                self.0.insert(id.clone());
            }
            (Some("notifications/cancelled"), None) => {
                let id = frame.value().and_then(|v| at(v, &["params", "requestId"])).and_then(MessageId::from_value);
                if let Some(id) = id {
                    self.0.remove(&id);
                }
            }
            _ => {}
        }
    }

    /// Notes a reply (or an error the proxy gave in its place) for `id`.
    pub(crate) fn answered(&mut self, id: &MessageId) {
        self.0.remove(id);
    }

    pub(crate) fn drain(&mut self) -> Vec<MessageId> {
        self.0.drain().collect()
    }
}

/// What an upstream is given when the relay starts: the relay, where replies go, and how to end the run.
#[derive(Clone)]
pub struct Link {
    pub relay: Arc<Relay>,
    pub(crate) outlet: Outlet,
    /// Ends the run: the writer finishes once everything queued before it is written.
    pub(crate) done: mpsc::UnboundedSender<()>,
    pub options: ProxyOptions,
}

impl Link {
    /// Passes upstream frames read together through the engine to the client (see [`from_server_all`]).
    pub fn deliver(&self, frames: impl IntoIterator<Item = Frame>) {
        from_server_all(&self.relay, &self.outlet, frames);
    }

    /// Ends the run once everything queued so far has been written to the client.
    pub fn end(&self) {
        let _ = self.done.send(());
    }
}

/// Where client frames go: a child's stdin, an HTTP endpoint, or a server in process. Made by a [`Connect`].
pub trait Upstream: Send + Sync + 'static {
    /// Sends one frame; false when the upstream is gone.
    fn send(&self, frame: &Frame) -> impl std::future::Future<Output = bool> + Send;
    /// Sends frames the client wrote together, in order; whether each went out. An upstream that can takes them
    /// in one write.
    fn send_all(&self, frames: &[Frame]) -> impl std::future::Future<Output = Vec<bool>> + Send {
        async move {
            let mut sent = Vec::with_capacity(frames.len());
            for frame in frames {
                sent.push(self.send(frame).await);
            }
            sent
        }
    }
    /// The client has left.
    fn client_left(&self) -> impl std::future::Future<Output = ()> + Send;
    /// A `server_outage` with `restart` has just started on request `trigger`: stop the upstream now and start a
    /// fresh one when the window ends. Only a child upstream can; other fronts refuse such rules when they load.
    fn outage_restart(
        &self,
        restart: Restart,
        trigger: Option<&MessageId>,
    ) -> impl std::future::Future<Output = ()> + Send {
        let _ = (restart, trigger);
        async {}
    }
    /// The outage a request must fail with because the upstream is down and its window has not ended, when the
    /// rules did not say so themselves (a control-API reset forgets the rules' outage, not the dead process).
    fn down(&self) -> Option<Fired> {
        None
    }
    /// SIGINT/SIGTERM asked the proxy to stop: begin an orderly end, and [`Link::end`] the run when it is over.
    fn stop(&self);
    /// The writer has ended (the run is over): stop what is left of the upstream; how it died, when it exited on
    /// its own while it was still needed (the run then ends as [`ProxyEnd::UpstreamExited`]).
    fn finish(&self) -> impl std::future::Future<Output = Option<String>> + Send;
}

/// An upstream not yet started: [`connect`](Connect::connect) starts it and hands it the [`Link`] its replies go
/// through.
pub trait Connect {
    type Upstream: Upstream;
    fn connect(self, link: Link) -> Result<Arc<Self::Upstream>, ProxyError>;
}

/// Reads the client's lines, asks the rules, and hands each frame on.
pub(crate) async fn pump_client<R, U>(
    input: R,
    rules: SharedRules,
    relay: Arc<Relay>,
    outlet: Outlet,
    upstream: Arc<U>,
    max_frame_bytes: usize,
) where
    R: AsyncRead + Unpin,
    U: Upstream,
{
    let mut lines = FramedRead::new(input, LineCodec::new(max_frame_bytes));
    // Frames read together that no rule touches go to the upstream together.
    let mut plain = Vec::new();
    let too_long = |id, bytes| dropped(&relay, &outlet, Direction::ClientToServer, id, bytes, max_frame_bytes);
    while let Some(burst) = next_burst(&mut lines, too_long).await {
        for frame in burst {
            let (mut fired, restart) = {
                let mut rules = lock(&rules);
                let fired = rules.decide(&frame, relay.start.elapsed());
                (fired, rules.take_restart())
            };
            if restart.is_none() && fired.is_none() && frame.method().is_some() && frame.id().is_some() {
                fired = upstream.down();
            }
            if fired.is_none() && restart.is_none() {
                engine_sees(&relay, &outlet, &frame);
                plain.push(frame);
                continue;
            }
            // What came before this frame goes first.
            forward_plain(&relay, &*upstream, &mut plain).await;
            if let Some(restart) = restart {
                // Before the triggering request is answered: by then the upstream is down.
                upstream.outage_restart(restart, frame.id()).await;
            }
            if fired.is_none() && frame.method().is_some() && frame.id().is_some() {
                fired = upstream.down();
            }
            from_client(&relay, &outlet, &upstream, frame, fired).await;
        }
        forward_plain(&relay, &*upstream, &mut plain).await;
    }
    upstream.client_left().await;
}

/// Shows a client frame to the engine, and writes what it answers at once: a cancel of a request armed with
/// `late_response` releases the late result.
fn engine_sees(relay: &Relay, outlet: &Outlet, frame: &Frame) {
    if let Some((_, actions)) = relay.engine.inbound(frame) {
        let sent = frames_written(&actions);
        relay.trajectory.injected(sent);
        outlet.send(actions.iter().flat_map(render::line).collect());
    }
}

/// Sends client frames no rule fired on, together, and records them with one write, before they go (a fast
/// upstream's reply may be read and recorded before the write returns).
async fn forward_plain<U: Upstream>(relay: &Relay, upstream: &U, frames: &mut Vec<Frame>) {
    if frames.is_empty() {
        return;
    }
    relay.going_upstream(frames);
    relay.trajectory.client_frames_going(frames);
    let sent = upstream.send_all(frames).await;
    relay.trajectory.client_frames_sent(&sent);
    frames.clear();
}

async fn from_client<U: Upstream>(
    relay: &Arc<Relay>,
    outlet: &Outlet,
    upstream: &Arc<U>,
    frame: Frame,
    fired: Option<Fired>,
) {
    engine_sees(relay, outlet, &frame);
    let t = &relay.trajectory;
    let Some(fired) = fired else {
        relay.going_upstream(std::slice::from_ref(&frame));
        t.client_frame_going(&frame, FrameAction::Forwarded, None, None);
        t.account(u64::from(upstream.send(&frame).await));
        return;
    };
    let (rule, fault) = (Some(fired.rule.as_str()), Some(&fired.fault));
    let id = frame.id().cloned();
    match fired.mode {
        Mode::After => {
            if let Some(id) = &id
                && relay.engine.arm(id.clone(), fired.fault.clone()).is_ok()
            {
                lock(&relay.armed_by).insert(id.clone(), fired.rule.clone());
            }
            relay.going_upstream(std::slice::from_ref(&frame));
            t.client_frame_going(&frame, FrameAction::Forwarded, rule, fault);
            t.account(u64::from(upstream.send(&frame).await));
        }
        Mode::Instead => {
            // The upstream never sees the request; the proxy answers as the fault says.
            t.client_frame(&frame, FrameAction::Consumed, rule, fault, 0);
            let Some(id) = id else { return };
            answer(relay, outlet, &id, Some(&frame), &fired.rule, &fired.fault, Some(false));
        }
        Mode::Before => match fired.fault {
            FaultKind::Latency(faultlab_engine::catalogue::Latency { delay_ms }) => {
                // Held back on its own task: later requests are not held up behind it.
                let (relay, upstream) = (relay.clone(), upstream.clone());
                tokio::spawn(async move {
                    faultlab_engine::clock::precise_sleep(Duration::from_millis(delay_ms)).await;
                    relay.going_upstream(std::slice::from_ref(&frame));
                    let (rule, fault) = (Some(fired.rule.as_str()), Some(&fired.fault));
                    relay.trajectory.client_frame_going(&frame, FrameAction::Faulted, rule, fault);
                    relay.trajectory.account(u64::from(upstream.send(&frame).await));
                });
            }
            _ => {
                t.client_frame(&frame, FrameAction::Consumed, rule, fault, 0);
                outlet.send(vec![Step::Close]);
            }
        },
    }
}

/// Answers request `id` in place of the upstream, as `fault` says, and records the frames injected. `executed`
/// says whether the upstream ran the request (`None`: unknown, it may have before it crashed).
pub(crate) fn answer(
    relay: &Relay,
    outlet: &Outlet,
    id: &MessageId,
    request: Option<&Frame>,
    rule: &str,
    fault: &FaultKind,
    executed: Option<bool>,
) {
    let t = &relay.trajectory;
    let stand_in = Frame::from_value(json!({
        "jsonrpc": "2.0", "id": id.to_value(),
        "result": {"content": [{"type": "text", "text": format!("answered by faultlab rule {rule}")}]}
    }));
    let actions = fault.apply(Reply { frame: &stand_in, request });
    let sent = frames_written(&actions);
    t.injected(sent);
    if sent > 0 {
        // Record what the client got (the fault's error, say), not the placeholder the fault was applied to.
        let first = actions.iter().find_map(|a| match a {
            // On stdio an HTTP status goes out as its JSON-RPC error body.
            WireAction::Send(bytes)
            | WireAction::SendFramed { bytes, .. }
            | WireAction::HttpStatus { body: bytes, .. } => Some(Frame::parse(bytes.clone())),
            _ => None,
        });
        let written = first.as_ref().unwrap_or(&stand_in);
        t.record(t.frame_event(
            Direction::ServerToClient,
            FrameAction::Injected,
            written,
            Some(rule),
            Some(fault),
            executed,
        ));
    }
    outlet.send(actions.iter().flat_map(render::line).collect());
}

/// A line over the frame-size limit, read from `direction`: recorded as dropped, and when its id is known the
/// client (who waits on it either way: its request, or the reply to it) gets a JSON-RPC error for it.
pub(crate) fn dropped(
    relay: &Relay,
    outlet: &Outlet,
    direction: Direction,
    id: Option<MessageId>,
    bytes: usize,
    limit: usize,
) {
    let what = match direction {
        Direction::ClientToServer => "request",
        Direction::ServerToClient => "upstream's reply",
    };
    let reason = format!("the {what} is {bytes} bytes, over the frame-size limit of {limit} bytes (--max-frame-bytes)");
    let answered = id.is_some();
    // In the ledger: a frame in that nothing carried on (consumed), so the loss shows.
    relay.trajectory.account(0);
    relay.trajectory.record(Event::Dropped {
        direction,
        id: id.as_ref().map(MessageId::to_value),
        bytes,
        answered,
        reason: reason.clone(),
    });
    if let Some(id) = id {
        relay.engine.disarm(&id);
        lock(&relay.armed_by).remove(&id);
        let data = json!({"bytes": bytes, "maxFrameBytes": limit, "direction": direction});
        reply_error(relay, outlet, &id, TOO_LARGE, &reason, data);
    }
}

/// Answers request `id` with a JSON-RPC error the proxy writes itself, recorded as injected.
pub(crate) fn reply_error(
    relay: &Relay,
    outlet: &Outlet,
    id: &MessageId,
    code: i64,
    message: &str,
    data: serde_json::Value,
) {
    let frame = Frame::from_value(json!({
        "jsonrpc": "2.0", "id": id.to_value(), "error": {"code": code, "message": message, "data": data}
    }));
    // Whether the upstream ran the request is unknown (it may have before it exited).
    relay.trajectory.injected_frame(Direction::ServerToClient, &frame, None, None, None);
    outlet.send(render::line(&WireAction::Send(frame.bytes().clone())));
}

/// Passes upstream frames read together through the engine to the client. Frames no fault fires on are recorded
/// with one write and go to the writer as one batch; a reply with a fault armed goes on its own, after everything
/// before it, so the trajectory keeps the order things happened in and a latency holds back that reply alone.
/// Every frame is recorded before it is handed to the writer.
pub(crate) fn from_server_all(relay: &Relay, outlet: &Outlet, frames: impl IntoIterator<Item = Frame>) {
    let t = &relay.trajectory;
    let (mut events, mut steps) = (Vec::new(), Vec::new());
    let flush = |events: &mut Vec<_>, steps: &mut Vec<Step>| {
        t.record_events(std::mem::take(events));
        outlet.send(std::mem::take(steps));
    };
    let overlay = relay.overlay.get();
    for frame in frames {
        let frame = match overlay {
            Some(overlay) => overlay.reply(frame),
            None => frame,
        };
        // The fault's own events (fault_activated) are recorded as it fires: the frames before it go first.
        if frame.id().is_some_and(|id| relay.engine.is_armed(id)) {
            flush(&mut events, &mut steps);
        }
        let (fired, actions) = relay.engine.outbound_fired(&frame);
        let rule = match (&fired, frame.id()) {
            (Some(_), Some(id)) => lock(&relay.armed_by).remove(id),
            _ => None,
        };
        events.push(t.server_frame_event(&frame, rule.as_deref(), fired.as_ref(), &actions, true));
        if fired.is_some() {
            flush(&mut events, &mut steps);
            outlet.send(actions.iter().flat_map(render::line).collect());
        } else {
            steps.extend(actions.iter().flat_map(render::line));
        }
    }
    flush(&mut events, &mut steps);
}

/// Most frames taken as one burst. Larger bursts save more system calls, but the peer downstream waits while the
/// burst is parsed: in a pipelined benchmark 32 kept the upstream busier than 256 or 8.
const MAX_BURST_FRAMES: usize = 32;

/// The next line from `lines` and the further whole lines already in its buffer (no read, so a lone request is
/// not held up by a read that would find nothing), as frames; `None` when the stream has ended. A line over the
/// size limit is skipped and handed to `too_long` with the id read from its start and its length.
pub(crate) async fn next_burst<R: AsyncRead + Unpin>(
    lines: &mut FramedRead<R, LineCodec>,
    mut too_long: impl FnMut(Option<MessageId>, usize),
) -> Option<Vec<Frame>> {
    let mut burst = Vec::new();
    let mut next = lines.next().await;
    loop {
        match next {
            Some(Ok(Line::Bytes(bytes))) => burst.push(Frame::parse(bytes)),
            Some(Ok(Line::TooLong)) => {
                let codec = lines.decoder();
                too_long(MessageId::from_prefix(codec.overlong_prefix()), codec.overlong_len());
            }
            // The end (or a read error): what was read before it still goes on.
            Some(Err(_)) | None => return (!burst.is_empty()).then_some(burst),
        }
        if burst.is_empty() {
            next = lines.next().await;
            continue;
        }
        if burst.len() >= MAX_BURST_FRAMES || !lines.read_buffer().contains(&b'\n') {
            return Some(burst);
        }
        // A whole line is buffered, so this does not wait.
        next = lines.next().await;
    }
}
