//! One connection to a server: the handshake, the pending-request map, dispatch of everything that arrives, calls
//! with deadlines and cancellation, and the tally of anomalies.

use crate::answers::{Answers, Reaction};
use crate::auth::{AuthOptions, AuthRecord};
use crate::outcome::{ErrorKind, Observation, Outcome, classify_tool_reply};
use crate::recovery::{MAX_REINITIALIZE_ATTEMPTS, Recovery};
use crate::tasks::{TaskOptions, TaskSupport, TaskSupportRecord};
use crate::transport::http::HttpTargetError;
use crate::transport::{HttpTransport, Incoming, StdioTransport, Target};
use bytes::Bytes;
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, Kind, MessageId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::time::Instant;

/// Most times the client retries one call with `inputResponses` before it gives up (a server answering
/// `input_required` for ever must not hold the client for ever; rmcp's own bound is 10).
pub const MAX_INPUT_ROUNDS: u32 = 8;

/// The protocol era a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Era {
    /// 2025-11-25: `initialize` handshake; sessions over HTTP.
    #[serde(rename = "2025-11-25")]
    Legacy,
    /// 2026-07-28: no handshake, per-request `_meta`, stateless HTTP.
    #[serde(rename = "2026-07-28")]
    Modern,
}

impl Era {
    /// The era that speaks `version`, if the client knows it.
    pub fn of_version(version: &str) -> Option<Self> {
        [Self::Legacy, Self::Modern].into_iter().find(|era| era.version() == version)
    }

    pub fn version(self) -> &'static str {
        match self {
            Self::Legacy => "2025-11-25",
            Self::Modern => "2026-07-28",
        }
    }
}

/// How a call treats progress: not asked for (the default), asked for (`_meta.progressToken`), or asked for with
/// each notification for the call restarting its deadline, up to a hard maximum counted from the send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Progress {
    #[default]
    Off,
    Token,
    ResetUntil(Duration),
}

/// Anomalies seen on a connection: everything an SDK client would hide.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Anomalies {
    /// A second (or later) response for a request already answered.
    pub duplicate_responses: u32,
    /// A response for a request the client had cancelled or given up on.
    pub late_responses: u32,
    /// A response whose id matches no request the client sent.
    pub unknown_id_responses: u32,
    /// An error response without an id.
    pub idless_errors: u32,
    /// A frame that is not JSON.
    pub unparsable_frames: u32,
    /// JSON that is not a JSON-RPC message.
    pub non_message_frames: u32,
    /// A response that overtook the response to an earlier, still pending request.
    pub out_of_order_responses: u32,
    /// Requests the server sent to the client (e.g. `ping`, `elicitation/create`).
    pub server_requests: u32,
    /// Server requests the client's script declined (an elicitation `decline`, a sampling or roots error -1).
    #[serde(default)]
    pub declined_server_requests: u32,
    /// Server requests the client's script left unanswered (`never`).
    #[serde(default)]
    pub unanswered_server_requests: u32,
    /// Notifications received, by method.
    pub notifications: BTreeMap<String, u32>,
}

pub(crate) enum Reply {
    Frame(Frame),
    Http {
        status: u16,
        retry_after: Option<String>,
        body: Bytes,
    },
    Lost(String),
    /// The client itself cancelled the request while it was waiting.
    Cancelled,
}

struct Pending {
    tx: oneshot::Sender<Reply>,
    /// Send order, to notice replies that overtake earlier requests.
    seq: u64,
}

#[derive(Default)]
struct Book {
    pending: HashMap<MessageId, Pending>,
    answered: HashSet<MessageId>,
    abandoned: HashSet<MessageId>,
    responses: HashMap<MessageId, u32>,
    /// HTTP requests whose answer is complete.
    ended: HashSet<MessageId>,
    /// What the client did to recover each request (resumes, re-initialisations, a protocol retry).
    recovery: HashMap<MessageId, Recovery>,
    /// Progress tokens of calls whose timeout progress restarts: each notification for one ticks its watch.
    progress: HashMap<String, watch::Sender<()>>,
    anomalies: Anomalies,
    closed: bool,
}

enum Wire {
    Stdio(StdioTransport),
    Http(HttpTransport),
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start the server command {command:?}: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error(transparent)]
    Http(#[from] HttpTargetError),
    #[error("the server did not complete the initialize handshake: {0}")]
    Handshake(String),
}

