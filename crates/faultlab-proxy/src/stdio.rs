//! The stdio proxy: the client speaks to us on stdin/stdout; the upstream server is our child process.
//!
//! ```text
//! client ─stdin─▶ [client pump: rules] ─▶ child stdin          child stdout ─▶ [server pump: engine] ─▶ outlet ─▶ stdout
//! ```
//!
//! Lines pass byte for byte unless a rule fires. `after` arms the rule's fault on the request id in the one
//! fault engine, which applies it to the upstream's reply; `instead` answers from the proxy without forwarding;
//! `before` delays or disconnects before forwarding. Every frame is recorded, and the run ends with a ledger.
//!
//! A `server_outage` rule with `restart` crashes the child when its window starts (SIGKILL at once: an outage is
//! a crash, not the orderly stop of a client that is done), lets through the replies the child wrote before it
//! died, and answers every request still waiting with the outage's 503. When the window ends a fresh child is
//! started with the same command and re-initialised with the client's own `initialize` and
//! `notifications/initialized` (the fresh child's `initialize` reply is swallowed: the client has one already),
//! so the client carries on without initialising again. Client frames wait while the fresh child is prepared.

use crate::rules::{Fired, Mode, Restart, SharedRules};
use crate::trajectory::{Trajectory, frames_written};
use bytes::BytesMut;
use faultlab_engine::catalogue::Reply;
use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use faultlab_engine::recorder::Event;
use faultlab_engine::recorder::{Direction, FrameAction, TransportEventKind};
use faultlab_engine::render::{self, Step};
use faultlab_engine::{Engine, FaultKind, WireAction};
use faultlab_wire::frame::at;
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES, MessageId};
use futures::StreamExt;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

/// After the client leaves, how long the upstream gets to exit on its own, then after SIGTERM (the spec's order).
/// Also how long the replies a crashed child wrote get to drain from its pipe.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long a restarted child gets to answer the replayed `initialize` before relaying resumes anyway: client
/// frames wait meanwhile, and a server that never answers must not hold them forever (10 s).
const REINIT_PATIENCE: Duration = Duration::from_secs(10);
/// Most requests remembered as waiting for the child's reply (to fail them if it is restarted). Beyond this a
/// request is not remembered, and would wait for a reply after a restart; only a server that leaves thousands
/// of requests unanswered gets there.
const MAX_IN_FLIGHT: usize = 10_000;

/// How a proxy run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyEnd {
    /// The client closed its side, or the upstream exited.
    Finished,
    /// A disconnect fault closed the client's connection.
    Disconnected,
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot start the upstream server {command:?}: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Shared {
    pub(crate) fn new(trajectory: Arc<Trajectory>) -> Arc<Self> {
        Arc::new(Self {
            engine: Engine::new(trajectory.recorder().clone()),
            trajectory,
            armed_by: Mutex::default(),
            start: Instant::now(),
        })
    }
}

/// What both pumps share.
pub(crate) struct Shared {
    pub(crate) engine: Engine,
    pub(crate) trajectory: Arc<Trajectory>,
    /// Which rule armed a fault on which request id (to name it when the reply passes).
    pub(crate) armed_by: Mutex<HashMap<MessageId, String>>,
    pub(crate) start: Instant,
}

