//! The bridge behind an HTTP front when the upstream is a stdio server child: each POSTed message becomes a line
//! on the child's stdin; the child's reply with the same id becomes the POST's JSON answer.
//!
//! A stdio server is one session shared by every client of the bridge (the HTTP front starts one per session of
//! its own: [`super::bridged`]). Requests keep their ids on the child's
//! side unless another request with an equal id is still waiting: then the later one goes with a unique id of the
//! bridge's own (`"faultlab-bridge-N"`), and its reply gets the client's id back before it is answered. An error
//! reply without an id (the child could not read which request it answers) answers the oldest waiting request,
//! byte for byte. A request the child does not answer within the request timeout gets a JSON-RPC error (504), and
//! the child is told with `notifications/cancelled`. Notifications and requests the child sends on its own
//! (progress, a server ping) have no POST to travel on and are dropped, and the trajectory says so.

use crate::trajectory::TrajectoryWriter;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use faultlab_engine::recorder::{Direction, FrameAction};
use faultlab_http::rpc_error;
use faultlab_proc::child::{ChildCommand, ChildProcess, LineWriter, Spawned, Stdin};
use faultlab_wire::line::Line;
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, Kind, MAX_LINE_BYTES, MessageId};
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::oneshot;

/// Default time the child has to answer a request (60 s).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The requests waiting for the child's reply, by the id the child saw.
#[derive(Default)]
struct Table {
    waiting: HashMap<MessageId, Pending>,
    /// Arrival order of requests, for an id-less error; also numbers the bridge's own ids.
    next: u64,
}

struct Pending {
    order: u64,
    /// The client's id when the child saw another one.
    client_id: Option<MessageId>,
    reply: oneshot::Sender<Frame>,
}

type Waiting = Arc<Mutex<Table>>;

impl Table {
    /// The waiter a reply from the child belongs to: by id, or the oldest one for an error without an id.
    fn take_for(&mut self, reply: &Frame) -> Option<Pending> {
        match (reply.kind(), reply.id()) {
            (_, Some(id)) => self.waiting.remove(id),
            (Kind::Error { id: None }, None) => {
                let oldest = self.waiting.iter().min_by_key(|(_, p)| p.order).map(|(id, _)| id.clone())?;
                self.waiting.remove(&oldest)
            }
            _ => None,
        }
    }
}

/// `Content-Type: application/json` (415) and an `Accept` naming both `application/json` and `text/event-stream`
/// (406), as `faultlab serve` requires of a POST.
pub fn check_media_types(headers: &HeaderMap) -> Option<Response> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !essence(content_type).eq_ignore_ascii_case("application/json") {
        let message = "Unsupported Media Type: Content-Type must be application/json";
        return Some(rpc_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, -32600, message, None));
    }
    let accepted: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(essence)
        .collect();
    let accepts = |media: &str| accepted.iter().any(|a| a.eq_ignore_ascii_case(media));
    if !accepts("application/json") || !accepts("text/event-stream") {
        let message = "Not Acceptable: Client must accept both application/json and text/event-stream";
        return Some(rpc_error(StatusCode::NOT_ACCEPTABLE, -32600, message, None));
    }
    None
}

fn essence(media_type: &str) -> &str {
    media_type.split(';').next().unwrap_or("").trim()
}

/// `frame` with its `id` replaced (the rest of the message kept in order).
fn with_id(frame: &Frame, id: &MessageId) -> Frame {
    match frame.value() {
        Some(Value::Object(object)) => {
            let mut object = object.clone();
            object.insert("id".into(), id.to_value());
            Frame::from_value(Value::Object(object))
        }
        _ => frame.clone(),
    }
}

pub struct Bridge {
    /// `None` once [`Bridge::stop`] has closed it.
    stdin: tokio::sync::Mutex<Option<LineWriter>>,
    waiting: Waiting,
    request_timeout: Duration,
    /// The child, until [`Bridge::stop`] ends it (dropped without a stop, its process group is killed).
    process: tokio::sync::Mutex<Option<ChildProcess>>,
    /// Cancelled when the child's stdout ends: it exited (or closed its stdout), on its own or stopped.
    ended: tokio_util::sync::CancellationToken,
}

