//! The registry of legacy (2025-11-25) HTTP sessions: admission up to a cap, activity tracking, idle reclaim,
//! deliberate loss, and the link from a request id to the response stream that carries its reply.
//!
//! rmcp's `LocalSessionManager` runs each session's server; this registry decides which session ids the front
//! accepts. A session leaves the registry *before* rmcp closes it, so once lost or reclaimed its id gets 404
//! at once. Ids are rmcp's random UUIDs; a removed id is never admitted again because only `initialize`
//! responses add ids, and each carries a fresh one.

use faultlab_engine::{Engine, Recorder};
use faultlab_wire::MessageId;
use rmcp::schemars;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::time::Instant;

pub use faultlab_http::body::StreamLink;
use faultlab_wire::sync::lock;

/// Most legacy sessions open at once; `initialize` past it gets 503.
pub const MAX_SESSIONS: usize = 128;
/// A session with no request in flight for this long is closed (5 min).
pub const SESSION_IDLE: Duration = Duration::from_secs(300);
/// At the cap, a session idle (nothing in flight) for this long may be closed to admit a new one (30 s): an
/// abandoned session holds its place for at most this long once the cap is reached, while a client pausing
/// between calls for less keeps its session.
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum LossActivation {
    /// Remove the session and interrupt the activating response.
    DuringRequest,
    /// Remove the session, deliver the activating result, then close the session.
    AfterResponse,
}

impl LossActivation {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LossError {
    #[error("Session loss is already active")]
    AlreadyLost,
}

/// One legacy session as the front sees it.
pub struct Session {
    pub id: String,
    pub engine: Arc<Engine>,
    streams: Mutex<HashMap<MessageId, StreamLink>>,
    active: AtomicUsize,
    last_active: Mutex<Instant>,
    lost: Mutex<Option<LossActivation>>,
    /// `session_lifecycle` `get_404`: the standalone GET stream is refused, POSTs still served.
    refuse_get: AtomicBool,
    registry: Weak<Registry>,
    /// The session's resumable response streams (their events, for `Last-Event-ID`).
    pub resumable: Arc<faultlab_http::resume::Streams>,
}

/// What a tool handler holds to act on its session.
#[derive(Clone)]
pub struct SessionHandle(pub Arc<Session>);

impl SessionHandle {
    /// Takes the session out of the registry now; the front closes it in rmcp when the activating response ends.
    pub fn lose(&self, activation: LossActivation) -> Result<(), LossError> {
        {
            let mut lost = lock(&self.0.lost);
            if lost.is_some() {
                return Err(LossError::AlreadyLost);
            }
            *lost = Some(activation);
        }
        if let Some(registry) = self.0.registry.upgrade() {
            registry.remove(&self.0.id);
        }
        Ok(())
    }

    /// The registry this session is in, while it still exists (the server is up).
    pub fn registry(&self) -> Option<Arc<Registry>> {
        self.0.registry.upgrade()
    }

    /// `get_404`: from now on the session's GET stream is answered 404.
    pub fn refuse_get(&self) {
        self.0.refuse_get.store(true, Ordering::SeqCst);
    }
}

impl Session {
    pub fn is_lost(&self) -> bool {
        lock(&self.lost).is_some()
    }

    pub fn refuses_get(&self) -> bool {
        self.refuse_get.load(Ordering::SeqCst)
    }

    /// Marks a request as started; the returned guard marks it finished when dropped (when its response body
    /// has been fully sent or abandoned).
    pub fn begin_request(self: &Arc<Self>) -> ActiveRequest {
        self.active.fetch_add(1, Ordering::SeqCst);
        *lock(&self.last_active) = Instant::now();
        ActiveRequest(self.clone())
    }

    pub fn link_stream(&self, id: MessageId, link: StreamLink) {
        lock(&self.streams).insert(id, link);
    }

    pub fn unlink_stream(&self, id: &MessageId) {
        lock(&self.streams).remove(id);
    }