/// Runs the proxy until the client leaves, the upstream exits, or a fault disconnects the client.
pub async fn run<R, W>(
    mut command: Command,
    rules: SharedRules,
    trajectory: Arc<Trajectory>,
    input: R,
    output: W,
    stop: CancellationToken,
) -> Result<ProxyEnd, ProxyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let shown = format!("{:?}", command.as_std().get_program());
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    die_with_parent(&mut command);
    let mut child = command.spawn().map_err(|source| ProxyError::Spawn { command: shown, source })?;
    let child_stdin = child.stdin.take();
    let child_stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("the upstream has no stdout"))?;
    {
        let rules = rules.lock().unwrap_or_else(|e| e.into_inner());
        trajectory.started(rules.seed(), rules.len());
    }
    let recorder = trajectory.recorder().clone();
    let shared = Shared::new(trajectory.clone());
    let (outlet, queue) = Outlet::new();
    let (done_tx, done_rx) = mpsc::unbounded_channel();

    let supervisor = Arc::new(Supervisor {
        stdin: tokio::sync::Mutex::new(child_stdin),
        state: Mutex::new(ChildState::new(command, child)),
        shared: shared.clone(),
        outlet: outlet.clone(),
        done: done_tx,
    });
    let reader = supervisor.read(child_stdout, 0);
    supervisor.state().reader = Some(reader);
    let upstream = Arc::new(ChildUpstream(supervisor.clone()));
    let client = tokio::spawn(pump_client(input, rules, shared.clone(), outlet, upstream));
    // A stop (SIGINT/SIGTERM) ends the relay the same way as the client leaving, so the upstream still gets the
    // orderly shutdown below rather than a kill.
    let end = tokio::select! {
        end = outlet::write_stream(output, queue, done_rx, &recorder, |_| {}) => end,
        () = stop.cancelled() => Ok(WriterEnd::Finished),
    };
    client.abort();
    supervisor.shut_down().await;
    trajectory.finish();
    Ok(match end? {
        WriterEnd::Finished => ProxyEnd::Finished,
        WriterEnd::Closed => ProxyEnd::Disconnected,
    })
}

/// Makes the kernel send the child SIGTERM if the proxy dies (even by SIGKILL): no orphan is left.
pub(crate) fn die_with_parent(command: &mut Command) {
    // SAFETY: the closure only calls prctl, which is async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM).map_err(std::io::Error::from)
        });
    }
}

/// How the proxy stops a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The spec's order for a client that is done: close stdin, wait, SIGTERM, wait, SIGKILL.
    Orderly,
    /// A crash, for an outage: SIGKILL at once (no chance to finish work or flush), then stdin is closed. The
    /// orderly order could take 4 s (2 × `EXIT_GRACE`), longer than many outage windows.
    Crash,
}

/// Stops `child` the way `how` says and reaps it.
async fn stop_child(child: &mut Child, stdin: Option<ChildStdin>, how: Stop) {
    if how == Stop::Orderly {
        drop(stdin);
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            return;
        }
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
        }
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            return;
        }
        let _ = child.kill().await;
        return;
    }
    // `kill` sends SIGKILL and waits for the exit, so no zombie is left.
    let _ = child.kill().await;
    drop(stdin);
}

/// Where client frames go: a child's stdin, or an HTTP endpoint.
pub(crate) trait Upstream: Send + Sync + 'static {
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
}

/// A child process upstream, which a restarting outage can replace.
struct ChildUpstream(Arc<Supervisor>);

impl Upstream for ChildUpstream {
    async fn send(&self, frame: &Frame) -> bool {
        self.0.send(frame).await
    }

    async fn send_all(&self, frames: &[Frame]) -> Vec<bool> {
        self.0.send_all(frames).await
    }

    async fn client_left(&self) {
        self.0.client_left().await;
    }

    async fn outage_restart(&self, restart: Restart, trigger: Option<&MessageId>) {
        self.0.go_down(restart, trigger).await;
    }

    fn down(&self) -> Option<Fired> {
        let state = self.0.state();
        let down = state.down.as_ref().filter(|d| Instant::now() < d.until)?;
        Some(Fired { rule: down.rule.clone(), mode: Mode::Instead, fault: down.fault.clone() })
    }
}

/// The upstream child: its stdin, and everything it takes to replace it after a restarting outage.
struct Supervisor {
    /// The running child's stdin; `None` while the child is down and once the client has left. Held for a whole
    /// stop and restart, so client frames wait until the fresh child has been initialised.
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    state: Mutex<ChildState>,
    shared: Arc<Shared>,
    outlet: Outlet,
    /// Ends the relay: the running child exited on its own, or the client left while the child was down.
    done: mpsc::UnboundedSender<()>,
}