/// A connection to one server.
pub struct Connection {
    wire: Arc<Wire>,
    era: Era,
    book: Arc<Mutex<Book>>,
    /// Woken whenever the dispatcher has filed something.
    changed: Arc<Notify>,
    next_id: AtomicI64,
    next_seq: AtomicI64,
    /// How the client answers elicitation, sampling and roots; also what it declares.
    answers: Answers,
    /// Each tool's `execution.taskSupport`, read from `tools/list` before the first call of a client that
    /// supports tasks (the first page; a tool not on it reads as forbidden).
    task_support: tokio::sync::OnceCell<HashMap<String, TaskSupport>>,
}

impl Connection {
    /// Connects and, in the legacy era, performs the `initialize` handshake within `deadline`.
    pub async fn open(target: &Target, era: Era, deadline: Duration) -> Result<Self, ConnectError> {
        Self::open_answering(target, era, deadline, Answers::default()).await
    }

    /// As [`Connection::open`], declaring and answering elicitation, sampling and roots as `answers` scripts.
    pub async fn open_answering(
        target: &Target,
        era: Era,
        deadline: Duration,
        answers: Answers,
    ) -> Result<Self, ConnectError> {
        Self::open_with(target, era, deadline, answers, None).await
    }

    /// As [`Connection::open_answering`], with the auth mode on when `auth` is given (HTTP targets only: a
    /// stdio target has no authorization and ignores it).
    pub async fn open_with(
        target: &Target,
        era: Era,
        deadline: Duration,
        answers: Answers,
        auth: Option<AuthOptions>,
    ) -> Result<Self, ConnectError> {
        let started = Instant::now();
        let (tx, rx) = mpsc::unbounded_channel();
        let wire = match target {
            Target::Stdio { command, args, cwd, env } => Wire::Stdio(
                StdioTransport::spawn(command, args, cwd.as_ref(), env, tx)
                    .map_err(|source| ConnectError::Spawn { command: command.clone(), source })?,
            ),
            Target::Http { url, headers } => {
                let mut http = HttpTransport::new(url, headers, tx)?;
                if let Some(options) = auth {
                    http.set_auth(options);
                }
                Wire::Http(http)
            }
        };
        let book = Arc::new(Mutex::new(Book::default()));
        let wire = Arc::new(wire);
        let changed = Arc::new(Notify::new());
        tokio::spawn(dispatch(rx, book.clone(), wire.clone(), changed.clone(), answers));
        let connection = Self {
            wire,
            era,
            book,
            changed,
            next_id: AtomicI64::new(1),
            next_seq: AtomicI64::new(0),
            answers,
            task_support: tokio::sync::OnceCell::new(),
        };
        if era == Era::Modern {
            if let Wire::Http(http) = &*connection.wire {
                http.set_protocol(era.version());
            }
            return Ok(connection);
        }
        let (reply, _) = connection.request("initialize", connection.initialize_params(), deadline).await;
        let failure = match reply {
            Some(Reply::Frame(frame)) if frame.value().is_some_and(|v| v.get("result").is_some()) => None,
            Some(Reply::Frame(frame)) => Some(String::from_utf8_lossy(frame.bytes()).into_owned()),
            Some(Reply::Http { status, .. }) => Some(format!("HTTP {status}")),
            Some(Reply::Lost(detail)) => Some(match connection.died_unanswered().await {
                Some(why) => format!("{detail}: {why}"),
                None => detail,
            }),
            Some(Reply::Cancelled) => Some("cancelled".into()),
            None => Some(format!("no answer within {} ms", deadline.as_millis())),
        };
        if let Some(failure) = failure {
            return Err(ConnectError::Handshake(failure));
        }
        if let Wire::Http(http) = &*connection.wire {
            http.set_protocol(era.version());
        }
        match &*connection.wire {
            // Over HTTP the notification's POST is a task of its own: wait (within what is left of the deadline)
            // until the server has answered it, as SDK clients do, so that the next request cannot overtake it and
            // a client that closes at once does not lose it.
            Wire::Http(http) => {
                let initialized = Frame::from_value(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
                let left = deadline.saturating_sub(started.elapsed());
                let _ = tokio::time::timeout(left, http.post(&initialized)).await;
            }
            Wire::Stdio(_) => connection.notify("notifications/initialized", None).await,
        }
        Ok(connection)
    }

    pub fn era(&self) -> Era {
        self.era
    }

    /// Calls a tool, waiting at most `deadline`; on timeout the request is cancelled as the transport requires.
    pub async fn call_tool(&self, name: &str, arguments: Value, deadline: Duration) -> Observation {
        self.call_tool_with(name, arguments, deadline, Progress::Off).await
    }

    /// As [`Connection::call_tool`], treating progress as `progress` says; a task handle is followed with the
    /// default [`TaskOptions`].
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        deadline: Duration,
        progress: Progress,
    ) -> Observation {
        self.call_tool_as(name, arguments, deadline, progress, TaskOptions::default()).await
    }

