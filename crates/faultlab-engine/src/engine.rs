//! The fault engine: which reply gets which fault.
//!
//! One engine serves one connection scope (a stdio connection, an HTTP session, or one stateless HTTP request).
//! The wire layer shows it every frame: [`Engine::inbound`] for client-to-server frames and
//! [`Engine::outbound`] for server-to-client frames; the engine answers with the [`WireAction`]s to perform.
//! A fault is armed on a request id (by a tool handler, for its own response) and fires once, on the reply with
//! that id. A std `Mutex` guards the state: critical sections are short and never held across an `.await`.

use crate::catalogue::{FaultKind, Reply, WireAction, late_response};
use crate::recorder::{Event, Recorder};
use faultlab_wire::{Frame, Kind, MessageId};
use std::collections::HashMap;
use std::sync::Mutex;

/// Most faults armed and not yet fired on one connection scope. Past it, arming fails with a clear error rather
/// than letting a client grow server memory without bound.
pub const MAX_PENDING_FAULTS: usize = 128;

/// Most in-flight requests remembered per scope (only to give faults the request a reply answers, such as its
/// progress token). Past it, new requests are simply not remembered.
const MAX_TRACKED_REQUESTS: usize = 4096;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArmError {
    #[error("too many pending faults on this connection (at most {limit}); let earlier calls finish first")]
    TooMany { limit: usize },
    #[error("a fault is already armed for request {0}")]
    AlreadyArmed(MessageId),
    #[error("invalid fault: {0}")]
    Invalid(String),
}

#[derive(Default)]
struct State {
    armed: HashMap<MessageId, FaultKind>,
    requests: HashMap<MessageId, Frame>,
}

pub struct Engine {
    state: Mutex<State>,
    recorder: Recorder,
}