struct ChildState {
    /// The upstream's command, kept to start a fresh child after a restarting outage.
    command: Command,
    /// The running child; `None` while it is down, and once the proxy has stopped it.
    child: Option<Child>,
    /// Counts children started (the first is 0). A reader's end matters only while its child is the running one.
    generation: u64,
    /// The task reading the running child's stdout.
    reader: Option<JoinHandle<()>>,
    /// Requests forwarded to the running child that it has not answered and the client has not cancelled.
    in_flight: HashSet<MessageId>,
    /// The client's `initialize` as forwarded, and whether the child answered it (only then is it replayed: a
    /// client still waiting for its reply gets the outage's 503 instead and will initialise again itself).
    initialize: Option<Frame>,
    initialize_answered: bool,
    /// The client's `notifications/initialized` as forwarded.
    initialized: Option<Frame>,
    /// While the child is down: the outage that stopped it.
    down: Option<Down>,
    /// Restarts the child when the outage's window ends, if no client frame has done it first.
    timer: Option<JoinHandle<()>>,
    /// A replayed `initialize` whose reply the proxy swallows.
    reinit: Option<Reinit>,
    /// The client has left or the proxy is stopping: the child is not restarted any more.
    closing: bool,
}

impl ChildState {
    fn new(command: Command, child: Child) -> Self {
        Self {
            command,
            child: Some(child),
            generation: 0,
            reader: None,
            in_flight: HashSet::new(),
            initialize: None,
            initialize_answered: false,
            initialized: None,
            down: None,
            timer: None,
            reinit: None,
            closing: false,
        }
    }
}

/// The outage a child is down for.
struct Down {
    rule: String,
    fault: FaultKind,
    /// The request that started it.
    trigger: Option<MessageId>,
    /// When its window ends (the rules' clock: `Shared::start` plus the window's end).
    until: Instant,
}

/// A replayed `initialize` waiting for the fresh child's reply.
struct Reinit {
    id: MessageId,
    rule: String,
    fault: FaultKind,
    /// Told when the reply has come.
    answered: oneshot::Sender<()>,
}

