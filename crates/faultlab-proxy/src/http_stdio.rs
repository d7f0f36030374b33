//! The bridge behind an HTTP front when the upstream is a stdio server child: each POSTed message becomes a line
//! on the child's stdin; the child's reply with the same id becomes the POST's JSON answer.
//!
//! A stdio server is one session, so the bridge serves one client at a time (two clients using the same request
//! id at once would get each other's replies; ids are never rewritten). Notifications and requests the child sends
//! on its own (progress, a server ping) have no POST to travel on and are dropped, and the trajectory says so.

use crate::trajectory::Trajectory;
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use faultlab_engine::recorder::{Direction, FrameAction};
use faultlab_http::rpc_error;
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES, MessageId};
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;
use tokio_util::codec::FramedRead;

type Waiting = Arc<Mutex<HashMap<MessageId, oneshot::Sender<Frame>>>>;

pub struct Bridge {
    stdin: tokio::sync::Mutex<ChildStdin>,
    waiting: Waiting,
    /// Kept so the child lives as long as the bridge (and is killed with it).
    _child: Child,
}

impl Bridge {
    /// Starts the child; the kernel ends it if the proxy dies.
    pub fn spawn(mut command: Command, trajectory: Arc<Trajectory>) -> std::io::Result<Self> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
        crate::stdio::die_with_parent(&mut command);
        let mut child = command.spawn()?;
        let stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("the upstream has no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("the upstream has no stdout"))?;
        let waiting: Waiting = Arc::default();
        let routes = waiting.clone();
        tokio::spawn(async move {
            let mut lines = FramedRead::new(stdout, LineCodec::new(MAX_LINE_BYTES));
            while let Some(Ok(Line::Bytes(bytes))) = lines.next().await {
                let frame = Frame::parse(bytes);
                let waiter = frame.id().filter(|_| frame.is_reply()).and_then(|id| lock(&routes).remove(id));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(frame);
                    }
                    None => {
                        trajectory.account(0);
                        trajectory.record(trajectory.frame_event(
                            Direction::ServerToClient,
                            FrameAction::Consumed,
                            &frame,
                            None,
                            None,
                            None,
                        ));
                    }
                }
            }
            // The child is gone: nobody waiting will get a reply; dropping the senders says so.
            lock(&routes).clear();
        });
        Ok(Self { stdin: tokio::sync::Mutex::new(stdin), waiting, _child: child })
    }

    /// Sends one POSTed message to the child and answers the POST with its reply.
    pub async fn forward(&self, method: http::Method, frame: Option<&Frame>) -> Response {
        let Some(frame) = frame.filter(|_| method == http::Method::POST) else {
            // No standalone stream and no session to end: a stdio server has neither.
            return (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").into_response();
        };
        let waiter = match (frame.method(), frame.id()) {
            (Some(_), Some(id)) => {
                let (tx, rx) = oneshot::channel();
                lock(&self.waiting).insert(id.clone(), tx);
                Some((id.clone(), rx))
            }
            _ => None,
        };
        let mut line = BytesMut::with_capacity(frame.bytes().len() + 1);
        line.extend_from_slice(frame.bytes());
        line.extend_from_slice(b"\n");
        let written = {
            let mut stdin = self.stdin.lock().await;
            stdin.write_all(&line).await.is_ok() && stdin.flush().await.is_ok()
        };
        if !written {
            return rpc_error(StatusCode::BAD_GATEWAY, -32603, "the upstream server has exited", None);
        }
        let Some((id, rx)) = waiter else {
            return StatusCode::ACCEPTED.into_response();
        };
        // If the client goes away first, this future is dropped; the entry is removed below or by the reply.
        let guard = Forget(self.waiting.clone(), Some(id.clone()));
        let reply = rx.await;
        drop(guard);
        match reply {
            Ok(reply) => {
                let mut response = (StatusCode::OK, reply.bytes().clone()).into_response();
                response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                response
            }
            Err(_) => rpc_error(StatusCode::BAD_GATEWAY, -32603, "the upstream server exited before answering", None),
        }
    }
}

/// Removes a waiting entry when the POST that registered it ends, however it ends.
struct Forget(Waiting, Option<MessageId>);

impl Drop for Forget {
    fn drop(&mut self) {
        if let Some(id) = self.1.take() {
            lock(&self.0).remove(&id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
