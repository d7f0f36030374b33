//! The stdio proxy: the client speaks to us on stdin/stdout; the upstream server is our child process.
//!
//! ```text
//! client ─stdin─▶ [client pump: rules] ─▶ child stdin          child stdout ─▶ [server pump: engine] ─▶ outlet ─▶ stdout
//! ```
//!
//! Lines pass byte for byte unless a rule fires. `after` arms the rule's fault on the request id in the one
//! fault engine, which applies it to the upstream's reply; `instead` answers from the proxy without forwarding;
//! `before` delays or disconnects before forwarding. Every frame is recorded, and the run ends with a ledger.

use crate::rules::{Fired, Mode, RuleSet};
use bytes::{Bytes, BytesMut};
use faultlab_engine::catalogue::Reply;
use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use faultlab_engine::recorder::{Direction, Event, FrameAction};
use faultlab_engine::render::{self, Step};
use faultlab_engine::{Engine, FaultKind, Recorder, WireAction};
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES, MessageId};
use futures::StreamExt;
use serde_json::json;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

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

#[derive(Default)]
struct Ledger {
    frames_in: AtomicU64,
    frames_out: AtomicU64,
    consumed: AtomicU64,
    injected: AtomicU64,
}

impl Ledger {
    /// Accounts for one frame in that left as `out` frames.
    fn account(&self, out: u64) {
        self.frames_in.fetch_add(1, Ordering::Relaxed);
        self.frames_out.fetch_add(out, Ordering::Relaxed);
        match out {
            0 => self.consumed.fetch_add(1, Ordering::Relaxed),
            n => self.injected.fetch_add(n - 1, Ordering::Relaxed),
        };
    }
}

struct Shared {
    engine: Engine,
    recorder: Recorder,
    ledger: Ledger,
    /// Which rule armed a fault on which request id (to name it when the reply passes).
    armed_by: Mutex<HashMap<MessageId, String>>,
    start: Instant,
}

/// Runs the proxy until the client leaves, the upstream exits, or a fault disconnects the client.
pub async fn run<R, W>(
    mut command: Command,
    mut rules: RuleSet,
    recorder: Recorder,
    input: R,
    output: W,
) -> Result<ProxyEnd, ProxyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let shown = format!("{:?}", command.as_std().get_program());
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
    // SAFETY: the closure only calls prctl, which is async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            // If the proxy dies (even by SIGKILL), the kernel sends the upstream SIGTERM: no orphan is left.
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM).map_err(std::io::Error::from)
        });
    }
    let mut child = command.spawn().map_err(|source| ProxyError::Spawn { command: shown, source })?;
    let child_stdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take()));
    let child_stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("the upstream has no stdout"))?;
    recorder.record(Event::RunStarted { seed: rules.seed(), rules: rules.len() });
    let shared = Arc::new(Shared {
        engine: Engine::new(recorder.clone()),
        recorder: recorder.clone(),
        ledger: Ledger::default(),
        armed_by: Mutex::default(),
        start: Instant::now(),
    });
    let (outlet, queue) = Outlet::new();
    let (done_tx, done_rx) = mpsc::unbounded_channel();

    let client = {
        let (shared, outlet, child_stdin) = (shared.clone(), outlet.clone(), child_stdin.clone());
        tokio::spawn(async move {
            let mut lines = FramedRead::new(input, LineCodec::new(MAX_LINE_BYTES));
            while let Some(Ok(line)) = lines.next().await {
                let Line::Bytes(bytes) = line else { continue };
                let frame = Frame::parse(bytes);
                let fired = rules.decide(&frame, shared.start.elapsed());
                from_client(&shared, &outlet, &child_stdin, frame, fired).await;
            }
            // The client left: close the upstream's stdin, the first step of its shutdown.
            drop(child_stdin.lock().await.take());
        })
    };
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
    let end = outlet::write_stream(output, queue, done_rx, &recorder, |_| {}).await;
    client.abort();
    server.abort();
    shut_down(&mut child, &child_stdin).await;
    let ledger = &shared.ledger;
    recorder.record(Event::Ledger {
        frames_in: ledger.frames_in.load(Ordering::Relaxed),
        frames_out: ledger.frames_out.load(Ordering::Relaxed),
        consumed: ledger.consumed.load(Ordering::Relaxed),
        injected: ledger.injected.load(Ordering::Relaxed),
    });
    Ok(match end? {
        WriterEnd::Finished => ProxyEnd::Finished,
        WriterEnd::Closed => ProxyEnd::Disconnected,
    })
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