impl Supervisor {
    fn state(&self) -> MutexGuard<'_, ChildState> {
        // Each update is a few field writes that cannot panic half-way; a poisoned lock still holds usable state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the stdout of child `generation`, passing each frame on; the frames of one read go on together.
    fn read(self: &Arc<Self>, stdout: ChildStdout, generation: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let mut lines = FramedRead::new(stdout, LineCodec::new(MAX_LINE_BYTES));
            while let Some(burst) = next_burst(&mut lines, this.shared.trajectory.recorder()).await {
                let frames: Vec<Frame> = burst.into_iter().filter_map(|frame| this.relay(frame)).collect();
                from_server_all(&this.shared, &this.outlet, frames);
            }
            this.child_ended(generation);
        })
    }

    /// One frame from the child: the reply to a replayed `initialize` is swallowed (`None`), everything else is
    /// returned to go to the client through the engine.
    fn relay(&self, frame: Frame) -> Option<Frame> {
        if frame.is_reply()
            && let Some(id) = frame.id()
        {
            let reinit = {
                let mut state = self.state();
                let reinit = state.reinit.take_if(|r| r.id == *id);
                if reinit.is_none() {
                    state.in_flight.remove(id);
                    if state.initialize.as_ref().and_then(Frame::id) == Some(id) {
                        state.initialize_answered = true;
                    }
                }
                reinit
            };
            if let Some(reinit) = reinit {
                // The client got its own reply to this `initialize` from the first child; this one is the proxy's.
                let t = &self.shared.trajectory;
                t.account(0);
                t.record(t.frame_event(
                    Direction::ServerToClient,
                    FrameAction::Consumed,
                    &frame,
                    Some(&reinit.rule),
                    Some(&reinit.fault),
                    Some(true),
                ));
                let _ = reinit.answered.send(());
                return None;
            }
        }
        Some(frame)
    }

    /// The stdout of child `generation` has ended.
    fn child_ended(&self, generation: u64) {
        let mut state = self.state();
        // A child the proxy stopped for an outage, or one already replaced: the relay goes on.
        if state.generation != generation || state.down.is_some() {
            return;
        }
        // The running child exited on its own: the relay ends (and a restart waiting for its reply stops waiting).
        state.reinit = None;
        drop(state);
        let _ = self.done.send(());
    }

    /// Sends one client frame to the running child (starting a fresh one first if an outage window has ended).
    async fn send(self: &Arc<Self>, frame: &Frame) -> bool {
        let mut stdin = self.stdin.lock().await;
        if stdin.is_none() {
            let down = self.state().down.as_ref().map(|d| (d.until, d.rule.clone(), d.fault.clone()));
            let Some((until, rule, fault)) = down else { return false };
            if Instant::now() >= until {
                // The window has ended before the timer restarted the child: restart it now, before this frame.
                self.restart(&mut stdin).await;
            } else if let (Some(_), Some(id)) = (frame.method(), frame.id()) {
                // A request the rules let through while the process is still down (one held back by a `before`
                // latency, or after a control-API reset): it fails like the others in the window.
                answer(&self.shared, &self.outlet, id, Some(frame), &rule, &fault, Some(false));
                return false;
            }
        }
        let Some(child_stdin) = stdin.as_mut() else { return false };
        self.track(frame);
        write_line(child_stdin, frame).await
    }

    /// Sends frames the client wrote together with one write (one wake-up of the child for all of them).
    async fn send_all(self: &Arc<Self>, frames: &[Frame]) -> Vec<bool> {
        let mut stdin = self.stdin.lock().await;
        let Some(child_stdin) = stdin.as_mut() else {
            // Down or gone: each frame is handled as on its own (a restart first, or the outage's answer).
            drop(stdin);
            let mut sent = Vec::with_capacity(frames.len());
            for frame in frames {
                sent.push(self.send(frame).await);
            }
            return sent;
        };
        let mut lines = BytesMut::with_capacity(frames.iter().map(|f| f.bytes().len() + 1).sum());
        for frame in frames {
            self.track(frame);
            lines.extend_from_slice(frame.bytes());
            lines.extend_from_slice(b"\n");
        }
        let sent = child_stdin.write_all(&lines).await.is_ok() && child_stdin.flush().await.is_ok();
        vec![sent; frames.len()]
    }

    /// Remembers what a restart needs: requests awaiting a reply, and the client's initialisation.
    fn track(&self, frame: &Frame) {
        let Some(method) = frame.method() else { return };
        let mut state = self.state();
        match frame.id() {
            Some(id) => {
                if state.in_flight.len() < MAX_IN_FLIGHT {
                    state.in_flight.insert(id.clone());
                }
                if method == "initialize" {
                    state.initialize = Some(frame.clone());
                    state.initialize_answered = false;
                }
            }
            None if method == "notifications/initialized" => state.initialized = Some(frame.clone()),
            // A cancelled request gets no reply (the spec lets the server drop it): nothing to fail later.
            None if method == "notifications/cancelled" => {
                let id = frame.value().and_then(|v| at(v, &["params", "requestId"])).and_then(MessageId::from_value);
                if let Some(id) = id {
                    state.in_flight.remove(&id);
                }
            }
            None => {}
        }
    }

    async fn client_left(&self) {
        // Closing the upstream's stdin is the first step of its shutdown.
        let mut stdin = self.stdin.lock().await;
        drop(stdin.take());
        let down = {
            let mut state = self.state();
            state.closing = true;
            state.child.is_none()
        };
        // A child that is down has no reader to end the relay when it exits: end it here.
        if down {
            let _ = self.done.send(());
        }
    }

    /// A restarting outage has started: kill the child, fail the requests it leaves unanswered, and set the timer
    /// that restarts it when the window ends.
    async fn go_down(self: &Arc<Self>, restart: Restart, trigger: Option<&MessageId>) {
        // Taking the stdin lock waits out a frame being written and holds back the next ones until this is done.
        let mut stdin = self.stdin.lock().await;
        let until = self.shared.start + restart.until;
        let (child, reader, timer) = {
            let mut state = self.state();
            if state.closing {
                return;
            }
            // Set before the kill, so the reader does not take the child's end for an exit of its own.
            let (rule, fault, trigger) = (restart.rule.clone(), restart.fault.clone(), trigger.cloned());
            state.down = Some(Down { rule, fault, trigger, until });
            (state.child.take(), state.reader.take(), state.timer.take())
        };
        if let Some(timer) = timer {
            timer.abort();
        }
        let t = &self.shared.trajectory;
        let (rule, fault) = (restart.rule.as_str(), &restart.fault);
        let window_ms = until.saturating_duration_since(Instant::now()).as_millis();
        // Already down (a new outage after a window ended, before the fresh child started): only the window moves.
        if let Some(mut child) = child {
            let pid = child.id().map_or_else(|| "?".into(), |p| p.to_string());
            let detail = format!("stopping the upstream (pid {pid}) with SIGKILL: server_outage rule {rule:?}");
            t.transport(TransportEventKind::ClosureRequested, trigger, detail);
            stop_child(&mut child, stdin.take(), Stop::Crash).await;
            // What the child wrote before it died is still in the pipe: let it through, so only the requests left
            // without a reply fail. Bounded: a process the child started may hold the pipe open.
            if let Some(mut reader) = reader
                && tokio::time::timeout(EXIT_GRACE, &mut reader).await.is_err()
            {
                reader.abort();
            }
            let unanswered: Vec<MessageId> = self.state().in_flight.drain().collect();
            let detail = format!(
                "upstream stopped: server_outage rule {rule:?} killed pid {pid} (SIGKILL); {} request(s) in flight \
                 fail with the outage; a fresh upstream starts in {window_ms} ms",
                unanswered.len()
            );
            t.transport(TransportEventKind::Closed, trigger, detail);
            for id in unanswered {
                self.shared.engine.disarm(&id);
                self.shared.armed_by.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                // The request reached the child; whether it ran before the crash is unknown.
                answer(&self.shared, &self.outlet, &id, None, rule, fault, None);
            }
        }
        drop(stdin);
        let this = self.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep_until(until).await;
            let mut stdin = this.stdin.lock().await;
            this.restart(&mut stdin).await;
        });
        self.state().timer = Some(timer);
    }

    /// Starts a fresh child once the outage's window has ended, and re-initialises it for the client. `stdin` is
    /// the locked stdin slot: client frames wait until the child is ready.
    async fn restart(self: &Arc<Self>, stdin: &mut Option<ChildStdin>) {
        let (down, spawned) = {
            let mut state = self.state();
            let due = state.down.as_ref().is_some_and(|d| d.until <= Instant::now());
            if state.closing || state.child.is_some() || !due {
                return;
            }
            let Some(down) = state.down.take() else { return };
            let spawned = state.command.spawn();
            (down, spawned)
        };
        let t = &self.shared.trajectory;
        let (rule, fault, trigger) = (down.rule.as_str(), &down.fault, down.trigger.as_ref());
        let started = spawned.and_then(|mut child| match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => Ok((child, stdin, stdout)),
            _ => Err(std::io::Error::other("the fresh upstream has no stdin or stdout")),
        });
        let (child, mut child_stdin, child_stdout) = match started {
            Ok(started) => started,
            Err(e) => {
                // Nothing left to relay to: the relay ends, as when the upstream exits.
                let detail = format!("cannot restart the upstream after server_outage rule {rule:?}: {e}");
                t.transport(TransportEventKind::CloseFailed, trigger, detail);
                self.state().closing = true;
                let _ = self.done.send(());
                return;
            }
        };
        let pid = child.id().map_or_else(|| "?".into(), |p| p.to_string());
        let (answered, replay) = oneshot::channel();
        let (initialize, initialized) = {
            let mut state = self.state();
            state.generation += 1;
            state.child = Some(child);
            state.in_flight.clear();
            let initialize = state.initialize.clone().filter(|_| state.initialize_answered);
            if let Some(id) = initialize.as_ref().and_then(Frame::id) {
                let (rule, fault) = (rule.to_owned(), fault.clone());
                state.reinit = Some(Reinit { id: id.clone(), rule, fault, answered });
            }
            (initialize, state.initialized.clone())
        };
        let generation = self.state().generation;
        let reader = self.read(child_stdout, generation);
        self.state().reader = Some(reader);
        let how = match initialize {
            Some(_) => "the client's initialize replayed, its reply swallowed",
            None => "nothing to replay (the client had no initialize answered)",
        };
        let detail = format!("upstream restarted: server_outage rule {rule:?} started pid {pid}; {how}");
        t.transport(TransportEventKind::Retained, trigger, detail);
        if let Some(initialize) = initialize {
            if write_line(&mut child_stdin, &initialize).await {
                t.injected_frame(Direction::ClientToServer, &initialize, Some(rule), Some(fault), None);
            }
            match tokio::time::timeout(REINIT_PATIENCE, replay).await {
                Ok(Ok(())) => {}
                // The fresh child ended before answering; its reader has ended the relay.
                Ok(Err(_)) => return,
                Err(_) => {
                    let detail = format!(
                        "the restarted upstream (pid {pid}) did not answer the replayed initialize within {} s; \
                         relaying resumes",
                        REINIT_PATIENCE.as_secs()
                    );
                    t.transport(TransportEventKind::Retained, trigger, detail);
                }
            }
            if let Some(initialized) = initialized
                && write_line(&mut child_stdin, &initialized).await
            {
                t.injected_frame(Direction::ClientToServer, &initialized, Some(rule), Some(fault), None);
            }
        }
        *stdin = Some(child_stdin);
    }

    /// Stops the child in the spec's order (the client has left or the proxy is stopping); no restart follows.
    async fn shut_down(&self) {
        let (timer, reader) = {
            let mut state = self.state();
            state.closing = true;
            (state.timer.take(), state.reader.take())
        };
        if let Some(timer) = timer {
            // Awaited, so a restart it was running has let go of the stdin slot and stored its child.
            timer.abort();
            let _ = timer.await;
        }
        if let Some(reader) = reader {
            reader.abort();
        }
        let stdin = self.stdin.lock().await.take();
        let child = self.state().child.take();
        if let Some(mut child) = child {
            stop_child(&mut child, stdin, Stop::Orderly).await;
        }
    }
}

