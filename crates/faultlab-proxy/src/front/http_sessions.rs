//! What the HTTP front keeps about its upstream's sessions, for the faults that act on a response stream or on a
//! session rather than on one reply.
//!
//! **Resumable streams.** A POST whose rule is a stream fault (`stream_cut`, `stream_replay`, ...; see
//! [`faultlab_engine::catalogue::STREAM_FAULTS`]) has its answer kept in a `faultlab_http::resume` log (a JSON answer
//! first becomes a one-event SSE stream, when the client accepts one), so the proxy cuts and replays it even when
//! the upstream cannot resume: the client reads the log, its events get the proxy's ids (`<stream>-<index>`), and
//! a `GET` with one of those ids as `Last-Event-ID` is answered here from the log of that session. Any other `GET`
//! (no `Last-Event-ID`, or one in the upstream's own form) goes to the upstream. Bounds, as `faultlab serve`'s:
//! per session those of [`faultlab_http::resume`] (32 finished streams, 4 MiB), 64 MiB for all sessions, and at
//! most [`MAX_SESSIONS`] sessions with logs (the one least recently used forgotten first: its ids then get 404).
//!
//! **Session lifecycle.** `session_lifecycle` and `session_expired_in_flight` rewrite how the upstream's sessions
//! behave: once the faulted request's answer has begun, the proxy answers for the session ids the fault made
//! "unknown" itself (400 or 404), refuses the `GET` stream, or the next `initialize` requests, without asking the
//! upstream (whose own session stays until it ends it: the proxy does not end it). Each list is a ring of
//! [`MAX_REMEMBERED`] ids; a `restart` forgets every session id the proxy has seen answered, at most as many.

