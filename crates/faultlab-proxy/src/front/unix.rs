//! The Unix-socket front (`faultlab proxy --listen-unix PATH -- CMD`): one proxy for every connection of a run.
//!
//! Each connection to the socket is a stdio session of its own: lines both ways through the
//! [`stdio`](super::stdio) front's relay, its own engine (a fault armed on one connection's request id fires on
//! that connection only), and its own upstream, started when the connection is accepted and stopped in order when
//! it ends. What the connections share is the run: one [`RuleSet`](crate::rules::RuleSet) (counts, windows,
//! schedules, the seeded draws), one rules' clock, and one trajectory file in which each connection's events carry
//! the scope `connection N` (N from 1, in the order accepted), so a client that reconnects after a `disconnect`
//! meets the rules where the run left them, not a fresh `nth: 1`.

use super::stdio;
use crate::relay::{Connect, ProxyEnd, ProxyError, ProxyOptions, Relay};
use crate::rules::SharedRules;
use crate::trajectory::TrajectoryWriter;
use faultlab_engine::Recorder;
use faultlab_engine::trajectory::Scrub;
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// What every connection's trajectory is written with.
#[derive(Clone)]
pub struct Record {
    /// The run's recorder (one file, one clock); each connection writes through a scope of its own.
    pub recorder: Recorder,
    /// Record the upstream's replies in full (`--record-bodies`).
    pub bodies: bool,
    /// Scrubs the credentials an HTTP upstream is sent from what is recorded.
    pub scrub: Option<Scrub>,
}

/// The scope of connection `n`'s events in the trajectory.
pub fn scope(n: u64) -> String {
    format!("connection {n}")
}

/// How the connections of a run ended: what went wrong with the environment rather than with a client.
#[derive(Debug, Default)]
pub struct Served {
    pub connections: u64,
    /// One line per connection whose upstream could not start, or exited on its own while it was needed.
    pub failures: Vec<String>,
}

/// Accepts connections on `listener` until `stop` fires, each served from the upstream `upstream(n)` makes for
/// connection `n`; `accepted(n)` hears of each. When `stop` fires no connection is accepted any more and every
/// open one is ended as a stdio proxy ends on SIGTERM (its upstream stopped in order); returns once all have.
pub async fn serve<C, F>(
    listener: UnixListener,
    options: ProxyOptions,
    mut upstream: F,
    rules: SharedRules,
    record: Record,
    mut accepted: impl FnMut(u64),
    stop: CancellationToken,
) -> Served
where
    C: Connect + Send + 'static,
    F: FnMut(u64) -> C,
{
    let start = tokio::time::Instant::now();
    let mut sessions = JoinSet::new();
    let mut served = Served::default();
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            Some(ended) = sessions.join_next(), if !sessions.is_empty() => {
                served.failures.extend(joined(ended));
                continue;
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A connection that failed before it was accepted (the client gave up) says nothing of the run;
                // out of descriptors, the listener is tried again 50 ms later rather than in a busy loop.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        served.connections += 1;
        let n = served.connections;
        accepted(n);
        let mut trajectory = TrajectoryWriter::new(record.recorder.scoped(scope(n)));
        if record.bodies {
            trajectory = trajectory.with_bodies();
        }
        if let Some(scrub) = &record.scrub {
            trajectory = trajectory.redacting(scrub.clone());
        }
        let relay = Relay::starting_at(Arc::new(trajectory), start);
        let (input, output) = stream.into_split();
        let session = stdio::relay_lines(relay, options, upstream(n), rules.clone(), input, output, stop.child_token());
        sessions.spawn(async move { failure(n, session.await) });
    }
    while let Some(ended) = sessions.join_next().await {
        served.failures.extend(joined(ended));
    }
    served
}

/// A connection's session as it ended: its failure, if any; a session that panicked is one, not a silent end
/// (the connection's client sees its pipe close).
fn joined(ended: Result<Option<String>, tokio::task::JoinError>) -> Option<String> {
    match ended {
        Ok(failure) => failure,
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let text = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            Some(format!("a connection's session panicked: {text}"))
        }
        Err(_) => Some("a connection's session was cancelled".into()),
    }
}

/// What went wrong with connection `n`'s environment, if anything: its upstream did not start, or died while
/// needed. A client that left, or was disconnected by a fault, is not a failure.
fn failure(n: u64, ended: Result<ProxyEnd, ProxyError>) -> Option<String> {
    match ended {
        Ok(ProxyEnd::UpstreamExited { status }) => {
            Some(format!("connection {n}: the upstream exited on its own ({status}); see the trajectory"))
        }
        Err(e @ ProxyError::Spawn { .. }) => Some(format!("connection {n}: {e}")),
        // The client closed its end while the proxy wrote to it: the client's business, as on stdio.
        Ok(ProxyEnd::Finished | ProxyEnd::Disconnected) | Err(ProxyError::Io(_)) => None,
    }
}