    /// As [`Connection::call_tool`], treating progress as `progress` says. An HTTP call answered `-32022` with
    /// `data.supported` is sent once more with a listed version the client knows; a 2025-11-25 HTTP call answered
    /// 404 for its session makes the client open a new session (at most three `initialize` attempts), and the call
    /// reports the 404 (a call is never re-sent blindly: it may not be safe to repeat). A call answered with a task
    /// handle (`resultType: "task"`, when the client declared the tasks extension) is followed to its end within
    /// the same deadline ([`crate::tasks`]).
    pub async fn call_tool_as(
        &self,
        name: &str,
        arguments: Value,
        deadline: Duration,
        progress: Progress,
        task: TaskOptions,
    ) -> Observation {
        let until = Instant::now() + deadline;
        let mut params = json!({"name": name, "arguments": arguments});
        // A client that supports tasks reads the tool's listing first: required means a task, forbidden none,
        // optional what the caller asked. The listing counts against the call's own deadline.
        let support = match self.answers.tasks {
            true => Some(self.task_support(name, deadline).await),
            false => None,
        };
        let augmented = support.map_or(task.asked, |listed| listed.augments(task.asked));
        if augmented {
            params["task"] = match task.ttl {
                Some(ttl) => json!({"ttl": ttl.as_millis() as u64}),
                None => json!({}),
            };
        }
        let record = support.map(|listed| TaskSupportRecord { listed, asked: task.asked, augmented });
        let left = until.saturating_duration_since(Instant::now());
        let mut obs = self.call_tool_params(params, left, until, progress, task).await;
        obs.task_support = record;
        obs
    }

    /// The tool's `execution.taskSupport` as the first page of `tools/list` says, listed once per connection;
    /// a listing that fails (or a tool not on the page) reads as forbidden.
    async fn task_support(&self, name: &str, deadline: Duration) -> TaskSupport {
        let listed = self
            .task_support
            .get_or_init(|| async {
                let tools = self.request_result("tools/list", json!({}), deadline).await.unwrap_or_default();
                let tools = tools.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
                tools.iter().filter_map(|t| Some((t.get("name")?.as_str()?.to_owned(), TaskSupport::of(t)))).collect()
            })
            .await;
        listed.get(name).copied().unwrap_or(TaskSupport::Forbidden)
    }

    /// [`Connection::call_tool_as`] once the call's `params` are settled.
    async fn call_tool_params(
        &self,
        params: Value,
        deadline: Duration,
        until: Instant,
        progress: Progress,
        task: TaskOptions,
    ) -> Observation {
        let mut obs = self.call_once(params.clone(), deadline, progress, None).await;
        if let Some(version) = self.retry_version(&obs) {
            let mut retried = self.call_once(params.clone(), deadline, progress, Some(version)).await;
            retried.recovery.protocol_retry = Some(version.to_owned());
            if let Some(id) = MessageId::from_value(&retried.request_id) {
                lock(&self.book).recovery.entry(id).or_default().protocol_retry = Some(version.to_owned());
            }
            obs = retried;
        }
        let body = obs.error.as_ref().and_then(|e| e.get("body"));
        if self.era == Era::Legacy && obs.http_status.is_some_and(|status| session_gone(status, body)) {
            self.reinitialize(&obs.request_id, deadline).await;
            obs.recovery = self.recovery_for(&obs.request_id);
        }
        if obs.result.as_ref().and_then(|r| r.get("resultType")).is_some_and(|t| t == "input_required") {
            let started = until - deadline;
            obs = self.drive_rounds(params, obs, until, progress).await;
            obs.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        }
        if obs.result.as_ref().and_then(|r| r.get("resultType")).is_some_and(|t| t == "task") {
            let started = until - deadline;
            obs = self.follow_task(obs, until, task).await;
            obs.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        }
        obs
    }