/// Writes one frame as a line.
async fn write_line(stdin: &mut ChildStdin, frame: &Frame) -> bool {
    let bytes = frame.bytes();
    let mut line = BytesMut::with_capacity(bytes.len() + 1);
    line.extend_from_slice(bytes);
    line.extend_from_slice(b"\n");
    stdin.write_all(&line).await.is_ok() && stdin.flush().await.is_ok()
}

/// Reads the client's lines, asks the rules, and hands each frame on.
pub(crate) async fn pump_client<R, U>(
    input: R,
    rules: SharedRules,
    shared: Arc<Shared>,
    outlet: Outlet,
    upstream: Arc<U>,
) where
    R: AsyncRead + Unpin,
    U: Upstream,
{
    let mut lines = FramedRead::new(input, LineCodec::new(MAX_LINE_BYTES));
    // Frames read together that no rule touches go to the upstream together.
    let mut plain = Vec::new();
    while let Some(burst) = next_burst(&mut lines, shared.trajectory.recorder()).await {
        for frame in burst {
            let (mut fired, restart) = {
                let mut rules = rules.lock().unwrap_or_else(|e| e.into_inner());
                let fired = rules.decide(&frame, shared.start.elapsed());
                (fired, rules.take_restart())
            };
            if restart.is_none() && fired.is_none() && frame.method().is_some() && frame.id().is_some() {
                fired = upstream.down();
            }
            if fired.is_none() && restart.is_none() {
                shared.engine.inbound(&frame);
                plain.push(frame);
                continue;
            }
            // What came before this frame goes first.
            forward_plain(&shared, &*upstream, &mut plain).await;
            if let Some(restart) = restart {
                // Before the triggering request is answered: by then the upstream is down.
                upstream.outage_restart(restart, frame.id()).await;
            }
            if fired.is_none() && frame.method().is_some() && frame.id().is_some() {
                fired = upstream.down();
            }
            from_client(&shared, &outlet, &upstream, frame, fired).await;
        }
        forward_plain(&shared, &*upstream, &mut plain).await;
    }
    upstream.client_left().await;
}

