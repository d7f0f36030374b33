//! The answering slots of a listener: how many requests are answered at once, in all and per source address
//! (see [`Limits::answering`]), and the 503 a request beyond them gets.

use crate::server::Limits;
use axum::body::Body;
use faultlab_wire::sync::lock;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};

/// Requests admitted and not yet over: in all, and by source address.
#[derive(Default)]
pub(crate) struct Slots {
    answering: Mutex<Answering>,
}

#[derive(Default)]
struct Answering {
    total: usize,
    by_peer: HashMap<IpAddr, usize>,
}

impl Slots {
    /// Admits one request from `peer` if the answering slots allow it; `None` when it must be refused (503).
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr, limits: &Limits) -> Option<Admitted> {
        let mut answering = lock(&self.answering);
        let from_peer = answering.by_peer.get(&peer).copied().unwrap_or(0);
        if answering.total >= limits.answering() || from_peer >= limits.answering_per_peer() {
            return None;
        }
        answering.total += 1;
        answering.by_peer.insert(peer, from_peer + 1);
        Some(Admitted { slots: Arc::downgrade(self), peer })
    }
}

/// A request's answering slot, given back on drop (when its response is over or dropped).
pub(crate) struct Admitted {
    slots: Weak<Slots>,
    peer: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let Some(slots) = self.slots.upgrade() else { return };
        let mut answering = lock(&slots.answering);
        answering.total = answering.total.saturating_sub(1);
        if let Some(n) = answering.by_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                answering.by_peer.remove(&self.peer);
            }
        }
    }
}

/// How long a client refused for lack of slots is asked to wait before trying again, in seconds.
const RETRY_AFTER_SECS: &str = "1";

/// The answer to a request beyond the answering slots: 503 with `Retry-After`, and the connection closed.
pub(crate) fn busy() -> http::Response<Body> {
    let message = "Server busy: every slot for answering requests is taken (or this address's share of them); \
                   retry after Retry-After seconds";
    let mut response = crate::rpc_error(http::StatusCode::SERVICE_UNAVAILABLE, -32000, message, None);
    let headers = response.headers_mut();
    headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static(RETRY_AFTER_SECS));
    headers.insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}

/// The same answer written at once on a connection that cannot be served at all (every open one is being
/// answered, which the reserve makes rare).
pub(crate) const BUSY_AT_ONCE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n\
    Content-Type: application/json\r\nContent-Length: 102\r\n\r\n\
    {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"Server busy: every connection is taken\"}}";

#[cfg(test)]
mod tests {
    use super::BUSY_AT_ONCE;

    #[test]
    fn the_immediate_answer_declares_its_body_length() {
        let text = std::str::from_utf8(BUSY_AT_ONCE).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())), "{text}");
        assert!(serde_json::from_str::<serde_json::Value>(body).is_ok(), "{body}");
    }
}
