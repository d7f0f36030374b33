//! The child-process upstream: a stdio server the proxy starts, stops in order, and replaces after a restarting
//! `server_outage`.
//!
//! A `server_outage` rule with `restart` crashes the child when its window starts (SIGKILL at once: an outage is
//! a crash, not the orderly stop of a client that is done), lets through the replies the child wrote before it
//! died, and answers every request still waiting with the outage's 503. When the window ends a fresh child is
//! started with the same command and re-initialised with the client's own `initialize` and
//! `notifications/initialized` (the fresh child's `initialize` reply is swallowed: the client has one already),
//! so the client carries on without initialising again. Client frames wait while the fresh child is prepared.

use crate::relay::{
    Connect, InFlight, Link, ProxyError, ProxyOptions, Relay, UPSTREAM_GONE, Upstream, answer, dropped,
    from_server_all, next_burst, reply_error,
};
use crate::rules::{Fired, Mode, Restart};
use faultlab_engine::FaultKind;
use faultlab_engine::outlet::Outlet;
use faultlab_engine::recorder::{Direction, Event, FrameAction, TransportEventKind};
use faultlab_proc::child::{self, ChildCommand, ChildProcess, LineWriter, Lines, Spawned, Stdin, StopStep};
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, MessageId};
use serde_json::json;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long a restarted child gets to answer the replayed `initialize` before relaying resumes anyway: client
/// frames wait meanwhile, and a server that never answers must not hold them forever (10 s).
const REINIT_PATIENCE: Duration = Duration::from_secs(10);

/// Why the upstream is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// The client closed its side (or the writer ended: a disconnect fault, a closed stdout).
    ClientGone,
    /// SIGINT/SIGTERM asked the proxy to stop.
    Stop,
    /// The upstream closed its stdout on its own: it is exiting, or has exited.
    UpstreamEnded,
}

/// A stdio server to start as the upstream (`faultlab proxy -- CMD ARGS`).
pub struct Child(pub Command);

impl Connect for Child {
    type Upstream = ChildUpstream;

    fn connect(self, link: Link) -> Result<Arc<ChildUpstream>, ProxyError> {
        let mut command = ChildCommand::new(self.0);
        let Spawned { process, stdin, stdout } = command
            .spawn(link.options.max_frame_bytes)
            .map_err(|source| ProxyError::Spawn { command: command.shown().to_owned(), source })?;
        let (stopped, _) = tokio::sync::watch::channel(false);
        let supervisor = Arc::new(Supervisor {
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            state: Mutex::new(ChildState::new(command, process)),
            relay: link.relay.clone(),
            outlet: link.outlet.clone(),
            done: link.done.clone(),
            options: link.options,
            stopped,
        });
        let reader = supervisor.read(stdout, 0);
        supervisor.state().reader = Some(reader);
        Ok(Arc::new(ChildUpstream(supervisor)))
    }
}

/// A child process upstream, which a restarting outage can replace.
pub struct ChildUpstream(Arc<Supervisor>);

impl Upstream for ChildUpstream {
    async fn send(&self, frame: &Frame) -> bool {
        self.0.send(frame).await
    }

    async fn send_all(&self, frames: &[Frame]) -> Vec<bool> {
        self.0.send_all(frames).await
    }

    async fn client_left(&self) {
        self.0.client_left();
    }

    async fn outage_restart(&self, restart: Restart, trigger: Option<&MessageId>) {
        self.0.go_down(restart, trigger).await;
    }

    fn down(&self) -> Option<Fired> {
        let state = self.0.state();
        let down = state.down.as_ref().filter(|d| Instant::now() < d.until)?;
        Some(Fired { rule: down.rule.clone(), mode: Mode::Instead, fault: down.fault.clone() })
    }

    fn stop(&self) {
        // The same bounded shutdown as the client leaving; the writer relays what the child still writes.
        self.0.begin_shutdown(Cause::Stop);
    }

    async fn finish(&self) -> Option<String> {
        // Ends the child when the writer ended first (a disconnect fault, a closed stdout); otherwise it has ended.
        self.0.begin_shutdown(Cause::ClientGone);
        self.0.shut_down().await;
        self.0.state().died.take()
    }
}

/// The upstream child: its stdin, and everything it takes to replace it after a restarting outage.
struct Supervisor {
    /// The running child's stdin; `None` while the child is down and once the client has left. Held for a whole
    /// stop and restart, so client frames wait until the fresh child has been initialised.
    stdin: tokio::sync::Mutex<Option<LineWriter>>,
    state: Mutex<ChildState>,
    relay: Arc<Relay>,
    outlet: Outlet,
    /// Ends the relay: the shutdown has ended.
    done: mpsc::UnboundedSender<()>,
    options: ProxyOptions,
    /// Turns true when the shutdown has ended (the upstream reaped, its replies drained, pending requests failed).
    stopped: tokio::sync::watch::Sender<bool>,
}

