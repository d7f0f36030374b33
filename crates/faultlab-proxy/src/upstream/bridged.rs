//! The HTTP front's stdio upstream as a stateful Streamable HTTP server behaves: a [`Bridge`] per session.
//!
//! A stdio server has no session ids of its own, so the front gives them out. Each `initialize` without a session
//! id starts a server of its own; its successful reply carries a new `Mcp-Session-Id` (a UUID v4 from the OS
//! random source, the shape `faultlab serve`'s rmcp sessions have), and every request naming that id goes to that
//! server. A request naming an id the front does not hold (never given out, ended by `DELETE`, expired, evicted,
//! or whose server exited) gets 404 with -32001, which the spec prescribes for a terminated session: a client then
//! starts again with a new `initialize` and meets a fresh server. Requests without a session id (2026-07-28, or a
//! legacy client that keeps none) go to one shared server started with the front, as `faultlab serve` serves them
//! statelessly; when it exits the proxy ends (`faultlab proxy` exits 1).
//!
//! Bounds: at most [`MAX_SESSIONS`] sessions (each a process); at the cap the least recently used session with
//! nothing in flight for [`EVICTABLE_AFTER`] is ended to admit a new one, else the `initialize` gets 503. A session
//! with nothing in flight for [`SESSION_IDLE`] is ended (checked every [`REAP_EVERY`]). A session's server is
//! stopped in order (stdin closed, grace, SIGTERM, grace, SIGKILL to its group) when its session ends, and every
//! server when the front stops ([`Bridged::stop`]); a dropped [`Bridge`] kills its group.

use super::bridge::Bridge;
use crate::trajectory::TrajectoryWriter;
use axum::response::{IntoResponse, Response};
use faultlab_engine::recorder::TransportEventKind;
use faultlab_http::rpc_error;
use faultlab_wire::Frame;
use faultlab_wire::sync::lock;
use http::{HeaderValue, StatusCode, header};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

/// Most sessions open at once (32): each is a server process, so fewer than `faultlab serve`'s 128 in-process
/// sessions; an `initialize` past it gets 503 unless an idle session can be ended.
pub const MAX_SESSIONS: usize = 32;
/// A session with nothing in flight for this long is ended (5 min, `faultlab serve`'s default idle timeout).
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// At the cap, a session with nothing in flight for this long (30 s, as `faultlab serve`) may be ended to admit a
/// new one.
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(30);
/// How often idle sessions are looked for (10 s): a session ends at most this long after its idle time.
pub const REAP_EVERY: Duration = Duration::from_secs(10);

/// The session header, lower-case as `http` keeps names.
const SESSION_HEADER: &str = "mcp-session-id";

/// Builds the server's command line afresh for each server started (a `Command` is used up by a start).
pub type MakeCommand = Box<dyn Fn() -> Command + Send + Sync>;

/// The bounds of [`Bridged`]; [`Default`] is the proxy's ([`MAX_SESSIONS`], [`SESSION_IDLE`], ...).
#[derive(Clone, Copy, Debug)]
pub struct SessionBounds {
    pub max_sessions: usize,
    pub idle: Duration,
    pub evictable_after: Duration,
    pub reap_every: Duration,
}

impl Default for SessionBounds {
    fn default() -> Self {
        Self {
            max_sessions: MAX_SESSIONS,
            idle: SESSION_IDLE,
            evictable_after: EVICTABLE_AFTER,
            reap_every: REAP_EVERY,
        }
    }
}

/// One session: its server and how busy it is.
struct Session {
    bridge: Arc<Bridge>,
    in_flight: AtomicUsize,
    last_active: Mutex<Instant>,
}

impl Session {
    fn idle_for(&self, now: Instant) -> Option<Duration> {
        (self.in_flight.load(Ordering::SeqCst) == 0).then(|| now.saturating_duration_since(*lock(&self.last_active)))
    }
}