    /// A call answered `resultType: "input_required"` (2026-07-28, SEP-2322): fulfil its `inputRequests` with the
    /// scripted answers and retry with `inputResponses` and the `requestState` as given, within the same deadline,
    /// at most [`MAX_INPUT_ROUNDS`] times; then give up with an error naming the bound. The last answer is the
    /// call's outcome.
    async fn drive_rounds(
        &self,
        params: Value,
        mut obs: Observation,
        until: Instant,
        progress: Progress,
    ) -> Observation {
        let mut rounds = 0;
        while let Some(result) = obs.result.clone().filter(|r| r.get("resultType") == Some(&json!("input_required"))) {
            let gave_up = if rounds == MAX_INPUT_ROUNDS {
                Some(format!("gave up after {MAX_INPUT_ROUNDS} input_required rounds: the server kept asking"))
            } else {
                match self.answers.fulfil(result.get("inputRequests")) {
                    Ok(responses) => {
                        let mut retry = params.clone();
                        retry["inputResponses"] = Value::Object(responses);
                        if let Some(state) = result.get("requestState") {
                            retry["requestState"] = state.clone();
                        }
                        rounds += 1;
                        let left = until.saturating_duration_since(Instant::now());
                        obs = self.call_once(retry, left, progress, None).await;
                        None
                    }
                    Err(why) => Some(why),
                }
            };
            if let Some(why) = gave_up {
                obs.outcome = Outcome::Error;
                obs.error_kind = Some(ErrorKind::InvalidResponse);
                obs.error = Some(Value::from(why));
                break;
            }
        }
        obs.input_rounds = Some(rounds);
        obs
    }

