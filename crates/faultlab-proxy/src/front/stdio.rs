//! The stdio front: the client speaks to the proxy on stdin/stdout (or any reader and writer); the relay carries
//! its lines to an [`Upstream`](crate::relay::Upstream) and the upstream's frames back.
//!
//! ```text
//! client ─input─▶ [relay: rules] ─▶ upstream          upstream ─▶ [relay: engine] ─▶ outlet ─▶ writer ─output─▶ client
//! ```
//!
//! `faultlab serve` on stdio is this front with no rules in front of its rmcp server in process
//! ([`serve_in_process`]): the server's tools arm their faults on the relay's engine.

use crate::relay::{Connect, Link, ProxyEnd, ProxyError, ProxyOptions, Relay, Upstream, pump_client};
use crate::rules::{RuleSet, RulesFile, SharedRules};
use crate::trajectory::TrajectoryWriter;
use crate::upstream::in_process::InProcess;
use faultlab_engine::Engine;
use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use faultlab_wire::sync::lock;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

/// Runs the stdio front until the client leaves, the upstream ends, a fault disconnects the client, or `stop`
/// fires (then the upstream gets its orderly end first: [`Upstream::stop`]). The upstream is started here, and
/// stopped before this returns.
pub async fn run(
    options: ProxyOptions,
    upstream: impl Connect,
    rules: SharedRules,
    trajectory: Arc<TrajectoryWriter>,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    stop: CancellationToken,
) -> Result<ProxyEnd, ProxyError> {
    let relay = Relay::starting_at(trajectory, tokio::time::Instant::now());
    relay_lines(relay, options, upstream, rules, input, output, stop).await
}

/// Serves one client on `input`/`output` from a server in process (`faultlab serve` on stdio): no rules; the faults
/// are the ones the server's tools arm on `engine`, and only what went wrong (a frame dropped, the server's end)
/// is recorded, to the engine's recorder. Ends when the client leaves or a fault disconnects it.
pub async fn serve_in_process(
    engine: Arc<Engine>,
    server: InProcess,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    max_frame_bytes: usize,
) -> Result<ProxyEnd, ProxyError> {
    let trajectory = Arc::new(TrajectoryWriter::new(engine.recorder().clone()).diagnostics_only());
    let relay = Relay::with_engine(engine, trajectory);
    let options = ProxyOptions { max_frame_bytes, ..ProxyOptions::default() };
    let rules = RuleSet::new(RulesFile::default()).shared();
    relay_lines(relay, options, server, rules, input, output, CancellationToken::new()).await
}

/// Relays lines between one client and `upstream` through `relay`: [`run`], and each connection of the Unix-socket
/// front, whose `relay` keeps the rules' clock (windows, schedules) running from the run's start, not from the
/// connection's.
pub(crate) async fn relay_lines(
    relay: Arc<Relay>,
    options: ProxyOptions,
    upstream: impl Connect,
    rules: SharedRules,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    stop: CancellationToken,
) -> Result<ProxyEnd, ProxyError> {
    let trajectory = relay.trajectory.clone();
    let (outlet, queue) = Outlet::new();
    let (done, done_rx) = mpsc::unbounded_channel();
    let link = Link { relay: relay.clone(), outlet: outlet.clone(), done, options };
    let upstream = upstream.connect(link)?;
    {
        let rules = lock(&rules);
        trajectory.started(rules.seed(), rules.len());
    }
    let engine = relay.engine.clone();
    // Unchanged frames' events are written in batches, at most `FLUSH_WITHIN` late; the rest when the run ends.
    let flusher = AbortOnDropHandle::new(tokio::spawn(trajectory.flusher()));
    let client = tokio::spawn(pump_client(input, rules, relay, outlet, upstream.clone(), options.max_frame_bytes));
    // The writer runs until the upstream has ended the run (replies it writes meanwhile still reach the client).
    // A task of its own, like the reader that hands it replies: on a one-thread runtime a task woken by another
    // runs in the same turn, where this future, woken, would wait for the runtime to look at its I/O again first.
    let recorder = trajectory.recorder().clone();
    let mut writer = AbortOnDropHandle::new(tokio::spawn(async move {
        outlet::write_stream(output, queue, done_rx, &recorder, |_| {}).await
    }));
    let end = tokio::select! {
        end = &mut writer => end,
        () = stop.cancelled() => {
            upstream.stop();
            (&mut writer).await
        }
    };
    let end = end.unwrap_or_else(|e| Err(std::io::Error::other(format!("the writer to the client failed: {e}"))));
    client.abort();
    let died = upstream.finish().await;
    // A fault armed on a request that was never answered must not outlive the connection.
    engine.clear();
    flusher.abort();
    trajectory.finish();
    Ok(match (end?, died) {
        (WriterEnd::Closed, _) => ProxyEnd::Disconnected,
        (WriterEnd::Finished, Some(status)) => ProxyEnd::UpstreamExited { status },
        (WriterEnd::Finished, None) => ProxyEnd::Finished,
    })
}