/// A request in flight on a session: the session is busy until it is dropped, and active when it ends.
struct InFlight(Arc<Session>);

impl InFlight {
    fn new(session: Arc<Session>) -> Self {
        session.in_flight.fetch_add(1, Ordering::SeqCst);
        *lock(&session.last_active) = Instant::now();
        Self(session)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        *lock(&self.0.last_active) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Table {
    sessions: HashMap<String, Arc<Session>>,
    /// `initialize` requests admitted whose server has not answered yet (they count against the cap).
    opening: usize,
}

/// A stdio server per session behind the HTTP front, and a shared one for requests without a session.
pub struct Bridged {
    make: MakeCommand,
    trajectory: Arc<TrajectoryWriter>,
    request_timeout: Duration,
    grace: Duration,
    bounds: SessionBounds,
    shared: Arc<Bridge>,
    table: Mutex<Table>,
    /// Servers being stopped, waited for by [`Bridged::stop`].
    stopping: TaskTracker,
    stopped: AtomicBool,
    reaper: Mutex<Option<AbortOnDropHandle<()>>>,
}

impl Bridged {
    /// Starts the shared server (an error if it cannot start: the proxy cannot serve) and the idle reaper. Each
    /// server answers a request within `request_timeout` or the request gets an error; `grace` bounds each step of
    /// stopping one.
    pub fn spawn(
        make: MakeCommand,
        trajectory: Arc<TrajectoryWriter>,
        request_timeout: Duration,
        grace: Duration,
        bounds: SessionBounds,
    ) -> std::io::Result<Arc<Self>> {
        let shared = Arc::new(Bridge::spawn(make(), trajectory.clone(), request_timeout)?);
        let bridged = Arc::new(Self {
            make,
            trajectory,
            request_timeout,
            grace,
            bounds,
            shared,
            table: Mutex::default(),
            stopping: TaskTracker::new(),
            stopped: AtomicBool::new(false),
            reaper: Mutex::default(),
        });
        let weak = Arc::downgrade(&bridged);
        *lock(&bridged.reaper) = Some(AbortOnDropHandle::new(tokio::spawn(reap(weak, bounds.reap_every))));
        Ok(bridged)
    }

    /// Resolves once the shared server has ended: requests without a session would all fail, so the front stops.
    pub async fn ended(&self) {
        self.shared.ended().await
    }

    /// Sessions open now.
    pub fn sessions(&self) -> usize {
        lock(&self.table).sessions.len()
    }

    /// Answers one request: on its session's server, by opening a session (`initialize`), or on the shared server.
    pub async fn forward(&self, method: http::Method, session: Option<&str>, frame: Option<&Frame>) -> Response {
        let id = frame.and_then(Frame::id).map(|id| id.to_value());
        match session {
            Some(session) => {
                let Some(found) = self.session(session) else {
                    return rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found", id);
                };
                if method == http::Method::DELETE {
                    // The client ends its session: its server is stopped, its id unknown from now on.
                    self.end(session, "ended by the client (DELETE)");
                    return StatusCode::NO_CONTENT.into_response();
                }
                let _in_flight = InFlight::new(found.clone());
                found.bridge.forward(method, frame).await
            }
            None => match frame.filter(|f| method == http::Method::POST && f.method() == Some("initialize")) {
                Some(initialize) => self.open(initialize).await,
                None => self.shared.forward(method, frame).await,
            },
        }
    }

    /// Ends every session `forgotten` names (a session-lifecycle fault made it unknown: a real server that forgot
    /// it has no server state for it either), stopping their servers.
    pub fn end_where(&self, forgotten: impl Fn(&str) -> bool, why: &str) {
        let ids: Vec<String> = lock(&self.table).sessions.keys().filter(|id| forgotten(id)).cloned().collect();
        for id in ids {
            self.end(&id, why);
        }
    }

    /// Stops every server in order (the shared one and each session's), and waits for those already stopping.
    pub async fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        lock(&self.reaper).take();
        let sessions: Vec<Arc<Session>> = lock(&self.table).sessions.drain().map(|(_, s)| s).collect();
        for session in sessions {
            self.stop_later(session.bridge.clone());
        }
        self.stop_later(self.shared.clone());
        self.stopping.close();
        self.stopping.wait().await;
    }

    /// The session `id`, if open; a session whose server exited on its own is ended here (and so unknown).
    fn session(&self, id: &str) -> Option<Arc<Session>> {
        let found = lock(&self.table).sessions.get(id).cloned()?;
        if found.bridge.has_ended() {
            self.end(id, "its server exited on its own");
            return None;
        }
        Some(found)
    }

    /// Takes session `id` out (its id is unknown from then on) and stops its server; the trajectory says why.
    fn end(&self, id: &str, why: &str) {
        let Some(session) = lock(&self.table).sessions.remove(id) else { return };
        self.trajectory.transport(TransportEventKind::Closed, None, format!("a bridged session ended: {why}"));
        self.stop_later(session.bridge.clone());
    }

    fn stop_later(&self, bridge: Arc<Bridge>) {
        let grace = self.grace;
        self.stopping.spawn(async move { bridge.stop(grace).await });
    }

    /// An `initialize` without a session: a new server, and a session if it answers with a result.
    async fn open(&self, initialize: &Frame) -> Response {
        let id = initialize.id().map(|id| id.to_value());
        if !self.admit() {
            let mut refused = rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32603, "Too many active sessions", id);
            refused.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return refused;
        }
        let _opening = Opening(self);
        let bridge = match Bridge::spawn((self.make)(), self.trajectory.clone(), self.request_timeout) {
            Ok(bridge) => Arc::new(bridge),
            Err(e) => {
                let message = format!("cannot start the upstream server: {e}");
                return rpc_error(StatusCode::BAD_GATEWAY, -32603, &message, id);
            }
        };
        let response = bridge.forward(http::Method::POST, Some(initialize)).await;
        let (mut parts, body) = response.into_parts();
        // The bridge's answers are whole JSON bodies in memory.
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        let succeeded = parts.status == StatusCode::OK
            && Frame::parse(bytes.clone()).value().is_some_and(|reply| reply.get("result").is_some());
        if !succeeded || self.stopped.load(Ordering::SeqCst) {
            // No session began: the server that refused it (or came too late) is not kept.
            self.stop_later(bridge);
            return Response::from_parts(parts, axum::body::Body::from(bytes));
        }
        let session_id = uuid::Uuid::new_v4().to_string();
        let session = Session { bridge, in_flight: AtomicUsize::new(0), last_active: Mutex::new(Instant::now()) };
        lock(&self.table).sessions.insert(session_id.clone(), Arc::new(session));
        let value = HeaderValue::from_str(&session_id).expect("a UUID is a header value");
        parts.headers.insert(SESSION_HEADER, value);
        Response::from_parts(parts, axum::body::Body::from(bytes))
    }