    /// A version to send the call again with: it was answered `-32022` and `data.supported` lists a version the
    /// client knows other than the one it used.
    fn retry_version(&self, obs: &Observation) -> Option<&'static str> {
        // Over HTTP only: there the version is the transport's header, which a retry can change; a stdio
        // connection keeps the version its era set.
        if !matches!(&*self.wire, Wire::Http(_)) {
            return None;
        }
        let error = obs.error.as_ref()?;
        let error = if error.get("code").is_some() { error } else { error.get("body")?.get("error")? };
        if error.get("code").and_then(Value::as_i64) != Some(-32022) {
            return None;
        }
        let supported = error.pointer("/data/supported")?.as_array()?;
        supported
            .iter()
            .filter_map(Value::as_str)
            .filter_map(Era::of_version)
            .find(|era| *era != self.era)
            .map(Era::version)
    }

    /// The server lost the session ([`session_gone`]): forget its id and open a new one, at most
    /// [`MAX_REINITIALIZE_ATTEMPTS`] times, recording each attempt under request `cause`.
    async fn reinitialize(&self, cause: &Value, deadline: Duration) {
        let Wire::Http(http) = &*self.wire else { return };
        if http.session().is_none() {
            return;
        }
        let Some(cause) = MessageId::from_value(cause) else { return };
        for _ in 0..MAX_REINITIALIZE_ATTEMPTS {
            http.clear_session();
            let (reply, _) = self.request("initialize", self.initialize_params(), deadline).await;
            let accepted =
                matches!(&reply, Some(Reply::Frame(f)) if f.value().is_some_and(|v| v.get("result").is_some()));
            {
                let mut book = lock(&self.book);
                let recovery = book.recovery.entry(cause.clone()).or_default();
                if accepted {
                    recovery.reinitializations += 1;
                } else {
                    recovery.failed_reinitializations += 1;
                }
            }
            if accepted {
                let initialized = Frame::from_value(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
                let _ = tokio::time::timeout(deadline, http.post(&initialized)).await;
                return;
            }
        }
    }

    fn initialize_params(&self) -> Value {
        json!({
            "protocolVersion": self.era.version(),
            "capabilities": self.answers.capabilities(),
            "clientInfo": {"name": "faultlab-reference-client", "version": env!("CARGO_PKG_VERSION")}
        })
    }

    /// What the client did to recover request `id` so far (resumes, duplicate events, a lost response, ...).
    pub fn recovery_for(&self, id: &Value) -> Recovery {
        let Some(id) = MessageId::from_value(id) else { return Recovery::default() };
        let mut recovery = lock(&self.book).recovery.get(&id).cloned().unwrap_or_default();
        if let Wire::Http(http) = &*self.wire {
            let stream = http.stream_recovery(&id);
            recovery.reconnects = stream.reconnects;
            recovery.duplicate_events = stream.duplicate_events;
            // A stream whose resume found the session gone (404) ended the call with that status, not as lost:
            // its transport says the response was lost all the same.
            recovery.lost_responses = recovery.lost_responses.max(stream.lost_responses);
        }
        recovery
    }

    /// One `tools/call`, with `version` instead of the connection's when given.
    async fn call_once(
        &self,
        params: Value,
        deadline: Duration,
        progress: Progress,
        version: Option<&str>,
    ) -> Observation {
        let start = Instant::now();
        let sent = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok();
        let (reply, id) = self.request_with("tools/call", params, deadline, progress, version).await;
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        let mut obs = Observation::new(Outcome::Timeout, id.to_value(), elapsed);
        obs.started_ms = sent.map(|d| d.as_secs_f64() * 1000.0);
        obs.recovery = self.recovery_for(&obs.request_id);
        match reply {
            None => {
                self.cancel(&id, "deadline exceeded").await;
                obs.error = Some(Value::from(match progress {
                    Progress::ResetUntil(max) if elapsed + 1.0 >= max.as_secs_f64() * 1000.0 => {
                        format!("no reply within the hard maximum of {} ms (progress kept coming)", max.as_millis())
                    }
                    Progress::ResetUntil(_) => {
                        format!("no reply or progress within {} ms", deadline.as_millis())
                    }
                    _ => format!("no reply within {} ms", deadline.as_millis()),
                }));
                obs
            }
            Some(Reply::Frame(frame)) => classify_tool_reply(&frame, obs),
            Some(Reply::Http { status, retry_after, body }) => {
                obs.outcome = Outcome::Error;
                obs.error_kind = Some(ErrorKind::HttpStatus);
                obs.http_status = Some(status);
                let body: Value = serde_json::from_slice(&body)
                    .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(&body).into_owned()));
                obs.error = Some(json!({"message": format!("HTTP {status}"), "retryAfter": retry_after, "body": body}));
                obs
            }
            Some(Reply::Lost(detail)) => {
                obs.outcome = Outcome::TransportLoss;
                obs.error = Some(Value::from(detail));
                obs
            }
            Some(Reply::Cancelled) => {
                obs.outcome = Outcome::Cancelled;
                obs.error = Some(Value::from("cancelled by the client"));
                obs
            }
        }
    }

    /// Sends a request and returns its `result`, or what came instead (an error, a status, nothing within
    /// `deadline`, which cancels the request), in words. The tool surface lists tools with it.
    pub async fn request_result(&self, method: &str, params: Value, deadline: Duration) -> Result<Value, String> {
        let (reply, id) = self.request(method, params, deadline).await;
        match reply {
            None => {
                self.cancel(&id, "deadline exceeded").await;
                Err(format!("no reply within {} ms", deadline.as_millis()))
            }
            Some(Reply::Frame(frame)) => {
                let message = frame.value().cloned().unwrap_or_default();
                match (message.get("result"), message.get("error")) {
                    (Some(result), None) => Ok(result.clone()),
                    (_, Some(error)) => Err(format!("error {error}")),
                    _ => Err("the reply has neither result nor error".into()),
                }
            }
            Some(Reply::Http { status, body, .. }) => {
                let body: Option<Value> = serde_json::from_slice(&body).ok();
                if self.era == Era::Legacy && session_gone(status, body.as_ref()) {
                    // The server ended the session: a client MUST start a new one, whatever the request was
                    // (2025-11-25, Session Management), as after a tool call; this request stays failed.
                    self.reinitialize(&id.to_value(), deadline).await;
                }
                Err(format!("HTTP {status}"))
            }
            Some(Reply::Lost(detail)) => Err(detail),
            Some(Reply::Cancelled) => Err("cancelled by the client".into()),
        }
    }

    /// Sends a request and waits for its reply; `None` when the deadline passed first. The request's pending
    /// entry is gone either way (a late reply then counts as late).
    pub(crate) async fn request(&self, method: &str, params: Value, deadline: Duration) -> (Option<Reply>, MessageId) {
        self.request_with(method, params, deadline, Progress::Off, None).await
    }

    /// As [`Connection::request`], asking for progress as `progress` says (its token is the request id) and
    /// naming `version` instead of the connection's protocol version when given.
    async fn request_with(
        &self,
        method: &str,
        params: Value,
        deadline: Duration,
        progress: Progress,
        version: Option<&str>,
    ) -> (Option<Reply>, MessageId) {
        let id = MessageId::from(self.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = oneshot::channel();
        let seq = self.next_seq.fetch_add(1, Ordering::SeqCst) as u64;
        let token = id.to_value();
        let mut ticks = None;
        {
            let mut book = lock(&self.book);
            if book.closed {
                return (Some(Reply::Lost("the connection is closed".into())), id);
            }
            book.pending.insert(id.clone(), Pending { tx, seq });
            if let Progress::ResetUntil(_) = progress {
                let (tick, ticked) = watch::channel(());
                book.progress.insert(token.to_string(), tick);
                ticks = Some(ticked);
            }
        }
        let mut params = self.with_meta(params, version);
        if progress != Progress::Off {
            if !params.is_object() {
                params = json!({});
            }
            params["_meta"]["progressToken"] = token.clone();
        }
        let message = json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params});
        self.send(&Frame::from_value(message)).await;
        let reply = match progress {
            Progress::ResetUntil(max) => wait_resetting(rx, ticks, deadline, max).await,
            _ => tokio::time::timeout(deadline, rx).await.ok(),
        };
        let mut book = lock(&self.book);
        book.progress.remove(&token.to_string());
        match reply {
            Some(Ok(reply)) => (Some(reply), id),
            // The sender was dropped: the dispatcher has stopped, so the connection is gone.
            Some(Err(_)) => (Some(Reply::Lost("the connection closed".into())), id),
            None => {
                book.pending.remove(&id);
                book.abandoned.insert(id.clone());
                (None, id)
            }
        }
    }

    /// Cancels request `id`: stdio sends `notifications/cancelled`; 2026-07-28 HTTP drops the response stream;
    /// 2025-11-25 HTTP POSTs the notification and keeps reading the stream (to see a late reply).
    pub async fn cancel(&self, id: &MessageId, reason: &str) {
        {
            let mut book = lock(&self.book);
            if let Some(pending) = book.pending.remove(id) {
                let _ = pending.tx.send(Reply::Cancelled);
            }
            book.abandoned.insert(id.clone());
        }
        match (&*self.wire, self.era) {
            (Wire::Http(http), Era::Modern) => {
                http.drop_stream(id);
                // Dropping the stream ends the answer: nothing more can arrive for this request.
                lock(&self.book).ended.insert(id.clone());
                self.changed.notify_waiters();
            }
            _ => {
                let params = json!({"requestId": id.to_value(), "reason": reason});
                self.notify("notifications/cancelled", Some(params)).await;
            }
        }
    }

    pub async fn notify(&self, method: &str, params: Option<Value>) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.send(&Frame::from_value(message)).await;
    }

    async fn send(&self, frame: &Frame) {
        self.wire.send(frame, &self.book).await;
    }

    /// 2026-07-28 requests carry the protocol version and capabilities in `params._meta`. With `version` (a retry
    /// after `-32022`) the request names that version in `_meta`, which the HTTP transport also puts in its header.
    fn with_meta(&self, params: Value, version: Option<&str>) -> Value {
        let era = version.and_then(Era::of_version).unwrap_or(self.era);
        if era != Era::Modern && version.is_none() {
            return params;
        }
        let mut params = if params.is_object() { params } else { json!({}) };
        params["_meta"] = if era == Era::Modern {
            json!({
                "io.modelcontextprotocol/protocolVersion": Era::Modern.version(),
                "io.modelcontextprotocol/clientCapabilities": self.answers.capabilities(),
                "io.modelcontextprotocol/clientInfo": {"name": "faultlab-reference-client", "version": env!("CARGO_PKG_VERSION")}
            })
        } else {
            json!({"io.modelcontextprotocol/protocolVersion": era.version()})
        };
        params
    }

    /// Waits (at most `deadline`) until everything the server sent about request `id` has been filed, so that
    /// counts of duplicates and notifications are complete. HTTP: until the request's answer has ended. stdio: a
    /// `tools/list` round trip, since the server writes in order and the pipe keeps it.
    pub async fn settle(&self, id: &Value, deadline: Duration) {
        let Some(id) = MessageId::from_value(id) else { return };
        match &*self.wire {
            Wire::Http(_) => {
                let _ = tokio::time::timeout(deadline, async {
                    loop {
                        let notified = self.changed.notified();
                        {
                            let book = lock(&self.book);
                            if book.ended.contains(&id) || book.closed {
                                return;
                            }
                        }
                        notified.await;
                    }
                })
                .await;
            }
            Wire::Stdio(_) => {
                if self.is_alive() {
                    let _ = self.request("tools/list", json!({}), deadline).await;
                }
            }
        }
    }

    /// Cancels every request still waiting (the adapter's `cancel`).
    pub async fn cancel_all(&self, reason: &str) {
        let ids: Vec<MessageId> = lock(&self.book).pending.keys().cloned().collect();
        for id in ids {
            self.cancel(&id, reason).await;
        }
    }

    /// Every anomaly seen so far.
    pub fn anomalies(&self) -> Anomalies {
        lock(&self.book).anomalies.clone()
    }

    /// How many responses (first, duplicates, late) carried request `id`.
    pub fn responses_for(&self, id: &Value) -> u32 {
        MessageId::from_value(id).and_then(|id| lock(&self.book).responses.get(&id).copied()).unwrap_or(0)
    }

    /// The server could not be run: on stdio it exited in failure before it sent a single frame, in words with
    /// its stderr's last lines (waiting a little for its exit once its stdout has closed); over HTTP nothing ever
    /// answered and every connection was refused.
    pub async fn died_unanswered(&self) -> Option<String> {
        match &*self.wire {
            Wire::Stdio(stdio) => stdio.died_unanswered().await,
            Wire::Http(http) => http.unreachable(),
        }
    }

    /// What the auth mode did on this connection so far; `None` when it is off.
    pub fn auth_record(&self) -> Option<AuthRecord> {
        match &*self.wire {
            Wire::Http(http) => http.auth_record(),
            Wire::Stdio(_) => None,
        }
    }

    /// False once the server closed the connection.
    pub fn is_alive(&self) -> bool {
        !lock(&self.book).closed
    }

    /// Ends the connection: DELETE for a legacy HTTP session; for stdio, close stdin, then SIGTERM, then SIGKILL.
    pub async fn close(&self) {
        match &*self.wire {
            Wire::Stdio(stdio) => stdio.close().await,
            Wire::Http(http) => {
                if self.era == Era::Legacy {
                    http.end_session().await;
                }
            }
        }
        fail_all(&self.book, "the connection was closed by the client");
    }
}