impl Bridge {
    /// Starts the child in its own process group; the kernel ends it if the proxy dies. A request unanswered
    /// after `request_timeout` gets an error.
    pub fn spawn(
        command: Command,
        trajectory: Arc<TrajectoryWriter>,
        request_timeout: Duration,
    ) -> std::io::Result<Self> {
        let Spawned { process, stdin, stdout: mut lines } = ChildCommand::new(command).spawn(MAX_LINE_BYTES)?;
        let waiting: Waiting = Arc::default();
        let routes = waiting.clone();
        let ended = tokio_util::sync::CancellationToken::new();
        let ending = ended.clone().drop_guard();
        tokio::spawn(async move {
            let _ending = ending;
            while let Some(Ok(Line::Bytes(bytes))) = lines.next().await {
                let frame = Frame::parse(bytes);
                let waiter = if frame.is_reply() { lock(&routes).take_for(&frame) } else { None };
                match waiter {
                    Some(waiter) => {
                        let frame = match (&waiter.client_id, frame.id()) {
                            (Some(client_id), Some(_)) => with_id(&frame, client_id),
                            _ => frame,
                        };
                        let _ = waiter.reply.send(frame);
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
            lock(&routes).waiting.clear();
        });
        Ok(Self {
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            waiting,
            request_timeout,
            process: tokio::sync::Mutex::new(Some(process)),
            ended,
        })
    }

    /// Resolves once the child's stdout has ended: from then on every request fails, so the front should stop.
    pub async fn ended(&self) {
        self.ended.cancelled().await
    }

    /// Whether the child's stdout has ended (see [`Bridge::ended`]).
    pub fn has_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Stops the child in the spec's order (close its stdin, `grace`, SIGTERM to its group, `grace`, SIGKILL);
    /// requests still waiting then get their error. Later calls do nothing.
    pub async fn stop(&self, grace: Duration) {
        let stdin = self.stdin.lock().await.take();
        if let Some(mut process) = self.process.lock().await.take() {
            process.stop(Stdin::Close(stdin), grace, |_| {}).await;
        }
    }

    /// Sends one POSTed message to the child and answers the POST with its reply.
    pub async fn forward(&self, method: http::Method, frame: Option<&Frame>) -> Response {
        let Some(frame) = frame.filter(|_| method == http::Method::POST) else {
            // No standalone stream and no session to end: a stdio server has neither.
            return (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").into_response();
        };
        let mut sent = frame.clone();
        let waiter = match (frame.method(), frame.id()) {
            (Some(_), Some(id)) => {
                let (tx, rx) = oneshot::channel();
                let mut table = lock(&self.waiting);
                let order = table.next;
                table.next += 1;
                let wire_id = if table.waiting.contains_key(id) {
                    // Another client's request with this id is still waiting: this one gets an id of its own.
                    let mut n = order;
                    loop {
                        let unique =
                            MessageId::from_value(&json!(format!("faultlab-bridge-{n}"))).unwrap_or_else(|| id.clone());
                        if !table.waiting.contains_key(&unique) {
                            break unique;
                        }
                        n += 1;
                    }
                } else {
                    id.clone()
                };
                let client_id = (&wire_id != id).then(|| id.clone());
                if client_id.is_some() {
                    sent = with_id(frame, &wire_id);
                }
                table.waiting.insert(wire_id.clone(), Pending { order, client_id, reply: tx });
                Some((wire_id, rx))
            }
            _ => None,
        };
        // If the client goes away first, this future is dropped; the entry is removed below or by the reply.
        let guard = waiter.as_ref().map(|(wire_id, _)| Forget(self.waiting.clone(), Some(wire_id.clone())));
        if !self.write(sent.bytes()).await {
            return rpc_error(StatusCode::BAD_GATEWAY, -32603, "the upstream server has exited", None);
        }
        let Some((wire_id, rx)) = waiter else {
            return StatusCode::ACCEPTED.into_response();
        };
        let reply = tokio::time::timeout(self.request_timeout, rx).await;
        drop(guard);
        let client_id = frame.id().map(MessageId::to_value);
        match reply {
            Ok(Ok(reply)) => {
                let mut response = (StatusCode::OK, reply.bytes().clone()).into_response();
                response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                response
            }
            Ok(Err(_)) => {
                rpc_error(StatusCode::BAD_GATEWAY, -32603, "the upstream server exited before answering", client_id)
            }
            Err(_) => {
                // The child may still be working on it: tell it the request is abandoned.
                let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": wire_id.to_value(), "reason": "faultlab bridge: request timed out"}});
                let _ = self.write(&Bytes::from(cancel.to_string())).await;
                let message = format!(
                    "request timed out: the upstream server did not answer within {:?} (--request-timeout)",
                    self.request_timeout
                );
                rpc_error(StatusCode::GATEWAY_TIMEOUT, -32603, &message, client_id)
            }
        }
    }

    /// Writes one line to the child; false when it is gone.
    async fn write(&self, message: &Bytes) -> bool {
        match self.stdin.lock().await.as_mut() {
            Some(stdin) => stdin.send(message).await.is_ok(),
            None => false,
        }
    }
}

/// Removes a waiting entry when the POST that registered it ends, however it ends.
struct Forget(Waiting, Option<MessageId>);

impl Drop for Forget {
    fn drop(&mut self) {
        if let Some(id) = self.1.take() {
            lock(&self.0).waiting.remove(&id);
        }
    }
}
