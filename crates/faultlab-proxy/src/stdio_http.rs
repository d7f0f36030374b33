//! A stdio front with a Streamable HTTP upstream: the client speaks lines to us; we POST each message upstream
//! (keeping its session and protocol-version headers as the protocol asks) and write every message of the answers
//! back as lines, through the same engine and rules as the stdio-to-child proxy.

use crate::remote::Remote;
use crate::rules::SharedRules;
use crate::stdio::{ProxyEnd, ProxyError, Shared, Upstream, from_server, pump_client};
use crate::trajectory::Trajectory;
use faultlab_client::transport::http::HttpTransport;
use faultlab_client::transport::{Incoming, IncomingTx};
use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use faultlab_engine::recorder::TransportEventKind;
use faultlab_wire::{Frame, MAX_LINE_BYTES, MessageId};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

struct HttpUpstream {
    transport: HttpTransport,
    remote: Remote,
    /// The id of the client's `initialize`, to learn the negotiated version from its reply.
    initialize: Mutex<Option<MessageId>>,
    done: mpsc::UnboundedSender<()>,
}

impl Upstream for HttpUpstream {
    async fn send(&self, frame: &Frame) -> bool {
        if frame.method() == Some("initialize") {
            *self.initialize.lock().unwrap_or_else(|e| e.into_inner()) = frame.id().cloned();
        }
        self.transport.post(frame);
        true
    }

    async fn client_left(&self) {
        // The client is gone: end its legacy session as a client should, then finish.
        self.transport.end_session().await;
        let _ = self.done.send(());
    }
}

/// Runs until the client leaves or a fault disconnects it, with the default frame-size limit, for a plain or
/// https:// upstream with no headers of the user's own.
pub async fn run<R, W>(
    url: &str,
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
    let remote = Remote::new(url)
        .map_err(|e| ProxyError::Spawn { command: url.to_owned(), source: std::io::Error::other(e) })?;
    run_with(MAX_LINE_BYTES, &remote, rules, trajectory, input, output, stop).await
}

/// Runs until the client leaves or a fault disconnects it; a client line over `max_frame_bytes` is dropped and its
/// id answered with an error.
pub async fn run_with<R, W>(
    max_frame_bytes: usize,
    remote: &Remote,
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
    let (tx, rx): (IncomingTx, _) = mpsc::unbounded_channel();
    let client = remote
        .reqwest_client()
        .map_err(|e| ProxyError::Spawn { command: remote.shown(), source: std::io::Error::other(e) })?;
    let transport = HttpTransport::with_client(remote.url().as_str(), remote.headers().clone(), client, tx);
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let channels = Channels { answers: rx, ended: done_tx.clone(), done: done_rx };
    let upstream =
        Arc::new(HttpUpstream { transport, remote: remote.clone(), initialize: Mutex::default(), done: done_tx });
    relay_through(max_frame_bytes, upstream, channels, as_frame, rules, trajectory, input, output, stop).await
}

/// What an upstream that answers through a channel hands the relay: what it answers, and word that the client
/// has left and the upstream has finished with it (`done`; `ended` sends it once every answer has been handed to
/// the writer, when the upstream closes its end of `answers`).
pub(crate) struct Channels<T> {
    pub answers: mpsc::UnboundedReceiver<T>,
    pub ended: mpsc::UnboundedSender<()>,
    pub done: mpsc::UnboundedReceiver<()>,
}

/// The stdio front in front of an upstream that answers through a channel (an HTTP endpoint, a recording): the
/// client's lines go to `upstream`, and what arrives on the channel becomes frames for the client (`to_frame`).
/// Runs until the client leaves (and the upstream says it is done) or a fault disconnects it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn relay_through<U, T, R, W>(
    max_frame_bytes: usize,
    upstream: Arc<U>,
    channels: Channels<T>,
    to_frame: fn(&U, &Trajectory, T) -> Option<Frame>,
    rules: SharedRules,
    trajectory: Arc<Trajectory>,
    input: R,
    output: W,
    stop: CancellationToken,
) -> Result<ProxyEnd, ProxyError>
where
    U: Upstream,
    T: Send + 'static,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Channels { answers: mut rx, ended, done: done_rx } = channels;
    {
        let rules = rules.lock().unwrap_or_else(|e| e.into_inner());
        trajectory.started(rules.seed(), rules.len());
    }
    let recorder = trajectory.recorder().clone();
    let shared = Shared::new(trajectory.clone());
    let (outlet, queue) = Outlet::new();
    let client =
        tokio::spawn(pump_client(input, rules, shared.clone(), outlet.clone(), upstream.clone(), max_frame_bytes));
    let server = {
        let (shared, upstream) = (shared.clone(), upstream.clone());
        tokio::spawn(async move {
            while let Some(incoming) = rx.recv().await {
                if let Some(frame) = to_frame(&upstream, &shared.trajectory, incoming) {
                    from_server(&shared, &outlet, frame);
                }
            }
            let _ = ended.send(());
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
    trajectory.finish();
    Ok(match end? {
        WriterEnd::Finished => ProxyEnd::Finished,
        WriterEnd::Closed => ProxyEnd::Disconnected,
    })
}

/// What the stdio client gets for something that arrived from the HTTP side.
fn as_frame(upstream: &HttpUpstream, trajectory: &Trajectory, incoming: Incoming) -> Option<Frame> {
    match incoming {
        Incoming::Frame(frame) => {
            let initialize = upstream.initialize.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if initialize.is_some() && frame.id() == initialize.as_ref() {
                let version = frame.value().and_then(|v| v.pointer("/result/protocolVersion")).and_then(|v| v.as_str());
                if let Some(version) = version {
                    upstream.transport.set_protocol(version);
                }
            }
            Some(frame)
        }
        // An HTTP error has no line of its own on stdio: its JSON-RPC body if it has one, else an error naming it.
        Incoming::HttpStatus { id, status, body, .. } => {
            let parsed = Frame::parse(body);
            if parsed.id() == Some(&id) {
                return Some(parsed);
            }
            Some(Frame::from_value(json!({"jsonrpc": "2.0", "id": id.to_value(),
                "error": {"code": -32603, "message": format!("the upstream answered HTTP {status}"), "data": {"httpStatus": status}}})))
        }
        // A request that failed (nothing listens, an untrusted certificate) or a response stream that broke off:
        // without an answer the stdio client would wait forever. The cause goes to the trajectory too.
        Incoming::Lost { id: Some(id), detail } => {
            let message = format!(
                "the upstream connection to {} was lost: {}",
                upstream.remote.shown(),
                upstream.remote.explain(&detail)
            );
            trajectory.transport(TransportEventKind::Closed, Some(&id), message.clone());
            Some(Frame::from_value(json!({"jsonrpc": "2.0", "id": id.to_value(),
            "error": {"code": -32603, "message": message}})))
        }
        Incoming::Lost { id: None, .. } | Incoming::Ended { .. } => None,
    }
}