impl Wire {
    async fn send(&self, frame: &Frame, book: &Mutex<Book>) {
        match self {
            Wire::Stdio(stdio) => {
                if stdio.send(frame.bytes()).await.is_err() {
                    fail_all(book, "cannot write to the server's stdin");
                }
            }
            Wire::Http(http) => {
                http.post(frame);
            }
        }
    }
}

/// Takes everything that arrives and routes it: replies to their waiting request, server requests answered,
/// everything else counted.
async fn dispatch(
    mut rx: mpsc::UnboundedReceiver<Incoming>,
    book: Arc<Mutex<Book>>,
    wire: Arc<Wire>,
    changed: Arc<Notify>,
    answers: Answers,
) {
    while let Some(incoming) = rx.recv().await {
        match incoming {
            Incoming::Frame(frame) => {
                if let Some(answer) = route(&frame, &book, &answers) {
                    wire.send(&answer, &book).await;
                }
            }
            Incoming::HttpStatus { id, status, retry_after, body } => {
                let waiting = lock(&book).pending.remove(&id);
                if let Some(pending) = waiting {
                    let _ = pending.tx.send(Reply::Http { status, retry_after, body });
                }
            }
            Incoming::Lost { id: Some(id), detail } => {
                let mut book = lock(&book);
                if let Some(pending) = book.pending.remove(&id) {
                    book.recovery.entry(id).or_default().lost_responses = 1;
                    let _ = pending.tx.send(Reply::Lost(detail));
                }
            }

            Incoming::Answer { id, frame } => {
                // Counted as the anomaly it is, then handed to the call as its reply.
                route(&frame, &book, &answers);
                let waiting = lock(&book).pending.remove(&id);
                if let Some(pending) = waiting {
                    let _ = pending.tx.send(Reply::Frame(frame));
                }
            }
            Incoming::Lost { id: None, detail } => fail_all(&book, &detail),
            Incoming::Ended { id } => {
                let mut book = lock(&book);
                book.ended.insert(id.clone());
                if let Some(pending) = book.pending.remove(&id) {
                    book.recovery.entry(id).or_default().lost_responses = 1;
                    let _ = pending.tx.send(Reply::Lost("the response ended without answering the request".into()));
                }
            }
        }
        changed.notify_waiters();
    }
}