impl Engine {
    pub fn new(recorder: Recorder) -> Self {
        Self { state: Mutex::default(), recorder }
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the maps half-updated (each update is one insert or remove).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Arms `fault` on the reply to request `id`; it fires once.
    pub fn arm(&self, id: MessageId, fault: FaultKind) -> Result<(), ArmError> {
        fault.validate().map_err(ArmError::Invalid)?;
        let name = fault.name();
        {
            let mut state = self.state();
            if state.armed.contains_key(&id) {
                return Err(ArmError::AlreadyArmed(id));
            }
            if state.armed.len() >= MAX_PENDING_FAULTS {
                return Err(ArmError::TooMany { limit: MAX_PENDING_FAULTS });
            }
            state.armed.insert(id.clone(), fault);
        }
        self.recorder.record(Event::FaultArmed { fault: name.into(), request_id: id.to_value() });
        Ok(())
    }

    /// Removes a fault that has not fired (a tool that gave up, a connection that closed). True if one was armed.
    pub fn disarm(&self, id: &MessageId) -> bool {
        self.state().armed.remove(id).is_some()
    }

    /// How many faults are armed and waiting.
    pub fn pending(&self) -> usize {
        self.state().armed.len()
    }

    /// Sees a client-to-server frame. Returns what to write to the client right now, and for which request's
    /// stream: a cancellation of a request armed with `late_response` produces the late result here.
    pub fn inbound(&self, frame: &Frame) -> Option<(MessageId, Vec<WireAction>)> {
        let mut state = self.state();
        match frame.kind() {
            Kind::Request { id, .. } if state.requests.len() < MAX_TRACKED_REQUESTS => {
                state.requests.insert(id.clone(), frame.clone());
                None
            }
            Kind::Notification { method } if method == "notifications/cancelled" => {
                let id = MessageId::from_value(frame.value()?.pointer("/params/requestId")?)?;
                if state.armed.get(&id) != Some(&FaultKind::LateResponse) {
                    return None;
                }
                // Keep the fault armed: it still swallows the framework's own reply if one comes after this.
                drop(state);
                self.recorder
                    .record(Event::FaultActivated { fault: "late_response".into(), request_id: id.to_value() });
                Some((id.clone(), late_response::late_result(&id)))
            }
            _ => None,
        }
    }

    /// What to write for a server-to-client frame: unchanged unless it is the reply to a request with an armed
    /// fault, in which case the fault fires (once) and decides.
    pub fn outbound(&self, frame: &Frame) -> Vec<WireAction> {
        self.outbound_fired(frame).1
    }

    /// As [`Engine::outbound`], also saying which fault fired, if any.
    pub fn outbound_fired(&self, frame: &Frame) -> (Option<FaultKind>, Vec<WireAction>) {
        let fired = match (frame.is_reply(), frame.id()) {
            (true, Some(id)) => {
                let mut state = self.state();
                let request = state.requests.remove(id);
                state.armed.remove(id).map(|fault| (id.clone(), fault, request))
            }
            _ => None,
        };
        let Some((id, fault, request)) = fired else {
            return (None, vec![WireAction::Send(frame.bytes().clone())]);
        };
        // The late-response fault was already reported when the cancel arrived; swallowing the framework's
        // reply is its second half, not a second activation.
        if fault != FaultKind::LateResponse {
            self.recorder.record(Event::FaultActivated { fault: fault.name().into(), request_id: id.to_value() });
        }
        let actions = fault.apply(Reply { frame, request: request.as_ref() });
        (Some(fault), actions)
    }

    /// Forgets everything armed (the connection or session is closing).
    pub fn clear(&self) {
        let mut state = self.state();
        state.armed.clear();
        state.requests.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::tests::{RESULT, frame};

    #[test]
    fn a_fault_fires_once_and_only_on_its_own_reply() {
        let engine = Engine::new(Recorder::memory());
        engine.arm(7.into(), FaultKind::Duplicate).unwrap();
        let other = frame(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
        assert_eq!(engine.outbound(&other), vec![WireAction::Send(other.bytes().clone())]);
        let reply = frame(RESULT);
        assert_eq!(engine.outbound(&reply).len(), 2);
        assert_eq!(engine.outbound(&reply).len(), 1, "a fault fires once");
        let kinds: Vec<_> = engine.recorder().records().into_iter().map(|r| r.event).collect();
        assert_eq!(
            kinds,
            vec![
                Event::FaultArmed { fault: "duplicate".into(), request_id: 7.into() },
                Event::FaultActivated { fault: "duplicate".into(), request_id: 7.into() },
            ]
        );
    }

    #[test]
    fn arming_past_the_cap_fails_with_a_clear_error() {
        let engine = Engine::new(Recorder::discard());
        for i in 0..MAX_PENDING_FAULTS as i64 {
            engine.arm(i.into(), FaultKind::Duplicate).unwrap();
        }
        let err = engine.arm(1000.into(), FaultKind::Duplicate).unwrap_err();
        assert_eq!(err, ArmError::TooMany { limit: 128 });
        assert!(err.to_string().contains("at most 128"));
        assert!(engine.disarm(&0.into()));
        engine.arm(1000.into(), FaultKind::Duplicate).unwrap();
    }

    #[test]
    fn late_response_answers_the_cancel_and_swallows_the_framework_reply() {
        let engine = Engine::new(Recorder::memory());
        engine.arm(7.into(), FaultKind::LateResponse).unwrap();
        let unrelated = frame(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#);
        assert!(engine.inbound(&unrelated).is_none());
        let cancel = frame(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#);
        let (id, actions) = engine.inbound(&cancel).unwrap();
        assert_eq!(id, 7.into());
        let WireAction::Send(late) = &actions[0] else { panic!("{actions:?}") };
        let late = Frame::parse(late.clone());
        assert_eq!(late.id(), Some(&7.into()));
        assert!(engine.outbound(&frame(RESULT)).is_empty(), "the framework's reply is swallowed");
    }

    #[test]
    fn invalid_parameters_are_refused_at_arming() {
        let engine = Engine::new(Recorder::discard());
        let err = engine.arm(1.into(), FaultKind::SplitWrite { parts: 0 }).unwrap_err();
        assert!(matches!(err, ArmError::Invalid(m) if m.contains("parts")));
    }
}