struct ChildState {
    /// The upstream's command, kept to start a fresh child after a restarting outage.
    command: ChildCommand,
    /// The running child; `None` while it is down, and once the proxy has stopped it.
    child: Option<ChildProcess>,
    /// Counts children started (the first is 0). A reader's end matters only while its child is the running one.
    generation: u64,
    /// The task reading the running child's stdout.
    reader: Option<JoinHandle<()>>,
    /// Requests forwarded to the running child that it has not answered and the client has not cancelled.
    in_flight: InFlight,
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
    /// The shutdown has started (it runs once).
    shutting_down: bool,
    /// How the upstream exited, when it did so on its own with the client still there or requests pending.
    died: Option<String>,
}

impl ChildState {
    fn new(command: ChildCommand, child: ChildProcess) -> Self {
        Self {
            command,
            child: Some(child),
            generation: 0,
            reader: None,
            in_flight: InFlight::default(),
            initialize: None,
            initialize_answered: false,
            initialized: None,
            down: None,
            timer: None,
            reinit: None,
            closing: false,
            shutting_down: false,
            died: None,
        }
    }
}

/// The outage a child is down for.
struct Down {
    rule: String,
    fault: FaultKind,
    /// The request that started it.
    trigger: Option<MessageId>,
    /// When its window ends (the rules' clock: `Relay::start` plus the window's end).
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
        lock(&self.state)
    }

    /// Reads the stdout of child `generation`, passing each frame on; the frames of one read go on together.
    fn read(self: &Arc<Self>, mut lines: Lines, generation: u64) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let too_long = |id: Option<MessageId>, bytes: usize| {
                // The client waits for this reply: it gets an error instead, and a restart no longer owes it one.
                if let Some(id) = &id {
                    this.state().in_flight.answered(id);
                }
                dropped(&this.relay, &this.outlet, Direction::ServerToClient, id, bytes, this.options.max_frame_bytes);
            };
            while let Some(burst) = next_burst(&mut lines, too_long).await {
                let frames: Vec<Frame> = burst.into_iter().filter_map(|frame| this.pass_on(frame)).collect();
                from_server_all(&this.relay, &this.outlet, frames);
            }
            this.child_ended(generation);
        })
    }

    /// One frame from the child: the reply to a replayed `initialize` is swallowed (`None`), everything else is
    /// returned to go to the client through the engine.
    fn pass_on(&self, frame: Frame) -> Option<Frame> {
        if frame.is_reply()
            && let Some(id) = frame.id()
        {
            let reinit = {
                let mut state = self.state();
                let reinit = state.reinit.take_if(|r| r.id == *id);
                if reinit.is_none() {
                    state.in_flight.answered(id);
                    if state.initialize.as_ref().and_then(Frame::id) == Some(id) {
                        state.initialize_answered = true;
                    }
                }
                reinit
            };
            if let Some(reinit) = reinit {
                // The client got its own reply to this `initialize` from the first child; this one is the proxy's.
                let t = &self.relay.trajectory;
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
    fn child_ended(self: &Arc<Self>, generation: u64) {
        let mut state = self.state();
        // A child the proxy stopped for an outage, or one already replaced: the relay goes on.
        if state.generation != generation || state.down.is_some() {
            return;
        }
        // The running child is exiting on its own: the relay ends (and a restart waiting for its reply stops
        // waiting).
        state.reinit = None;
        drop(state);
        self.begin_shutdown(Cause::UpstreamEnded);
    }

    /// Sends one client frame to the running child (starting a fresh one first if an outage window has ended).
    async fn send(self: &Arc<Self>, frame: &Frame) -> bool {
        let mut stdin = self.stdin.lock().await;
        let down = if stdin.is_none() {
            self.state().down.as_ref().map(|d| (d.until, d.rule.clone(), d.fault.clone()))
        } else {
            None
        };
        if let Some((until, rule, fault)) = down {
            if Instant::now() >= until {
                // The window has ended before the timer restarted the child: restart it now, before this frame.
                self.restart(&mut stdin).await;
            } else if let (Some(_), Some(id)) = (frame.method(), frame.id()) {
                // A request the rules let through while the process is still down (one held back by a `before`
                // latency, or after a control-API reset): it fails like the others in the window.
                answer(&self.relay, &self.outlet, id, Some(frame), &rule, &fault, Some(false));
                return false;
            }
        }
        let Some(child_stdin) = stdin.as_mut() else {
            // Stopping: the upstream takes nothing more, and a request must not wait for a reply that cannot come.
            if let (Some(_), Some(id)) = (frame.method(), frame.id()) {
                let message = "the upstream is being stopped; the request was not forwarded";
                reply_error(&self.relay, &self.outlet, id, UPSTREAM_GONE, message, json!({"upstream": "stopping"}));
            }
            return false;
        };
        self.track(frame);
        child_stdin.send(frame.bytes()).await.is_ok()
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
        for frame in frames {
            self.track(frame);
        }
        let sent = child_stdin.send_all(frames.iter().map(|f| &f.bytes()[..])).await.is_ok();
        vec![sent; frames.len()]
    }

    /// Remembers what a restart needs: requests awaiting a reply, and the client's initialisation.
    fn track(&self, frame: &Frame) {
        let mut state = self.state();
        state.in_flight.sent(frame);
        match (frame.method(), frame.id()) {
            (Some("initialize"), Some(_)) => {
                state.initialize = Some(frame.clone());
                state.initialize_answered = false;
            }
            (Some("notifications/initialized"), None) => state.initialized = Some(frame.clone()),
            _ => {}
        }
    }

    fn client_left(self: &Arc<Self>) {
        self.begin_shutdown(Cause::ClientGone);
    }

    /// A restarting outage has started: kill the child, fail the requests it leaves unanswered, and set the timer
    /// that restarts it when the window ends.
    async fn go_down(self: &Arc<Self>, restart: Restart, trigger: Option<&MessageId>) {
        // Taking the stdin lock waits out a frame being written and holds back the next ones until this is done.
        let mut stdin = self.stdin.lock().await;
        let until = self.relay.start + restart.until;
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
        let t = &self.relay.trajectory;
        let (rule, fault) = (restart.rule.as_str(), &restart.fault);
        let window_ms = until.saturating_duration_since(Instant::now()).as_millis();
        // Already down (a new outage after a window ended, before the fresh child started): only the window moves.
        if let Some(mut child) = child {
            let pid = child.shown_pid();
            let detail = format!("stopping the upstream (pid {pid}) with SIGKILL: server_outage rule {rule:?}");
            t.transport(TransportEventKind::ClosureRequested, trigger, detail);
            child.crash().await;
            *stdin = None;
            // What the child wrote before it died is still in the pipe: let it through, so only the requests left
            // without a reply fail. Bounded: a process the child started may hold the pipe open.
            if let Some(mut reader) = reader
                && tokio::time::timeout(self.options.shutdown_grace, &mut reader).await.is_err()
            {
                reader.abort();
            }
            let unanswered = self.state().in_flight.drain();
            let detail = format!(
                "upstream stopped: server_outage rule {rule:?} killed pid {pid} (SIGKILL); {} request(s) in flight \
                 fail with the outage; a fresh upstream starts in {window_ms} ms",
                unanswered.len()
            );
            t.transport(TransportEventKind::Closed, trigger, detail);
            for id in unanswered {
                self.relay.engine.disarm(&id);
                lock(&self.relay.armed_by).remove(&id);
                // The request reached the child; whether it ran before the crash is unknown.
                answer(&self.relay, &self.outlet, &id, None, rule, fault, None);
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
    async fn restart(self: &Arc<Self>, stdin: &mut Option<LineWriter>) {
        let (down, spawned) = {
            let mut state = self.state();
            let due = state.down.as_ref().is_some_and(|d| d.until <= Instant::now());
            if state.closing || state.child.is_some() || !due {
                return;
            }
            let Some(down) = state.down.take() else { return };
            let spawned = state.command.spawn(self.options.max_frame_bytes);
            (down, spawned)
        };
        let t = &self.relay.trajectory;
        let (rule, fault, trigger) = (down.rule.as_str(), &down.fault, down.trigger.as_ref());
        let Spawned { process: child, stdin: mut child_stdin, stdout: child_stdout } = match spawned {
            Ok(spawned) => spawned,
            Err(e) => {
                // Nothing left to relay to: the relay ends, as when the upstream exits.
                let detail = format!("cannot restart the upstream after server_outage rule {rule:?}: {e}");
                t.transport(TransportEventKind::CloseFailed, trigger, detail);
                self.state().closing = true;
                let _ = self.done.send(());
                return;
            }
        };
        let pid = child.shown_pid();
        let (answered, replay) = oneshot::channel();
        let (initialize, initialized) = {
            let mut state = self.state();
            state.generation += 1;
            state.child = Some(child);
            state.in_flight = InFlight::default();
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
            if child_stdin.send(initialize.bytes()).await.is_ok() {
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
                && child_stdin.send(initialized.bytes()).await.is_ok()
            {
                t.injected_frame(Direction::ClientToServer, &initialized, Some(rule), Some(fault), None);
            }
        }
        *stdin = Some(child_stdin);
    }

    /// Starts the shutdown (once; later calls do nothing), on its own task so the relay goes on meanwhile.
    fn begin_shutdown(self: &Arc<Self>, cause: Cause) {
        {
            let mut state = self.state();
            if state.shutting_down {
                return;
            }
            state.shutting_down = true;
            state.closing = true;
        }
        let this = self.clone();
        tokio::spawn(async move {
            this.stop_upstream(cause).await;
            this.stopped.send_replace(true);
            let _ = this.done.send(());
        });
    }

    /// Waits until the shutdown has ended.
    async fn shut_down(&self) {
        let mut stopped = self.stopped.subscribe();
        let _ = stopped.wait_for(|stopped| *stopped).await;
    }

    /// Stops the child in the spec's order, each step bounded and recorded: close its stdin; after the grace,
    /// SIGTERM to its process group; after the grace again, SIGKILL to the group. Then whatever is left of the group
    /// (a helper the upstream started) gets SIGKILL, the replies it wrote are let through, and every request still
    /// waiting gets a JSON-RPC error. No restart follows.
    async fn stop_upstream(self: &Arc<Self>, cause: Cause) {
        use faultlab_engine::recorder::ShutdownStep;
        let timer = self.state().timer.take();
        if let Some(timer) = timer {
            // Awaited, so a restart it was running has let go of the stdin slot and stored its child.
            timer.abort();
            let _ = timer.await;
        }
        // A write blocked on a child that does not read holds the slot; it ends when the child does.
        let stdin = match tokio::time::timeout(self.options.shutdown_grace, self.stdin.lock()).await {
            Ok(mut slot) => Stdin::Close(slot.take()),
            Err(_) => Stdin::Stuck,
        };
        let (child, reader) = {
            let mut state = self.state();
            (state.child.take(), state.reader.take())
        };
        let t = &self.relay.trajectory;
        let step = |step, detail: String| t.record(Event::Shutdown { step, detail });
        let grace = self.options.shutdown_grace;
        let (mut status, mut alone) = (None, false);
        if let Some(mut child) = child {
            let shown = child.shown_pid();
            let secs = grace.as_secs_f64();
            let stopped = child
                .stop(stdin, grace, |s| match s {
                    StopStep::StdinClosed => step(
                        ShutdownStep::StdinClosed,
                        format!("closed the upstream's stdin (pid {shown}); it has {secs} s to exit"),
                    ),
                    StopStep::Sigterm => step(
                        ShutdownStep::Sigterm,
                        format!("SIGTERM to process group {shown}; it has {secs} s to exit"),
                    ),
                    StopStep::Sigkill => step(ShutdownStep::Sigkill, format!("SIGKILL to process group {shown}")),
                })
                .await;
            (status, alone) = (stopped.status, stopped.on_its_own);
            let (words, ..) = child::describe(status);
            let rest = if stopped.leftovers { "; SIGKILL to what was left of its process group" } else { "" };
            step(ShutdownStep::Exited, format!("the upstream (pid {shown}) ended with {words}{rest}"));
        } else {
            drop(stdin);
        }
        // What the upstream wrote before it ended is still in the pipe: let it through before failing what is left
        // unanswered. Bounded: a process outside its group may hold the pipe open.
        if let Some(mut reader) = reader
            && tokio::time::timeout(grace, &mut reader).await.is_err()
        {
            reader.abort();
        }
        let pending = self.state().in_flight.drain();
        // Ended on its own with the client still there, or on the client's EOF with a failing status and requests
        // unanswered. A clean exit once its stdin closed is what the spec asks of a stdio server, even with a
        // request open: the client left, so its open requests fail, but the upstream did not die. Stopped for a
        // signal, the upstream did as asked too.
        let died = match cause {
            Cause::UpstreamEnded => true,
            Cause::ClientGone => alone && !pending.is_empty() && !status.is_some_and(|s| s.success()),
            Cause::Stop => false,
        };
        let (message, data) = if died {
            let (words, code, signal) = child::describe(status);
            t.record(Event::UpstreamExit { status: words.clone(), code, signal, pending: pending.len() });
            self.state().died = Some(words.clone());
            let data = json!({"upstreamExit": {"status": words, "code": code, "signal": signal}});
            (format!("the upstream exited ({words}) before answering"), data)
        } else {
            ("the upstream was stopped before answering".to_owned(), json!({"upstream": "stopped"}))
        };
        self.relay.fail(&self.outlet, pending, &message, &data);
    }
}