    /// Whether a new session fits (counting it as opening): under the cap, or after ending the least recently
    /// used session idle for [`SessionBounds::evictable_after`].
    fn admit(&self) -> bool {
        if self.stopped.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        let mut table = lock(&self.table);
        if table.sessions.len() + table.opening >= self.bounds.max_sessions {
            let idlest = table
                .sessions
                .iter()
                .filter_map(|(id, s)| Some((s.idle_for(now)?, id)))
                .filter(|(idle, _)| *idle >= self.bounds.evictable_after)
                .max_by_key(|(idle, _)| *idle)
                .map(|(_, id)| id.clone());
            let Some(evicted) = idlest else { return false };
            drop(table);
            self.end(&evicted, "the least recently used, ended to admit a new session at the cap");
            table = lock(&self.table);
        }
        table.opening += 1;
        true
    }

    /// Ends every session idle for [`SessionBounds::idle`].
    fn reap(&self) {
        let now = Instant::now();
        let idle: Vec<String> = lock(&self.table)
            .sessions
            .iter()
            .filter(|(_, s)| s.idle_for(now).is_some_and(|idle| idle >= self.bounds.idle))
            .map(|(id, _)| id.clone())
            .collect();
        let why = format!("nothing in flight for {} s", self.bounds.idle.as_secs());
        for id in idle {
            self.end(&id, &why);
        }
    }
}

