//! The stdio proxy: the client speaks to us on stdin/stdout; the upstream server is our child process.
//!
//! ```text
//! client ─stdin─▶ [client pump: rules] ─▶ child stdin          child stdout ─▶ [server pump: engine] ─▶ outlet ─▶ stdout
//! ```
//!
//! Lines pass byte for byte unless a rule fires. `after` arms the rule's fault on the request id in the one
//! fault engine, which applies it to the upstream's reply; `instead` answers from the proxy without forwarding;
//! `before` delays or disconnects before forwarding. Every frame is recorded, and the run ends with a ledger.

use crate::rules::{Fired, Mode, SharedRules};
use crate::trajectory::{Trajectory, frames_written};
use bytes::BytesMut;
use faultlab_engine::catalogue::Reply;
use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use faultlab_engine::recorder::{Direction, FrameAction};
use faultlab_engine::render::{self, Step};
use faultlab_engine::{Engine, FaultKind};
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES, MessageId};
use futures::StreamExt;
use serde_json::json;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

/// After the client leaves, how long the upstream gets to exit on its own, then after SIGTERM (the spec's order).
const EXIT_GRACE: Duration = Duration::from_secs(2);

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
    let child_stdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take()));
    let child_stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("the upstream has no stdout"))?;
    {
        let rules = rules.lock().unwrap_or_else(|e| e.into_inner());
        trajectory.started(rules.seed(), rules.len());
    }
    let recorder = trajectory.recorder().clone();
    let shared = Shared::new(trajectory.clone());
    let (outlet, queue) = Outlet::new();
    let (done_tx, done_rx) = mpsc::unbounded_channel();

    let upstream = Arc::new(ChildUpstream(child_stdin.clone()));
    let client = tokio::spawn(pump_client(input, rules, shared.clone(), outlet.clone(), upstream));
    let server = {
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut lines = FramedRead::new(child_stdout, LineCodec::new(MAX_LINE_BYTES));
            while let Some(Ok(Line::Bytes(bytes))) = lines.next().await {
                from_server(&shared, &outlet, Frame::parse(bytes));
            }
            let _ = done_tx.send(());
        })
    };
    // A stop (SIGINT/SIGTERM) ends the relay the same way as the client leaving, so the upstream still gets the
    // orderly shutdown below rather than a kill.
    let end = tokio::select! {
        end = outlet::write_stream(output, queue, done_rx, &recorder, |_| {}) => end,
        () = stop.cancelled() => Ok(WriterEnd::Finished),
    };
    client.abort();
    server.abort();
    shut_down(&mut child, &child_stdin).await;
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

/// Closes the upstream's stdin, waits, then SIGTERM, waits, then SIGKILL.
async fn shut_down(child: &mut tokio::process::Child, stdin: &tokio::sync::Mutex<Option<ChildStdin>>) {
    drop(stdin.lock().await.take());
    if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
        return;
    }
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
    }
    if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

/// Where client frames go: a child's stdin, or an HTTP endpoint.
pub(crate) trait Upstream: Send + Sync + 'static {
    /// Sends one frame; false when the upstream is gone.
    fn send(&self, frame: &Frame) -> impl std::future::Future<Output = bool> + Send;
    /// The client has left.
    fn client_left(&self) -> impl std::future::Future<Output = ()> + Send;
}

struct ChildUpstream(Arc<tokio::sync::Mutex<Option<ChildStdin>>>);

impl Upstream for ChildUpstream {
    async fn send(&self, frame: &Frame) -> bool {
        let bytes = frame.bytes();
        let mut line = BytesMut::with_capacity(bytes.len() + 1);
        line.extend_from_slice(bytes);
        line.extend_from_slice(b"\n");
        match self.0.lock().await.as_mut() {
            Some(stdin) => stdin.write_all(&line).await.is_ok() && stdin.flush().await.is_ok(),
            None => false,
        }
    }

    async fn client_left(&self) {
        // Closing the upstream's stdin is the first step of its shutdown.
        drop(self.0.lock().await.take());
    }
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
    while let Some(Ok(line)) = lines.next().await {
        let Line::Bytes(bytes) = line else { continue };
        let frame = Frame::parse(bytes);
        let fired = rules.lock().unwrap_or_else(|e| e.into_inner()).decide(&frame, shared.start.elapsed());
        from_client(&shared, &outlet, &upstream, frame, fired).await;
    }
    upstream.client_left().await;
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
            let stand_in = Frame::from_value(json!({
                "jsonrpc": "2.0", "id": id.to_value(),
                "result": {"content": [{"type": "text", "text": format!("answered by faultlab rule {}", fired.rule)}]}
            }));
            let actions = fired.fault.apply(Reply { frame: &stand_in, request: Some(&frame) });
            let sent = frames_written(&actions);
            t.injected(sent);
            if sent > 0 {
                t.record(Direction::ServerToClient, FrameAction::Injected, &stand_in, rule, fault, Some(false));
            }
            outlet.send(actions.iter().flat_map(render::line).collect());
        }
        Mode::Before => match fired.fault {
            FaultKind::Latency { delay_ms } => {
                // Held back on its own task: later requests are not held up behind it.
                let (shared, upstream) = (shared.clone(), upstream.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
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

/// Passes one upstream frame through the engine to the client.
pub(crate) fn from_server(shared: &Shared, outlet: &Outlet, frame: Frame) {
    let (fired, actions) = shared.engine.outbound_fired(&frame);
    let rule = match (&fired, frame.id()) {
        (Some(_), Some(id)) => shared.armed_by.lock().unwrap_or_else(|e| e.into_inner()).remove(id),
        _ => None,
    };
    shared.trajectory.server_frame(&frame, rule.as_deref(), fired.as_ref(), &actions, true);
    outlet.send(actions.iter().flat_map(render::line).collect());
}