/// Files one frame; returns the answer to send back when it was a server-to-client request.
fn route(frame: &Frame, book: &Mutex<Book>, answers: &Answers) -> Option<Frame> {
    let mut book = lock(book);
    match frame.kind() {
        Kind::Response { id } | Kind::Error { id: Some(id) } => {
            *book.responses.entry(id.clone()).or_default() += 1;
            if let Some(pending) = book.pending.remove(id) {
                if book.pending.values().any(|p| p.seq < pending.seq) {
                    book.anomalies.out_of_order_responses += 1;
                }
                book.answered.insert(id.clone());
                let _ = pending.tx.send(Reply::Frame(frame.clone()));
            } else if book.answered.contains(id) {
                book.anomalies.duplicate_responses += 1;
            } else if book.abandoned.contains(id) {
                book.anomalies.late_responses += 1;
            } else {
                book.anomalies.unknown_id_responses += 1;
            }
            None
        }
        Kind::Error { id: None } => {
            book.anomalies.idless_errors += 1;
            None
        }
        Kind::Request { id, method } => {
            book.anomalies.server_requests += 1;
            let reaction = if method == "ping" {
                Reaction::Reply(json!({"result": {}}))
            } else {
                answers.react(method, frame.value().and_then(|v| v.get("params")))
            };
            let Reaction::Reply(mut answer) = reaction else {
                book.anomalies.unanswered_server_requests += 1;
                return None;
            };
            let declined = answer.pointer("/result/action").is_some_and(|a| a == "decline")
                || answer.pointer("/error/code").is_some_and(|c| c == -1);
            if declined {
                book.anomalies.declined_server_requests += 1;
            }
            answer["jsonrpc"] = json!("2.0");
            answer["id"] = id.to_value();
            Some(Frame::from_value(answer))
        }
        Kind::Notification { method } => {
            *book.anomalies.notifications.entry(method.clone()).or_default() += 1;
            if method == "notifications/progress"
                && let Some(token) = frame.value().and_then(|v| v.pointer("/params/progressToken"))
                && let Some(tick) = book.progress.get(&token.to_string())
            {
                let _ = tick.send(());
            }
            None
        }
        Kind::Other => {
            book.anomalies.non_message_frames += 1;
            None
        }
        Kind::Unparsable => {
            book.anomalies.unparsable_frames += 1;
            None
        }
    }
}