/// Sends client frames no rule fired on, together, and records them with one write.
async fn forward_plain<U: Upstream>(shared: &Shared, upstream: &U, frames: &mut Vec<Frame>) {
    if frames.is_empty() {
        return;
    }
    let sent = upstream.send_all(frames).await;
    shared.trajectory.client_frames_forwarded(frames, &sent);
    frames.clear();
}

async fn from_client<U: Upstream>(
    shared: &Arc<Shared>,
    outlet: &Outlet,
    upstream: &Arc<U>,
    frame: Frame,
    fired: Option<Fired>,
) {
    shared.engine.inbound(&frame);
    let t = &shared.trajectory;
    let Some(fired) = fired else {
        let out = u64::from(upstream.send(&frame).await);
        t.client_frame(&frame, FrameAction::Forwarded, None, None, out);
        return;
    };
    let (rule, fault) = (Some(fired.rule.as_str()), Some(&fired.fault));
    let id = frame.id().cloned();
    match fired.mode {
        Mode::After => {
            if let Some(id) = &id
                && shared.engine.arm(id.clone(), fired.fault.clone()).is_ok()
            {
                shared.armed_by.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), fired.rule.clone());
            }
            let out = u64::from(upstream.send(&frame).await);
            t.client_frame(&frame, FrameAction::Forwarded, rule, fault, out);
        }
        Mode::Instead => {
            // The upstream never sees the request; the proxy answers as the fault says.
            t.client_frame(&frame, FrameAction::Consumed, rule, fault, 0);
            let Some(id) = id else { return };
            answer(shared, outlet, &id, Some(&frame), &fired.rule, &fired.fault, Some(false));
        }
        Mode::Before => match fired.fault {
            FaultKind::Latency { delay_ms } => {
                // Held back on its own task: later requests are not held up behind it.
                let (shared, upstream) = (shared.clone(), upstream.clone());
                tokio::spawn(async move {
                    faultlab_engine::clock::precise_sleep(Duration::from_millis(delay_ms)).await;
                    let out = u64::from(upstream.send(&frame).await);
                    let (rule, fault) = (Some(fired.rule.as_str()), Some(&fired.fault));
                    shared.trajectory.client_frame(&frame, FrameAction::Faulted, rule, fault, out);
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
fn answer(
    shared: &Shared,
    outlet: &Outlet,
    id: &MessageId,
    request: Option<&Frame>,
    rule: &str,
    fault: &FaultKind,
    executed: Option<bool>,
) {
    let t = &shared.trajectory;
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

/// Passes one upstream frame through the engine to the client.
pub(crate) fn from_server(shared: &Shared, outlet: &Outlet, frame: Frame) {
    from_server_all(shared, outlet, [frame]);
}

/// Passes upstream frames read together through the engine to the client. Frames no fault fires on are recorded
/// with one write and go to the writer as one batch; a reply with a fault armed goes on its own, after everything
/// before it, so the trajectory keeps the order things happened in and a latency holds back that reply alone.
/// Every frame is recorded before it is handed to the writer.
pub(crate) fn from_server_all(shared: &Shared, outlet: &Outlet, frames: impl IntoIterator<Item = Frame>) {
    let t = &shared.trajectory;
    let (mut events, mut steps) = (Vec::new(), Vec::new());
    let flush = |events: &mut Vec<_>, steps: &mut Vec<Step>| {
        t.record_events(std::mem::take(events));
        outlet.send(std::mem::take(steps));
    };
    for frame in frames {
        // The fault's own events (fault_activated) are recorded as it fires: the frames before it go first.
        if frame.id().is_some_and(|id| shared.engine.is_armed(id)) {
            flush(&mut events, &mut steps);
        }
        let (fired, actions) = shared.engine.outbound_fired(&frame);
        let rule = match (&fired, frame.id()) {
            (Some(_), Some(id)) => shared.armed_by.lock().unwrap_or_else(|e| e.into_inner()).remove(id),
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
/// size limit is recorded as rejected and skipped.
async fn next_burst<R: AsyncRead + Unpin>(
    lines: &mut FramedRead<R, LineCodec>,
    recorder: &faultlab_engine::Recorder,
) -> Option<Vec<Frame>> {
    let mut burst = Vec::new();
    let mut next = lines.next().await;
    loop {
        match next {
            Some(Ok(Line::Bytes(bytes))) => burst.push(Frame::parse(bytes)),
            Some(Ok(Line::TooLong)) => {
                recorder.record(Event::FrameRejected { reason: format!("a line over {MAX_LINE_BYTES} bytes, skipped") })
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