    pub fn stream(&self, id: &MessageId) -> Option<StreamLink> {
        lock(&self.streams).get(id).cloned()
    }
}

impl faultlab_http::body::StreamRegistry for Session {
    fn link(&self, id: MessageId, link: StreamLink) {
        self.link_stream(id, link);
    }

    fn unlink(&self, id: &MessageId) {
        self.unlink_stream(id);
    }
}

pub struct ActiveRequest(Arc<Session>);

impl Drop for ActiveRequest {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        *lock(&self.0.last_active) = Instant::now();
    }
}

/// The sessions the front admits.
pub struct Registry {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Admissions granted but whose `initialize` has not answered yet; they count against the cap.
    reserved: AtomicUsize,
    max_sessions: usize,
    recorder: Recorder,
    /// What the `session_lifecycle` variants leave for later requests.
    pub lifecycle: super::lifecycle::Lifecycle,
    /// What every session's stream logs hold together ([`faultlab_http::resume::MAX_TOTAL_BYTES`]).
    events: faultlab_http::body::Budget,
    /// Stream numbers, shared by the sessions so an id names one session's stream.
    stream_numbers: Arc<std::sync::atomic::AtomicU64>,
}

/// A place under the cap held for one `initialize` in flight; released on drop unless committed.
pub struct Reservation {
    registry: Arc<Registry>,
    committed: bool,
}

impl Registry {
    pub fn new(max_sessions: usize, recorder: Recorder) -> Arc<Self> {
        Arc::new(Self {
            sessions: Mutex::default(),
            reserved: AtomicUsize::new(0),
            max_sessions,
            recorder,
            lifecycle: Default::default(),
            events: faultlab_http::body::Budget::new(faultlab_http::resume::MAX_TOTAL_BYTES),
            stream_numbers: Arc::default(),
        })
    }

    /// Holds a place for a new session, or `None` when the cap is reached.
    pub fn reserve(self: &Arc<Self>) -> Option<Reservation> {
        let sessions = lock(&self.sessions);
        // Checked and incremented under the sessions lock, so concurrent admissions cannot overshoot the cap.
        if sessions.len() + self.reserved.load(Ordering::SeqCst) >= self.max_sessions {
            return None;
        }
        self.reserved.fetch_add(1, Ordering::SeqCst);
        Some(Reservation { registry: self.clone(), committed: false })
    }