/// An admitted `initialize` until its server has answered (or it was dropped).
struct Opening<'a>(&'a Bridged);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        lock(&self.0.table).opening -= 1;
    }
}

async fn reap(bridged: Weak<Bridged>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(bridged) = bridged.upgrade() else { return };
        bridged.reap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultlab_engine::Recorder;

    /// A stdio "server" answering every line with a result for id 1, as many times as it is asked.
    fn answering() -> MakeCommand {
        Box::new(|| {
            let mut command = Command::new("sh");
            command.args(["-c", r#"while read -r line; do echo '{"jsonrpc":"2.0","id":1,"result":{}}'; done"#]);
            command
        })
    }

    fn initialize() -> Frame {
        Frame::parse(bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#))
    }

    async fn open(bridged: &Bridged) -> (StatusCode, Option<String>) {
        let response = bridged.forward(http::Method::POST, None, Some(&initialize())).await;
        let id = response.headers().get(SESSION_HEADER).map(|v| v.to_str().unwrap().to_owned());
        (response.status(), id)
    }

    /// Lets the reaper and the stopping tasks run on the paused clock.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn sessions_are_capped_the_idlest_evicted_after_its_time_and_idle_ones_ended() {
        let trajectory = Arc::new(TrajectoryWriter::new(Recorder::memory()));
        let bounds = SessionBounds { max_sessions: 2, ..SessionBounds::default() };
        let timeout = Duration::from_secs(60);
        let bridged = Bridged::spawn(answering(), trajectory, timeout, Duration::from_millis(100), bounds).unwrap();
        let (status, a) = open(&bridged).await;
        assert_eq!(status, StatusCode::OK);
        let (_, b) = open(&bridged).await;
        assert_eq!(bridged.sessions(), 2);
        let (status, none) = open(&bridged).await;
        assert_eq!((status, none), (StatusCode::SERVICE_UNAVAILABLE, None), "at the cap, no session idle 30 s");

        // The paused clock moves past the eviction age (the children answer in real time, so it runs again
        // before each request is forwarded).
        tokio::time::pause();
        tokio::time::advance(EVICTABLE_AFTER + Duration::from_secs(1)).await;
        tokio::time::resume();
        let (status, c) = open(&bridged).await;
        assert_eq!(status, StatusCode::OK, "the least recently used idle session made room");
        assert_eq!(bridged.sessions(), 2);
        let ping = Frame::parse(bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#));
        let gone = bridged.forward(http::Method::POST, a.as_deref(), Some(&ping)).await;
        assert_eq!(gone.status(), StatusCode::NOT_FOUND, "the evicted session (the first) is unknown");
        for kept in [&b, &c] {
            let answered = bridged.forward(http::Method::POST, kept.as_deref(), Some(&ping)).await;
            assert_eq!(answered.status(), StatusCode::OK);
        }

        tokio::time::pause();
        tokio::time::advance(SESSION_IDLE - Duration::from_secs(1)).await;
        settle().await;
        assert_eq!(bridged.sessions(), 2, "not idle long enough yet");
        tokio::time::advance(REAP_EVERY + Duration::from_secs(1)).await;
        settle().await;
        assert_eq!(bridged.sessions(), 0, "each session idle for 5 min is ended");
        tokio::time::resume();
        bridged.stop().await;
        let (status, _) = open(&bridged).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "nothing starts once stopped");
    }
}
