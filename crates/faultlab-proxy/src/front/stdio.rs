//! The stdio front: the client speaks to the proxy on stdin/stdout (or any reader and writer); the relay carries
//! its lines to an [`Upstream`](crate::relay::Upstream) and the upstream's frames back.
//!
//! ```text
//! client ─input─▶ [relay: rules] ─▶ upstream          upstream ─▶ [relay: engine] ─▶ outlet ─▶ writer ─output─▶ client
//! ```

use crate::relay::{Connect, Link, ProxyEnd, ProxyError, ProxyOptions, Relay, Upstream, pump_client};
use crate::rules::SharedRules;
use crate::trajectory::Trajectory;
use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Runs the stdio front until the client leaves, the upstream ends, a fault disconnects the client, or `stop`
/// fires (then the upstream gets its orderly end first: [`Upstream::stop`]). The upstream is started here, and
/// stopped before this returns.
pub async fn run<C, R, W>(
    options: ProxyOptions,
    upstream: C,
    rules: SharedRules,
    trajectory: Arc<Trajectory>,
    input: R,
    output: W,
    stop: CancellationToken,
) -> Result<ProxyEnd, ProxyError>
where
    C: Connect,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let relay = Relay::new(trajectory.clone());
    let (outlet, queue) = Outlet::new();
    let (done, done_rx) = mpsc::unbounded_channel();
    let link = Link { relay: relay.clone(), outlet: outlet.clone(), done, options };
    let upstream = upstream.connect(link)?;
    {
        let rules = rules.lock().unwrap_or_else(|e| e.into_inner());
        trajectory.started(rules.seed(), rules.len());
    }
    let client = tokio::spawn(pump_client(input, rules, relay, outlet, upstream.clone(), options.max_frame_bytes));
    // The writer runs until the upstream has ended the run (replies it writes meanwhile still reach the client).
    let writer = outlet::write_stream(output, queue, done_rx, trajectory.recorder(), |_| {});
    tokio::pin!(writer);
    let end = tokio::select! {
        end = &mut writer => end,
        () = stop.cancelled() => {
            upstream.stop();
            writer.await
        }
    };
    client.abort();
    let died = upstream.finish().await;
    trajectory.finish();
    Ok(match (end?, died) {
        (WriterEnd::Closed, _) => ProxyEnd::Disconnected,
        (WriterEnd::Finished, Some(status)) => ProxyEnd::UpstreamExited { status },
        (WriterEnd::Finished, None) => ProxyEnd::Finished,
    })
}