fn record(
    shared: &Shared,
    direction: Direction,
    action: FrameAction,
    frame: &Frame,
    rule: Option<&str>,
    fault: Option<&FaultKind>,
    executed: Option<bool>,
) {
    shared.recorder.record(Event::Frame {
        direction,
        action,
        id: frame.id().map(MessageId::to_value),
        method: frame.method().map(str::to_owned),
        tool: frame.tool_name().map(str::to_owned),
        rule: rule.map(str::to_owned),
        fault: fault.map(|f| f.name().to_owned()),
        executed,
        bytes: frame.bytes().len(),
    });
}

async fn forward(stdin: &tokio::sync::Mutex<Option<ChildStdin>>, bytes: &Bytes) -> bool {
    let mut line = BytesMut::with_capacity(bytes.len() + 1);
    line.extend_from_slice(bytes);
    line.extend_from_slice(b"\n");
    match stdin.lock().await.as_mut() {
        Some(stdin) => stdin.write_all(&line).await.is_ok() && stdin.flush().await.is_ok(),
        None => false,
    }
}

async fn from_client(
    shared: &Arc<Shared>,
    outlet: &Outlet,
    stdin: &Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    frame: Frame,
    fired: Option<Fired>,
) {
    shared.engine.inbound(&frame);
    let c2s = Direction::ClientToServer;
    let Some(fired) = fired else {
        shared.ledger.account(u64::from(forward(stdin, frame.bytes()).await));
        record(shared, c2s, FrameAction::Forwarded, &frame, None, None, None);
        return;
    };
    let id = frame.id().cloned();
    match fired.mode {
        Mode::After => {
            if let Some(id) = &id
                && shared.engine.arm(id.clone(), fired.fault.clone()).is_ok()
            {
                shared.armed_by.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), fired.rule.clone());
            }
            shared.ledger.account(u64::from(forward(stdin, frame.bytes()).await));
            record(shared, c2s, FrameAction::Forwarded, &frame, Some(&fired.rule), Some(&fired.fault), None);
        }
        Mode::Instead => {
            // The upstream never sees the request; the proxy answers as the fault says.
            shared.ledger.account(0);
            record(shared, c2s, FrameAction::Consumed, &frame, Some(&fired.rule), Some(&fired.fault), Some(false));
            let Some(id) = id else { return };
            let stand_in = Frame::from_value(json!({
                "jsonrpc": "2.0", "id": id.to_value(),
                "result": {"content": [{"type": "text", "text": format!("answered by faultlab rule {}", fired.rule)}]}
            }));
            let actions = fired.fault.apply(Reply { frame: &stand_in, request: Some(&frame) });
            let sent = count_frames(&actions);
            shared.ledger.frames_out.fetch_add(sent, Ordering::Relaxed);
            shared.ledger.injected.fetch_add(sent, Ordering::Relaxed);
            if sent > 0 {
                record(
                    shared,
                    Direction::ServerToClient,
                    FrameAction::Injected,
                    &stand_in,
                    Some(&fired.rule),
                    Some(&fired.fault),
                    Some(false),
                );
            }
            outlet.send(actions.iter().flat_map(render::line).collect());
        }
        Mode::Before => match fired.fault {
            FaultKind::Latency { delay_ms } => {
                record(shared, c2s, FrameAction::Faulted, &frame, Some(&fired.rule), Some(&fired.fault), None);
                // Held back on its own task: later requests are not held up behind it.
                let (shared, stdin) = (shared.clone(), stdin.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                    shared.ledger.account(u64::from(forward(&stdin, frame.bytes()).await));
                });
            }
            _ => {
                shared.ledger.account(0);
                record(shared, c2s, FrameAction::Consumed, &frame, Some(&fired.rule), Some(&fired.fault), Some(false));
                outlet.send(vec![Step::Close]);
            }
        },
    }
}

fn from_server(shared: &Shared, outlet: &Outlet, frame: Frame) {
    let (fired, actions) = shared.engine.outbound_fired(&frame);
    let sent = count_frames(&actions);
    shared.ledger.account(sent);
    let s2c = Direction::ServerToClient;
    match fired {
        None => record(shared, s2c, FrameAction::Forwarded, &frame, None, None, None),
        Some(fault) => {
            let rule = frame.id().and_then(|id| shared.armed_by.lock().unwrap_or_else(|e| e.into_inner()).remove(id));
            let action = if sent == 0 { FrameAction::Consumed } else { FrameAction::Faulted };
            record(shared, s2c, action, &frame, rule.as_deref(), Some(&fault), Some(true));
        }
    }
    outlet.send(actions.iter().flat_map(render::line).collect());
}

/// How many frames a list of actions writes.
fn count_frames(actions: &[WireAction]) -> u64 {
    actions
        .iter()
        .filter(|a| matches!(a, WireAction::Send(_) | WireAction::SendFramed { .. } | WireAction::HttpStatus { .. }))
        .count() as u64
}