use faultlab_engine::catalogue::LifecycleVariant;
use faultlab_engine::catalogue::session_lifecycle::REFUSED_INITIALIZES;
use faultlab_http::body::Budget;
use faultlab_http::resume::{MAX_TOTAL_BYTES, Streams};
use faultlab_wire::sync::lock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Sessions whose streams the proxy keeps logs of (`faultlab serve`'s session cap).
pub const MAX_SESSIONS: usize = 128;
/// Session ids each lifecycle list remembers (`faultlab serve`'s ring of ids answered 400).
pub const MAX_REMEMBERED: usize = 1024;

/// The logs of the streams the proxy made resumable, by session (`None`: requests without a session).
pub struct Resumable {
    budget: Budget,
    numbers: Arc<AtomicU64>,
    sessions: Mutex<VecDeque<(Option<String>, Arc<Streams>)>>,
}

impl Default for Resumable {
    fn default() -> Self {
        Self { budget: Budget::new(MAX_TOTAL_BYTES), numbers: Arc::default(), sessions: Mutex::default() }
    }
}

impl Resumable {
    /// The session's streams, made if it has none (forgetting the least recently used session past the cap).
    pub fn streams(&self, session: Option<&str>) -> Arc<Streams> {
        let mut sessions = lock(&self.sessions);
        if let Some(at) = sessions.iter().position(|(id, _)| id.as_deref() == session) {
            let entry = sessions.remove(at).expect("the position is in range");
            let streams = entry.1.clone();
            sessions.push_back(entry);
            return streams;
        }
        if sessions.len() == MAX_SESSIONS {
            sessions.pop_front();
        }
        let streams = Arc::new(Streams::new(self.budget.clone(), self.numbers.clone()));
        sessions.push_back((session.map(str::to_owned), streams.clone()));
        streams
    }

    /// Whether a `Last-Event-ID` is one of the proxy's ids (the proxy answers it, a 404 if its stream is gone),
    /// rather than the upstream's.
    pub fn issued(&self, last_event_id: &[u8]) -> bool {
        faultlab_http::resume::issued(&self.numbers, last_event_id)
    }

    /// Bytes of events held for all sessions now.
    pub fn held_bytes(&self) -> usize {
        self.budget.held()
    }
}

/// How the session-lifecycle faults changed the upstream's sessions, as the front answers for them.
#[derive(Default)]
pub struct Lifecycle {
    /// Ids answered with this status (400 or 404) instead of being forwarded.
    gone: Mutex<VecDeque<(String, u16)>>,
    /// Ids whose `GET` stream is answered 404.
    get_refused: Mutex<VecDeque<String>>,
    refused_initializes: AtomicUsize,
    /// Session ids the upstream gave out, for a restart.
    seen: Mutex<VecDeque<String>>,
}

fn remember<T>(ring: &Mutex<VecDeque<T>>, item: T) {
    let mut ring = lock(ring);
    if ring.len() == MAX_REMEMBERED {
        ring.pop_front();
    }
    ring.push_back(item);
}

impl Lifecycle {
    /// The upstream gave out `id`.
    pub fn seen(&self, id: &str) {
        if !lock(&self.seen).iter().any(|known| known == id) {
            remember(&self.seen, id.to_owned());
        }
    }

    /// The status a request with session `id` gets from the proxy instead of the upstream, if the faults made it
    /// unknown.
    pub fn gone(&self, id: &str) -> Option<u16> {
        lock(&self.gone).iter().rev().find(|(known, _)| known == id).map(|(_, status)| *status)
    }

    pub fn refuses_get(&self, id: &str) -> bool {
        lock(&self.get_refused).iter().any(|known| known == id)
    }

    /// Whether this `initialize` is refused (counting it).
    pub fn refuses_initialize(&self) -> bool {
        self.refused_initializes.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }

    /// `session_lifecycle` `variant` fired on a request of session `id`.
    pub fn apply(&self, variant: LifecycleVariant, id: &str) {
        match variant {
            LifecycleVariant::Unknown400 => remember(&self.gone, (id.to_owned(), 400)),
            LifecycleVariant::Get404 => remember(&self.get_refused, id.to_owned()),
            LifecycleVariant::Restart => {
                let mut every: Vec<String> = lock(&self.seen).drain(..).collect();
                if !every.iter().any(|known| known == id) {
                    every.push(id.to_owned());
                }
                for known in every {
                    remember(&self.gone, (known, 404));
                }
            }
            LifecycleVariant::Reinit404 => {
                remember(&self.gone, (id.to_owned(), 404));
                self.refused_initializes.store(REFUSED_INITIALIZES, Ordering::SeqCst);
            }
        }
    }

    /// `session_expired_in_flight` fired on a request of session `id` (its reply becomes a 404 in the engine).
    pub fn expire(&self, id: &str) {
        remember(&self.gone, (id.to_owned(), 404));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_lists_answer_as_the_variants_say_and_stay_bounded() {
        let lifecycle = Lifecycle::default();
        lifecycle.seen("a");
        lifecycle.seen("b");
        lifecycle.apply(LifecycleVariant::Unknown400, "a");
        assert_eq!((lifecycle.gone("a"), lifecycle.gone("b")), (Some(400), None));
        lifecycle.apply(LifecycleVariant::Restart, "c");
        assert_eq!([lifecycle.gone("a"), lifecycle.gone("b"), lifecycle.gone("c")], [Some(404); 3]);
        assert!(!lifecycle.refuses_initialize());
        lifecycle.apply(LifecycleVariant::Reinit404, "d");
        assert_eq!((0..5).filter(|_| lifecycle.refuses_initialize()).count(), REFUSED_INITIALIZES);
        for i in 0..MAX_REMEMBERED + 10 {
            lifecycle.expire(&i.to_string());
        }
        assert_eq!(lock(&lifecycle.gone).len(), MAX_REMEMBERED);
        assert_eq!(lifecycle.gone("a"), None, "the oldest id left the ring");
    }

    #[test]
    fn at_most_the_cap_of_sessions_keep_logs_least_recently_used_forgotten() {
        let resumable = Resumable::default();
        let first = resumable.streams(Some("first"));
        for i in 0..MAX_SESSIONS {
            resumable.streams(Some(&i.to_string()));
        }
        assert_eq!(lock(&resumable.sessions).len(), MAX_SESSIONS);
        assert!(!Arc::ptr_eq(&first, &resumable.streams(Some("first"))), "forgotten, then made anew");
        assert!(!resumable.issued(b"0-1"), "no stream numbered yet");
        assert!(!resumable.issued(b"abc"));
    }
}
