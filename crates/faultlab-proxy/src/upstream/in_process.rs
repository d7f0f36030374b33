//! A server in process as the upstream: it speaks lines over an in-memory pipe (`tokio::io::duplex`) on a task of
//! its own, e.g. `faultlab serve`'s rmcp server. No process to start or stop: closing
//! the pipe is the server's EOF, and it ends when its end of the pipe does.
//!
//! As with a child, a request the server leaves unanswered when it ends gets a JSON-RPC error (-32000); a server
//! that ends while the client is still there ends the run as [`ProxyEnd::UpstreamExited`](crate::relay::ProxyEnd).
//! A restarting `server_outage` is not supported (there is no process to crash).

use crate::relay::{Connect, InFlight, Link, ProxyError, Upstream, dropped, next_burst};
use faultlab_engine::recorder::{Direction, Event};
use faultlab_wire::line;
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, LineCodec, MessageId};
use serde_json::json;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::{AsyncWriteExt as _, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

/// Size of the in-memory pipe each way, in bytes (as the server's own pipe to rmcp).
const PIPE_BYTES: usize = 256 * 1024;

/// A server to run in process: its task is started with its end of the pipe.
pub struct InProcess {
    ours: DuplexStream,
    server: JoinHandle<()>,
}

impl InProcess {
    /// Starts `server` on its own task with its end of a fresh in-memory pipe: it reads the client's lines from it
    /// and writes its own there.
    pub fn spawn<F, Fut>(server: F) -> Self
    where
        F: FnOnce(DuplexStream) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        Self { ours, server: tokio::spawn(server(theirs)) }
    }
}

/// A connected [`InProcess`] server.
pub struct InProcessUpstream {
    /// Our writing end; `None` once closed (the client left, or a stop).
    writer: tokio::sync::Mutex<Option<WriteHalf<DuplexStream>>>,
    state: Mutex<State>,
    /// Turns true when the client has left or the proxy is stopping: the pipe is closed (the server's EOF) and
    /// the server's end is expected within the shutdown grace.
    closing: tokio::sync::watch::Sender<bool>,
    link: Link,
}

#[derive(Default)]
struct State {
    in_flight: InFlight,
    /// The server ended on its own while it was still needed.
    died: Option<String>,
    tasks: Vec<JoinHandle<()>>,
}

impl Connect for InProcess {
    type Upstream = InProcessUpstream;

    fn connect(self, link: Link) -> Result<Arc<InProcessUpstream>, ProxyError> {
        let (reader, writer) = tokio::io::split(self.ours);
        let (closing, _) = tokio::sync::watch::channel(false);
        let upstream = Arc::new(InProcessUpstream {
            writer: tokio::sync::Mutex::new(Some(writer)),
            state: Mutex::default(),
            closing,
            link,
        });
        let read = tokio::spawn(upstream.clone().read(reader));
        let close = tokio::spawn(upstream.clone().close_when_asked());
        upstream.state().tasks = vec![self.server, read, close];
        Ok(upstream)
    }
}

impl InProcessUpstream {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Passes the server's lines to the relay, the lines of one read together. When its end closes (or, once the
    /// pipe is closed, the shutdown grace passes first), fails what it left unanswered and ends the run.
    async fn read(self: Arc<Self>, reader: ReadHalf<DuplexStream>) {
        let max = self.link.options.max_frame_bytes;
        let mut lines = FramedRead::new(reader, LineCodec::new(max));
        let (relay, outlet) = (&self.link.relay, &self.link.outlet);
        let mut closing = self.closing.subscribe();
        let grace = self.link.options.shutdown_grace;
        let overdue = async move {
            let _ = closing.wait_for(|closing| *closing).await;
            tokio::time::sleep(grace).await;
        };
        tokio::pin!(overdue);
        let mut timed_out = false;
        loop {
            let too_long = |id: Option<MessageId>, bytes: usize| {
                if let Some(id) = &id {
                    self.state().in_flight.answered(id);
                }
                dropped(relay, outlet, Direction::ServerToClient, id, bytes, max);
            };
            let burst = tokio::select! {
                burst = next_burst(&mut lines, too_long) => burst,
                () = &mut overdue => {
                    timed_out = true;
                    None
                }
            };
            let Some(burst) = burst else { break };
            {
                let mut state = self.state();
                for id in burst.iter().filter(|f| f.is_reply()).filter_map(Frame::id) {
                    state.in_flight.answered(id);
                }
            }
            self.link.deliver(burst);
        }
        let pending = self.state().in_flight.drain();
        // Ended on its own with the client still there, or on the client's EOF but leaving requests unanswered.
        let died = !*self.closing.borrow() || (!timed_out && !pending.is_empty());
        let (message, data) = if died {
            let status = "the in-process server ended".to_owned();
            let t = &relay.trajectory;
            t.record(Event::UpstreamExit { status: status.clone(), code: None, signal: None, pending: pending.len() });
            self.state().died = Some(status.clone());
            let data = json!({"upstreamExit": {"status": &status, "code": null, "signal": null}});
            (format!("the upstream exited ({status}) before answering"), data)
        } else {
            ("the upstream was stopped before answering".to_owned(), json!({"upstream": "stopped"}))
        };
        relay.fail(outlet, pending, &message, &data);
        self.link.end();
    }

    /// Closes our end of the pipe (the server's EOF) once the client has left or the proxy stops.
    async fn close_when_asked(self: Arc<Self>) {
        let mut closing = self.closing.subscribe();
        let _ = closing.wait_for(|closing| *closing).await;
        if let Some(mut writer) = self.writer.lock().await.take() {
            let _ = writer.shutdown().await;
        }
    }
}

impl Upstream for InProcessUpstream {
    async fn send(&self, frame: &Frame) -> bool {
        self.send_all(std::slice::from_ref(frame)).await[0]
    }

    async fn send_all(&self, frames: &[Frame]) -> Vec<bool> {
        let mut writer = self.writer.lock().await;
        let Some(pipe) = writer.as_mut() else { return vec![false; frames.len()] };
        let mut lines = bytes::BytesMut::new();
        {
            let mut state = self.state();
            for frame in frames {
                state.in_flight.sent(frame);
                line::encode_into(&mut lines, frame.bytes());
            }
        }
        let sent = pipe.write_all(&lines).await.is_ok();
        vec![sent; frames.len()]
    }

    async fn client_left(&self) {
        self.closing.send_replace(true);
    }

    fn stop(&self) {
        self.closing.send_replace(true);
    }

    async fn finish(&self) -> Option<String> {
        let tasks = std::mem::take(&mut self.state().tasks);
        for task in tasks {
            task.abort();
        }
        self.state().died.take()
    }
}
