//! A Streamable HTTP endpoint as the upstream of a stdio front: each client message is POSTed (keeping its session
//! and protocol-version headers as the protocol asks) and every message of the answers comes back as a line.

use crate::relay::{Connect, Link, ProxyError, Upstream};
use crate::remote::Remote;
use faultlab_client::transport::http::HttpTransport;
use faultlab_client::transport::{Incoming, IncomingTx};
use faultlab_engine::recorder::TransportEventKind;
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, MessageId};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A Streamable HTTP server to use as the upstream (`faultlab proxy --upstream URL`): plain or https://, with the
/// user's headers ([`Remote`]).
pub struct Endpoint(pub Remote);

/// A connected [`Endpoint`].
pub struct EndpointUpstream {
    transport: HttpTransport,
    remote: Remote,
    /// The id of the client's `initialize`, to learn the negotiated version from its reply.
    initialize: Mutex<Option<MessageId>>,
    link: Link,
    /// Hands what arrives from the HTTP side to the relay.
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl Connect for Endpoint {
    type Upstream = EndpointUpstream;

    fn connect(self, link: Link) -> Result<Arc<EndpointUpstream>, ProxyError> {
        let (tx, mut rx): (IncomingTx, _) = mpsc::unbounded_channel();
        let remote = self.0;
        let client = remote
            .reqwest_client()
            .map_err(|e| ProxyError::Spawn { command: remote.shown(), source: std::io::Error::other(e) })?;
        let transport = HttpTransport::with_client(remote.url().as_str(), remote.headers().clone(), client, tx);
        let upstream = Arc::new(EndpointUpstream {
            transport,
            remote,
            initialize: Mutex::default(),
            link,
            reader: Mutex::default(),
        });
        let reader = {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                while let Some(incoming) = rx.recv().await {
                    if let Some(frame) = as_frame(&upstream, incoming) {
                        upstream.link.deliver([frame]);
                    }
                }
            })
        };
        *lock(&upstream.reader) = Some(reader);
        Ok(upstream)
    }
}

impl Upstream for EndpointUpstream {
    async fn send(&self, frame: &Frame) -> bool {
        if frame.method() == Some("initialize") {
            *lock(&self.initialize) = frame.id().cloned();
        }
        self.transport.post(frame);
        true
    }

    async fn client_left(&self) {
        // The client is gone: end its legacy session as a client should, then finish.
        self.transport.end_session().await;
        self.link.end();
    }

    fn stop(&self) {
        self.link.end();
    }

    async fn finish(&self) -> Option<String> {
        // The reader holds the upstream (and so itself) alive: it goes with the run.
        if let Some(reader) = lock(&self.reader).take() {
            reader.abort();
        }
        None
    }
}

/// What the stdio client gets for something that arrived from the HTTP side.
fn as_frame(upstream: &EndpointUpstream, incoming: Incoming) -> Option<Frame> {
    match incoming {
        Incoming::Frame(frame) => {
            let initialize = lock(&upstream.initialize).clone();
            if initialize.is_some() && frame.id() == initialize.as_ref() {
                let version = frame.value().and_then(|v| v.pointer("/result/protocolVersion")).and_then(|v| v.as_str());
                if let Some(version) = version {
                    upstream.transport.set_protocol(version);
                }
            }
            Some(frame)
        }
        // Relayed as it came, byte for byte, like any other frame: what a stdio client does with it is its test.
        Incoming::Answer { frame, .. } => Some(frame),
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
            upstream.link.relay.trajectory.transport(TransportEventKind::Closed, Some(&id), message.clone());
            Some(Frame::from_value(json!({"jsonrpc": "2.0", "id": id.to_value(),
            "error": {"code": -32603, "message": message}})))
        }
        Incoming::Lost { id: None, .. } | Incoming::Ended { .. } => None,
    }
}