    /// Turns a reservation into a registered session with the id rmcp minted.
    pub fn commit(self: &Arc<Self>, mut reservation: Reservation, id: String) -> Arc<Session> {
        let session = Arc::new(Session {
            engine: Arc::new(
                Engine::new(self.recorder.scoped(format!("session:{id}")))
                    .listing_task_support(crate::tools::task_support),
            ),
            id: id.clone(),
            streams: Mutex::default(),
            active: AtomicUsize::new(0),
            last_active: Mutex::new(Instant::now()),
            lost: Mutex::new(None),
            refuse_get: AtomicBool::new(false),
            registry: Arc::downgrade(self),
            resumable: Arc::new(faultlab_http::resume::Streams::new(self.events.clone(), self.stream_numbers.clone())),
        });
        let mut sessions = lock(&self.sessions);
        sessions.insert(id, session.clone());
        self.reserved.fetch_sub(1, Ordering::SeqCst);
        reservation.committed = true;
        session
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id).cloned()
    }

    pub fn remove(&self, id: &str) -> Option<Arc<Session>> {
        let removed = lock(&self.sessions).remove(id);
        if let Some(session) = &removed {
            session.engine.clear();
        }
        removed
    }

    pub fn len(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Bytes of stream events all sessions hold now.
    pub fn event_bytes(&self) -> usize {
        self.events.held()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every session idle (no request in flight) for at least `idle`, returning their ids.
    pub fn take_idle(&self, idle: Duration) -> Vec<String> {
        let now = Instant::now();
        let mut sessions = lock(&self.sessions);
        let idle_ids: Vec<String> = sessions
            .values()
            .filter(|s| s.active.load(Ordering::SeqCst) == 0 && now.duration_since(*lock(&s.last_active)) >= idle)
            .map(|s| s.id.clone())
            .collect();
        for id in &idle_ids {
            sessions.remove(id);
        }
        idle_ids
    }

    /// Removes the least recently used session with nothing in flight and idle for at least `min_idle`,
    /// returning its id (to close in rmcp), or `None` when no session is that idle.
    pub fn evict_lru(&self, min_idle: Duration) -> Option<String> {
        let now = Instant::now();
        let mut sessions = lock(&self.sessions);
        let (id, _) = sessions
            .values()
            .filter(|s| s.active.load(Ordering::SeqCst) == 0)
            .map(|s| (s.id.clone(), *lock(&s.last_active)))
            .filter(|(_, last)| now.duration_since(*last) >= min_idle)
            .min_by_key(|(_, last)| *last)?;
        if let Some(session) = sessions.remove(&id) {
            session.engine.clear();
            self.recorder.record(faultlab_engine::recorder::Event::Transport {
                outcome: faultlab_engine::recorder::TransportEventKind::Closed,
                request_id: None,
                detail: Some(format!("http: session {id} evicted at the session cap after being idle")),
            });
        }
        Some(id)
    }

    /// Removes every session, returning their ids (shutdown).
    pub fn take_all(&self) -> Vec<String> {
        lock(&self.sessions).drain().map(|(id, _)| id).collect()
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.committed {
            self.registry.reserved.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_counts_reservations_and_frees_on_drop() {
        let registry = Registry::new(2, Recorder::discard());
        let a = registry.reserve().unwrap();
        let _b = registry.reserve().unwrap();
        assert!(registry.reserve().is_none());
        drop(a);
        let c = registry.reserve().unwrap();
        registry.commit(c, "s1".into());
        assert_eq!(registry.len(), 1);
        assert!(registry.reserve().is_none(), "one session and one reservation fill a cap of 2");
    }

    #[test]
    fn a_lost_session_leaves_the_registry_at_once_and_only_once() {
        let registry = Registry::new(4, Recorder::discard());
        let session = registry.commit(registry.reserve().unwrap(), "s1".into());
        let other = registry.commit(registry.reserve().unwrap(), "s2".into());
        let handle = SessionHandle(session);
        handle.lose(LossActivation::AfterResponse).unwrap();
        assert!(registry.get("s1").is_none());
        assert!(registry.get("s2").is_some() && !other.is_lost());
        assert_eq!(handle.lose(LossActivation::DuringRequest), Err(LossError::AlreadyLost));
    }

    #[tokio::test(start_paused = true)]
    async fn only_sessions_idle_long_enough_with_nothing_in_flight_are_reclaimed() {
        let registry = Registry::new(4, Recorder::discard());
        let idle = registry.commit(registry.reserve().unwrap(), "idle".into());
        let busy = registry.commit(registry.reserve().unwrap(), "busy".into());
        let _in_flight = busy.begin_request();
        drop(idle.begin_request());
        tokio::time::advance(SESSION_IDLE - Duration::from_secs(1)).await;
        assert!(registry.take_idle(SESSION_IDLE).is_empty());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(registry.take_idle(SESSION_IDLE), vec!["idle".to_string()]);
        assert!(registry.get("busy").is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_the_least_recently_used_idle_session_makes_room() {
        let registry = Registry::new(3, Recorder::discard());
        let older = registry.commit(registry.reserve().unwrap(), "older".into());
        tokio::time::advance(Duration::from_secs(1)).await;
        let newer = registry.commit(registry.reserve().unwrap(), "newer".into());
        let busy = registry.commit(registry.reserve().unwrap(), "busy".into());
        let _in_flight = busy.begin_request();
        assert!(registry.reserve().is_none());
        assert_eq!(registry.evict_lru(EVICTABLE_AFTER), None, "no session has been idle long enough");
        tokio::time::advance(EVICTABLE_AFTER).await;
        assert_eq!(registry.evict_lru(EVICTABLE_AFTER).as_deref(), Some("older"));
        assert!(registry.reserve().is_some(), "the evicted session's place is free");
        assert!(registry.get("newer").is_some() && registry.get("busy").is_some());
        drop((older, newer));
    }
}