/// The connection is gone: every waiting request ends in transport loss.
fn fail_all(book: &Mutex<Book>, detail: &str) {
    let mut book = lock(book);
    book.closed = true;
    for (_, pending) in book.pending.drain() {
        let _ = pending.tx.send(Reply::Lost(detail.to_owned()));
    }
}

/// Waits for a reply: `deadline` after the send or after the last progress notification for the call, whichever
/// is later, but never past `max` after the send. `None` when that time passed first.
async fn wait_resetting(
    mut rx: oneshot::Receiver<Reply>,
    mut ticks: Option<watch::Receiver<()>>,
    deadline: Duration,
    max: Duration,
) -> Option<Result<Reply, oneshot::error::RecvError>> {
    let hard = Instant::now() + max;
    let mut until = Instant::now() + deadline;
    loop {
        let tick = async {
            match ticks.as_mut() {
                Some(t) => t.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            reply = &mut rx => return Some(reply),
            ticked = tick => {
                if ticked {
                    until = Instant::now() + deadline;
                } else {
                    ticks = None;
                }
            }
            () = tokio::time::sleep_until(until.min(hard)) => return None,
        }
    }
}

/// Whether an HTTP status answering a request of the session says the session is gone: 404, as the spec has it
/// (2025-11-25, Session Management), or a 400 whose JSON-RPC error names the session ("Bad Request: No valid
/// session ID provided"): what servers built on the SDKs' examples, and the Python SDK's session manager, answer
/// for an id they no longer hold, after a restart say. Either way the session is lost to the client, which opens a
/// new one (bounded); another 400 (a bad request of its own) leaves the session as it is.
pub(crate) fn session_gone(status: u16, body: Option<&Value>) -> bool {
    let names_the_session = || {
        body.and_then(|b| b.pointer("/error/message"))
            .and_then(Value::as_str)
            .is_some_and(|message| message.to_ascii_lowercase().contains("session"))
    };
    status == 404 || (status == 400 && names_the_session())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_404_or_a_400_naming_the_session_is_a_lost_session_and_another_400_is_not() {
        let error =
            |message: &str| json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": message}, "id": null});
        assert!(session_gone(404, None));
        assert!(session_gone(400, Some(&error("Bad Request: No valid session ID provided"))));
        assert!(session_gone(400, Some(&error("Session not found"))));
        assert!(!session_gone(400, Some(&error("Parse error: Invalid JSON"))));
        assert!(!session_gone(400, None));
        assert!(!session_gone(500, Some(&error("session store unavailable"))));
    }

    /// Progress every 500 ms against a 1 s timeout keeps the call waiting until the 3 s hard maximum; without
    /// progress the 1 s timeout ends it.
    #[tokio::test(start_paused = true)]
    async fn progress_restarts_the_timeout_up_to_the_hard_maximum() {
        let (_reply, rx) = oneshot::channel::<Reply>();
        let (tick, ticks) = watch::channel(());
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if tick.send(()).is_err() {
                    return;
                }
            }
        });
        let start = Instant::now();
        let waited = wait_resetting(rx, Some(ticks), Duration::from_secs(1), Duration::from_secs(3)).await;
        assert!(waited.is_none());
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        ticker.abort();

        let (_reply, rx) = oneshot::channel::<Reply>();
        let (_tick, ticks) = watch::channel(());
        let start = Instant::now();
        assert!(wait_resetting(rx, Some(ticks), Duration::from_secs(1), Duration::from_secs(3)).await.is_none());
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }
}
