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
//!
//! **Faults at a resume.** A rule with `match.at: resume` that a request met is armed on the stream a stream fault
//! made of that request's answer ([`AtResume`], by stream number, with the request's id, method and tool); the
//! first `GET` resuming that stream in the same session takes it (a second such rule, the second resume), and
//! the front answers that resume as the fault says instead of from the log. A request whose answer is not kept
//! in a log (no stream fault, or a stream with no ids) arms nothing: its resume rules never fire. At most
//! [`MAX_ARMED`] streams stay armed, the oldest forgotten first.
//!
//! **Where a reply went.** The reply on a stream a stream fault acted on has its trajectory event held
//! ([`HeldReply`]) until a client reads it from the log, and is then written with `delivery`: the POST's own
//! response, or the resume that carried it (its number and `Last-Event-ID`); never read, it is written as
//! `undelivered` when its log is forgotten or the front ends.

use crate::rules::Fired;
use crate::trajectory::TrajectoryWriter;
use faultlab_engine::Event;
use faultlab_engine::catalogue::LifecycleVariant;
use faultlab_engine::catalogue::session_lifecycle::REFUSED_INITIALIZES;
use faultlab_engine::recorder::Delivery;
use faultlab_http::body::Budget;
use faultlab_http::resume::{MAX_TOTAL_BYTES, Streams};
use faultlab_wire::sync::lock;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

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

/// Streams with rules armed at their resume: as many as the logs the proxy keeps at most (128 sessions of 32).
pub const MAX_ARMED: usize = MAX_SESSIONS * faultlab_http::resume::MAX_SESSION_STREAMS;

/// The request whose stream a rule at a resume acts on, as the trajectory names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// The session the stream belongs to (only a resume in it takes the rule).
    pub session: Option<String>,
    pub request_id: Value,
    pub method: Option<String>,
    pub tool: Option<String>,
}

/// The rules with `match.at: resume` armed on the streams they act at, by stream number.
#[derive(Default)]
pub struct AtResume {
    armed: Mutex<BTreeMap<u64, (Opened, VecDeque<Fired>)>>,
}

impl AtResume {
    /// Arms `rules` (in order, one per resume) on stream `stream`, which `opened` opened.
    pub fn arm(&self, stream: u64, opened: Opened, rules: Vec<Fired>) {
        if rules.is_empty() {
            return;
        }
        let mut armed = lock(&self.armed);
        armed.insert(stream, (opened, rules.into()));
        // Stream numbers only grow: the first is the oldest.
        while armed.len() > MAX_ARMED {
            armed.pop_first();
        }
    }

    /// The rule this resume of `stream` in `session` meets, if one is armed there (taking it).
    pub fn take(&self, stream: u64, session: Option<&str>) -> Option<(Opened, Fired)> {
        let mut armed = lock(&self.armed);
        let (opened, rules) = armed.get_mut(&stream)?;
        if opened.session.as_deref() != session {
            return None;
        }
        let fired = rules.pop_front()?;
        let opened = opened.clone();
        if rules.is_empty() {
            armed.remove(&stream);
        }
        Some((opened, fired))
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

/// The trajectory event of the reply on a response stream a stream fault acted on, held until the proxy knows how
/// it reached the client ([`Delivery`]: on the POST's own response, on which resume, or never), then written once
/// with that. Dropped unwritten (its log forgotten, the run ended): written as undelivered.
pub struct HeldReply {
    trajectory: Arc<TrajectoryWriter>,
    state: Mutex<HeldState>,
}

#[derive(Default)]
struct HeldState {
    event: Option<Event>,
    /// The first delivery (a later resume that carries the reply again changes nothing).
    delivery: Option<Delivery>,
    written: bool,
}

impl HeldReply {
    /// The reply's event, as the fault-applying body built it.
    pub fn event(&self, event: Event) {
        let mut state = lock(&self.state);
        state.event = Some(event);
        self.write_if_ready(state);
    }

    /// A client was written the reply.
    pub fn delivered(&self, delivery: Delivery) {
        let mut state = lock(&self.state);
        state.delivery.get_or_insert(delivery);
        self.write_if_ready(state);
    }

    /// No client will read the reply any more: written as undelivered, unless it was written already.
    pub fn settle(&self) {
        self.delivered(Delivery::undelivered());
    }

    fn write_if_ready(&self, mut state: std::sync::MutexGuard<'_, HeldState>) {
        if state.written || state.delivery.is_none() {
            return;
        }
        let Some(mut event) = state.event.take() else { return };
        if let Event::Frame(frame) = &mut event {
            frame.delivery = state.delivery.clone();
        }
        state.written = true;
        drop(state);
        self.trajectory.record(event);
    }
}

impl Drop for HeldReply {
    fn drop(&mut self) {
        self.settle();
    }
}

/// Every [`HeldReply`] still alive, so those no client read are written when the front ends (before its ledger),
/// not lost with the logs that hold them.
#[derive(Default)]
pub struct HeldReplies {
    held: Mutex<Vec<Weak<HeldReply>>>,
}

impl HeldReplies {
    /// A new held reply, written to `trajectory`.
    pub fn hold(&self, trajectory: Arc<TrajectoryWriter>) -> Arc<HeldReply> {
        let reply = Arc::new(HeldReply { trajectory, state: Mutex::default() });
        let mut held = lock(&self.held);
        // Those already dropped go (they wrote themselves): the list stays as long as the replies alive, which the
        // logs' bounds bound.
        held.retain(|weak| weak.strong_count() > 0);
        held.push(Arc::downgrade(&reply));
        reply
    }

    /// Writes every reply still held as undelivered.
    pub fn settle_all(&self) {
        let alive: Vec<Arc<HeldReply>> = lock(&self.held).drain(..).filter_map(|weak| weak.upgrade()).collect();
        for reply in alive {
            reply.settle();
        }
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
    fn a_resume_rule_is_taken_once_by_a_resume_of_its_own_session_and_the_armed_streams_stay_bounded() {
        let at = AtResume::default();
        let opened = |session: &str| Opened {
            session: Some(session.into()),
            request_id: Value::from(2),
            method: Some("tools/call".into()),
            tool: Some("read_file".into()),
        };
        let fired = |rule: &str| Fired {
            rule: rule.into(),
            mode: crate::rules::Mode::After,
            fault: faultlab_engine::catalogue::Timeout {}.into(),
        };
        at.arm(7, opened("a"), vec![fired("first"), fired("second")]);
        assert_eq!(at.take(7, Some("b")), None, "another session's resume of the number takes nothing");
        assert_eq!(at.take(7, None), None);
        assert_eq!(
            at.take(7, Some("a")).map(|(o, f)| (o.tool, f.rule)),
            Some((Some("read_file".into()), "first".into()))
        );
        assert_eq!(at.take(7, Some("a")).map(|(_, f)| f.rule), Some("second".into()));
        assert_eq!(at.take(7, Some("a")), None, "each rule acts once");
        for stream in 0..MAX_ARMED as u64 + 5 {
            at.arm(stream + 100, opened("a"), vec![fired("r")]);
        }
        assert_eq!(lock(&at.armed).len(), MAX_ARMED);
        assert_eq!(at.take(100, Some("a")), None, "the oldest armed stream was forgotten");
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
