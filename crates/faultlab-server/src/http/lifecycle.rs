//! Session lifecycle variants: the ways a real server loses or refuses a legacy (2025-11-25) session, beyond
//! `session_loss`'s plain 404. The `session_lifecycle` tool picks one for its session; the front asks [`Lifecycle`]
//! how to answer what follows.
//!
//! - `unknown_400`: the session is forgotten once this result is delivered, and its id then gets **400** (JSON-RPC
//!   -32600, "Bad Request: No valid session ID provided"), as servers built on older SDKs answer, instead of 404.
//! - `get_404`: the session stays, but its standalone `GET` stream is answered 404 (-32001); POSTs keep working.
//! - `restart`: the server "restarts": every session is forgotten at once once this result is delivered (all
//!   their ids get 404), not only the caller's.
//! - `reinit_404`: the session is forgotten once this result is delivered, and the next
//!   [`REFUSED_INITIALIZES`] `initialize` requests are answered 404 too: a client that re-initialises on every
//!   404 without a bound loops here.
//! - `expire_in_flight`: the session expires while this request is in flight: it is forgotten at once, the reply
//!   waits [`IN_FLIGHT_MS`], and is then answered 404 (-32001) instead of its result.
//!
//! Memory: the ids answered 400 are kept in a ring of [`MAX_ANSWERED_400`] (the oldest then gets 404 again); the
//! sessions still to close in rmcp after a restart are at most the registry's cap.

use faultlab_wire::sync::lock;
use rmcp::schemars;
use serde::Deserialize;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many `initialize` requests `reinit_404` answers 404, and how long `expire_in_flight` holds the request
/// after its session expired (ms): the catalogue's.
pub use faultlab_engine::catalogue::session_expired_in_flight::IN_FLIGHT_MS;
pub use faultlab_engine::catalogue::session_lifecycle::REFUSED_INITIALIZES;
/// How many forgotten ids are remembered for `unknown_400`.
pub const MAX_ANSWERED_400: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Variant {
    /// Forget the session after this result; its id then gets 400 instead of 404.
    #[serde(rename = "unknown_400")]
    #[strum(serialize = "unknown_400")]
    Unknown400,
    /// Keep the session, but answer its GET stream 404.
    #[serde(rename = "get_404")]
    #[strum(serialize = "get_404")]
    Get404,
    /// Forget every session at once after this result (a server restart).
    Restart,
    /// Forget the session after this result and answer the next initializes 404 too.
    #[serde(rename = "reinit_404")]
    #[strum(serialize = "reinit_404")]
    Reinit404,
    /// Forget the session now; this request's reply becomes a 404 after a short wait.
    ExpireInFlight,
}

impl Variant {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The catalogue fault this variant is (`session_lifecycle`, or `session_expired_in_flight`).
    pub fn fault(self) -> faultlab_engine::FaultKind {
        use faultlab_engine::catalogue::{LifecycleVariant, SessionExpiredInFlight, SessionLifecycle};
        let variant = match self {
            Self::Unknown400 => LifecycleVariant::Unknown400,
            Self::Get404 => LifecycleVariant::Get404,
            Self::Restart => LifecycleVariant::Restart,
            Self::Reinit404 => LifecycleVariant::Reinit404,
            Self::ExpireInFlight => return SessionExpiredInFlight {}.into(),
        };
        SessionLifecycle { variant }.into()
    }
}

/// What the front must remember between requests for the variants.
#[derive(Default)]
pub struct Lifecycle {
    answered_400: Mutex<VecDeque<String>>,
    refused_initializes: AtomicUsize,
    closing: Mutex<Vec<String>>,
}

impl Lifecycle {
    /// `id` (forgotten) is to be answered 400 from now on.
    pub fn answer_400(&self, id: &str) {
        let mut ids = lock(&self.answered_400);
        if ids.len() == MAX_ANSWERED_400 {
            ids.pop_front();
        }
        ids.push_back(id.to_owned());
    }

    /// The status for a request with an id the registry does not know: 400 for the ids `unknown_400` forgot,
    /// else 404.
    pub fn unknown_session_status(&self, id: &str) -> http::StatusCode {
        if lock(&self.answered_400).iter().any(|known| known == id) {
            http::StatusCode::BAD_REQUEST
        } else {
            http::StatusCode::NOT_FOUND
        }
    }

    /// The next [`REFUSED_INITIALIZES`] initializes are refused.
    pub fn refuse_initializes(&self) {
        self.refused_initializes.store(REFUSED_INITIALIZES, Ordering::SeqCst);
    }

    /// Whether this `initialize` is refused (counting it).
    pub fn refuses_initialize(&self) -> bool {
        self.refused_initializes.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }

    /// Sessions forgotten by a restart, to close in rmcp when the restarting request ends.
    pub fn close_later(&self, ids: Vec<String>) {
        lock(&self.closing).extend(ids);
    }

    pub fn take_closing(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.closing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgotten_ids_answer_400_within_a_bounded_ring() {
        let lifecycle = Lifecycle::default();
        lifecycle.answer_400("first");
        assert_eq!(lifecycle.unknown_session_status("first"), http::StatusCode::BAD_REQUEST);
        assert_eq!(lifecycle.unknown_session_status("other"), http::StatusCode::NOT_FOUND);
        for i in 0..MAX_ANSWERED_400 {
            lifecycle.answer_400(&i.to_string());
        }
        assert_eq!(lifecycle.unknown_session_status("first"), http::StatusCode::NOT_FOUND, "the oldest left");
        assert_eq!(lock(&lifecycle.answered_400).len(), MAX_ANSWERED_400);
    }

    #[test]
    fn variants_are_named_as_users_write_them() {
        assert_eq!(Variant::Unknown400.as_str(), "unknown_400");
        assert_eq!(serde_json::from_str::<Variant>(r#""reinit_404""#).unwrap(), Variant::Reinit404);
        assert_eq!(serde_json::from_str::<Variant>(r#""expire_in_flight""#).unwrap(), Variant::ExpireInFlight);
    }

    #[test]
    fn exactly_the_counted_initializes_are_refused() {
        let lifecycle = Lifecycle::default();
        assert!(!lifecycle.refuses_initialize());
        lifecycle.refuse_initializes();
        let refused = (0..REFUSED_INITIALIZES + 2).filter(|_| lifecycle.refuses_initialize()).count();
        assert_eq!(refused, REFUSED_INITIALIZES);
    }
}
