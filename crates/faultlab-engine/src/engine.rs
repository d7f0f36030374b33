//! The fault engine: which reply gets which fault.
//!
//! One engine serves one connection scope (a stdio connection, an HTTP session, or one stateless HTTP request).
//! The wire layer shows it every frame: [`Engine::inbound`] for client-to-server frames and
//! [`Engine::outbound`] for server-to-client frames; the engine answers with the [`WireAction`]s to perform.
//! A fault is armed on a request id (by a tool handler, for its own response) and fires once, on the reply with
//! that id. A std `Mutex` guards the state: critical sections are short and never held across an `.await`.
//!
//! The engine also keeps a small history of earlier tool replies, for the faults that resend one (`stale`,
//! `replayed`): see [`History`]; and the output schemas tools listed, for the faults that must keep a result valid
//! against them (`wrong_value`, `contradictory`): see [`OutputSchemas`].

use crate::catalogue::{Applied, Earlier, FaultKind, OutOfOrder, OutputSchema, Reply, WireAction, late_response};
use crate::recorder::{Event, Recorder};
use bytes::Bytes;
use faultlab_wire::frame::IdMap;
use faultlab_wire::{Frame, Kind, MessageId};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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

/// Most tools whose last reply one scope remembers for `stale`; past it the tool answered least recently is
/// forgotten.
const MAX_REMEMBERED_TOOLS: usize = 32;

/// Largest reply remembered, in bytes (1 MiB). Larger replies (an `oversized` payload, a big file) are not kept,
/// so a scope never pins more than about 33 MiB (32 tools plus the last reply) of history.
const MAX_REMEMBERED_REPLY_BYTES: usize = 1024 * 1024;

/// Most tools whose output schema one scope remembers; past it the tool listed least recently is forgotten.
const MAX_REMEMBERED_SCHEMAS: usize = 256;

/// Largest output schema kept, in bytes of compact JSON (256 KiB). A larger one is remembered only as
/// [`OutputSchema::TooLarge`], so a scope keeps at most 64 MiB of schema JSON (256 tools).
const MAX_OUTPUT_SCHEMA_BYTES: usize = 256 * 1024;

#[derive(Default)]
struct State {
    armed: IdMap<FaultKind>,
    requests: IdMap<Frame>,
    /// The name a fault armed with [`Engine::arm_as`] is recorded under, when it is not the fault's own.
    named: IdMap<&'static str>,
    /// Faults armed on every later matching request (see [`Engine::arm_standing`]), at most
    /// [`MAX_STANDING_FAULTS`].
    standing: Vec<Standing>,
}

/// Most standing faults one connection scope holds.
pub const MAX_STANDING_FAULTS: usize = 16;

/// A fault armed on every later request of `method` (and, with `tool`, only calls of that tool) in one scope,
/// until replaced or the scope ends: how a server tool changes what the client is shown from then on (a tool list
/// that drifted, pages that never end) while the fault itself stays the catalogue's one definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub method: String,
    pub tool: Option<String>,
    pub fault: FaultKind,
}

impl Standing {
    fn matches(&self, method: &str, tool: Option<&str>) -> bool {
        self.method == method && (self.tool.is_none() || self.tool.as_deref() == tool)
    }
}

/// What an engine learns from the replies it sees, for the faults that build on earlier replies.
#[derive(Default)]
struct Memory {
    history: History,
    schemas: OutputSchemas,
}

/// What the engines serving one connection between them share, when there are several (the proxy's HTTP front
/// makes one per request, so that a fault armed on one request cannot fire on another client's equal id): the
/// reply an `out_of_order` fault holds, the replies remembered for `stale` and `replayed`, and the output schemas
/// learned from `tools/list`. Without it a `stale` fault over HTTP would never find an earlier reply, and
/// `wrong_value` would never know the schema the `tools/list` of another request declared.
#[derive(Clone, Default)]
pub struct Shared {
    held: HeldSlot,
    memory: Arc<Mutex<Memory>>,
}

/// The `outputSchema` of each tool, as the last `tools/list` reply that listed the tool gave it. Bounded by
/// [`MAX_REMEMBERED_SCHEMAS`] and [`MAX_OUTPUT_SCHEMA_BYTES`].
#[derive(Default)]
struct OutputSchemas {
    /// At most one entry per tool, the tool listed least recently first.
    by_tool: VecDeque<(String, OutputSchema)>,
}

impl OutputSchemas {
    /// Learns from the reply to a `tools/list` request. A page of a paginated list only speaks for its own tools,
    /// so tools it does not name are kept; a tool it lists without a schema has none any more.
    fn learn(&mut self, reply: &Value) {
        let Some(tools) = reply.pointer("/result/tools").and_then(Value::as_array) else {
            return;
        };
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
            self.by_tool.retain(|(known, _)| known != name);
            let schema = match tool.get("outputSchema") {
                Some(schema @ Value::Object(_)) => {
                    let size = serde_json::to_vec(schema).map_or(usize::MAX, |json| json.len());
                    if size > MAX_OUTPUT_SCHEMA_BYTES {
                        OutputSchema::TooLarge
                    } else {
                        OutputSchema::Listed(Arc::new(schema.clone()))
                    }
                }
                // Absent, or not an object (which MCP does not allow): nothing to keep a result valid against.
                _ => continue,
            };
            if self.by_tool.len() >= MAX_REMEMBERED_SCHEMAS {
                self.by_tool.pop_front();
            }
            self.by_tool.push_back((name.to_owned(), schema));
        }
    }

    fn of(&self, tool: &str) -> Option<OutputSchema> {
        self.by_tool.iter().find(|(name, _)| name == tool).map(|(_, schema)| schema.clone())
    }
}

/// Where a reply held by `out_of_order` waits for the next reply to release it (part of [`Shared`]).
type HeldSlot = std::sync::Arc<Mutex<Option<crate::catalogue::out_of_order::Release>>>;

/// The last replies to `tools/call` requests that no fault fired on: per tool (for `stale`) and overall (for
/// `replayed`). Bounded by [`MAX_REMEMBERED_TOOLS`] and [`MAX_REMEMBERED_REPLY_BYTES`].
#[derive(Default)]
struct History {
    /// At most one entry per tool, the tool answered least recently first.
    by_tool: VecDeque<(String, Bytes)>,
    last: Option<Bytes>,
}

impl History {
    fn remember(&mut self, tool: &str, reply: &Bytes) {
        if reply.len() > MAX_REMEMBERED_REPLY_BYTES {
            return;
        }
        // A copy, not a slice: a line read from a pipe may share (and would pin) the reader's whole buffer.
        let reply = Bytes::copy_from_slice(reply);
        self.by_tool.retain(|(name, _)| name != tool);
        if self.by_tool.len() >= MAX_REMEMBERED_TOOLS {
            self.by_tool.pop_front();
        }
        self.by_tool.push_back((tool.to_owned(), reply.clone()));
        self.last = Some(reply);
    }

    fn earlier(&self, tool: Option<&str>) -> Earlier {
        let same_tool =
            tool.and_then(|tool| self.by_tool.iter().find(|(name, _)| name == tool)).map(|(_, reply)| reply.clone());
        Earlier { same_tool, any_tool: self.last.clone(), ..Earlier::default() }
    }
}

pub struct Engine {
    state: Mutex<State>,
    recorder: Recorder,
    shared: Shared,
    /// Server-to-client requests (elicitation, sampling, roots) the connection's tools are waiting on.
    asks: Arc<AtomicUsize>,
    /// What `execution.taskSupport` each tool's `tools/list` entry says, when the engine fronts `faultlab serve`
    /// ([`Engine::listing_task_support`]); `None` on a proxy, which passes listings as they are.
    task_support: Option<TaskSupportOf>,
}

/// A tool's `execution.taskSupport` (`required`, `optional`, `forbidden`) by its name; `None`: none is listed.
pub type TaskSupportOf = fn(&str) -> Option<&'static str>;

/// Most server-to-client requests one connection scope (a stdio connection, an HTTP session) waits on at once:
/// a client that never answers holds a slot until the call is cancelled or the session ends, and no more.
pub const MAX_PENDING_ASKS: usize = 8;

/// One pending server-to-client request's place in its connection's budget; dropping it (the answer came, the
/// call was cancelled, the session ended and dropped the handler) frees the place.
#[derive(Debug)]
pub struct AskSlot(Arc<AtomicUsize>);

impl Drop for AskSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Engine {
    pub fn new(recorder: Recorder) -> Self {
        Self::sharing(recorder, Shared::default())
    }

    /// An engine that shares its `out_of_order` hold and what it learns with the other engines of `shared`.
    pub fn sharing(recorder: Recorder, shared: Shared) -> Self {
        Self { state: Mutex::default(), recorder, shared, asks: Arc::default(), task_support: None }
    }

    /// An engine of `faultlab serve`'s that writes each tool's `execution.taskSupport` (2025-11-25) into the
    /// `tools/list` replies it sees, as `of` says: rmcp 3.11's `Tool` has no `execution` member to carry it.
    pub fn listing_task_support(mut self, of: TaskSupportOf) -> Self {
        self.task_support = Some(of);
        self
    }

    /// The request `id` as the client sent it, while it is being answered (a tool reads what rmcp does not
    /// parse, such as a 2025-11-25 call's `params.task`).
    pub fn request(&self, id: &MessageId) -> Option<Frame> {
        self.state().requests.get(id).cloned()
    }

    /// `frame` with `execution.taskSupport` written into the tools it lists, when it answers a `tools/list` and
    /// this engine lists task support; `None` otherwise (the frame goes as it is).
    fn with_task_support(&self, frame: &Frame) -> Option<Frame> {
        let of = self.task_support?;
        let id = frame.id().filter(|_| frame.is_reply())?;
        if self.state().requests.get(id).and_then(Frame::method) != Some("tools/list") {
            return None;
        }
        let mut value = frame.value()?.clone();
        let tools = value.pointer_mut("/result/tools")?.as_array_mut()?;
        for tool in tools.iter_mut() {
            let support = tool.get("name").and_then(serde_json::Value::as_str).and_then(of);
            if let (Some(support), Some(tool)) = (support, tool.as_object_mut()) {
                tool.insert("execution".into(), serde_json::json!({"taskSupport": support}));
            }
        }
        Some(Frame::parse(Bytes::from(serde_json::to_vec(&value).ok()?)))
    }

    /// A place for one more pending server-to-client request, or `None` when [`MAX_PENDING_ASKS`] are pending.
    pub fn ask_slot(&self) -> Option<AskSlot> {
        self.asks
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < MAX_PENDING_ASKS).then_some(n + 1))
            .ok()
            .map(|_| AskSlot(self.asks.clone()))
    }

    /// How many server-to-client requests are pending now.
    pub fn pending_asks(&self) -> usize {
        self.asks.load(Ordering::SeqCst)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Option<crate::catalogue::out_of_order::Release>> {
        faultlab_wire::sync::lock(&self.shared.held)
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        // Each update replaces or pushes one entry; a panic elsewhere leaves it usable.
        faultlab_wire::sync::lock(&self.shared.memory)
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the maps half-updated (each update is one insert or remove).
        faultlab_wire::sync::lock(&self.state)
    }

    /// Arms `fault` on the reply to request `id`; it fires once.
    pub fn arm(&self, id: MessageId, fault: FaultKind) -> Result<(), ArmError> {
        let name = fault.name();
        self.arm_named(id, fault, name)
    }

    /// As [`Engine::arm`], recorded (armed and activated) as `name`: a server fault that acts through a catalogue
    /// fault (`session_loss` `during_request` cuts its response as `disconnect` does) is recorded as what it is.
    pub fn arm_as(&self, id: MessageId, fault: FaultKind, name: &'static str) -> Result<(), ArmError> {
        self.arm_named(id, fault, name)
    }

    fn arm_named(&self, id: MessageId, fault: FaultKind, name: &'static str) -> Result<(), ArmError> {
        fault.validate().map_err(ArmError::Invalid)?;
        {
            let mut state = self.state();
            if state.armed.contains_key(&id) {
                return Err(ArmError::AlreadyArmed(id));
            }
            if state.armed.len() >= MAX_PENDING_FAULTS {
                return Err(ArmError::TooMany { limit: MAX_PENDING_FAULTS });
            }
            if name != fault.name() {
                state.named.insert(id.clone(), name);
            }
            state.armed.insert(id.clone(), fault);
        }
        self.recorder.record(Event::FaultArmed { fault: name.into(), request_id: id.to_value() });
        Ok(())
    }

    /// Arms `standing.fault` on every later request `standing` matches, replacing a standing fault on the same
    /// method and tool. Each request it arms on is recorded as armed, and fires (or is skipped) as any armed fault.
    pub fn arm_standing(&self, standing: Standing) -> Result<(), ArmError> {
        standing.fault.validate().map_err(ArmError::Invalid)?;
        let mut state = self.state();
        state
            .standing
            .retain(|s| (s.method.as_str(), s.tool.as_deref()) != (&standing.method, standing.tool.as_deref()));
        if state.standing.len() >= MAX_STANDING_FAULTS {
            return Err(ArmError::TooMany { limit: MAX_STANDING_FAULTS });
        }
        state.standing.push(standing);
        Ok(())
    }

    /// Ends the standing faults on `method` (all tools); true if there were any.
    pub fn disarm_standing(&self, method: &str) -> bool {
        let mut state = self.state();
        let before = state.standing.len();
        state.standing.retain(|s| s.method != method);
        state.standing.len() != before
    }

    /// The standing fault a request of `method` (calling `tool`) would get now, if any.
    pub fn standing_for(&self, method: &str, tool: Option<&str>) -> Option<FaultKind> {
        self.state().standing.iter().find(|s| s.matches(method, tool)).map(|s| s.fault.clone())
    }

    /// Learns the output schemas of a `tools/list` result the server itself produced, as from a `tools/list`
    /// reply: a server tool that arms a schema fault on its own reply needs its schema known even when the client
    /// never listed.
    pub fn learn_tools(&self, result: &Value) {
        self.memory().schemas.learn(&serde_json::json!({"result": result}));
    }

    /// Removes a fault that has not fired (a tool that gave up, a connection that closed). True if one was armed.
    pub fn disarm(&self, id: &MessageId) -> bool {
        let mut state = self.state();
        state.named.remove(id);
        state.armed.remove(id).is_some()
    }

    /// Whether a fault is armed on the reply to request `id`.
    pub fn is_armed(&self, id: &MessageId) -> bool {
        self.state().armed.contains_key(id)
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
                let method = frame.method().unwrap_or_default();
                let standing = state.standing.iter().find(|s| s.matches(method, frame.tool_name()));
                let fault = standing.filter(|_| !state.armed.contains_key(id)).map(|s| s.fault.clone());
                if let Some(fault) = fault {
                    let name = fault.name();
                    state.armed.insert(id.clone(), fault);
                    drop(state);
                    self.recorder.record(Event::FaultArmed { fault: name.into(), request_id: id.to_value() });
                }
                None
            }
            Kind::Notification { method } if method == "notifications/cancelled" => {
                let id = MessageId::from_value(frame.value()?.pointer("/params/requestId")?)?;
                if !matches!(state.armed.get(&id), Some(FaultKind::LateResponse(_))) {
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

    /// As [`Engine::outbound`], also saying which fault fired, if any. A tool reply no fault fires on is
    /// remembered for `stale` and `replayed`; a `tools/list` reply teaches the tools' output schemas (whether or
    /// not a fault fires on it: the schema is what the server declares, whatever the client was shown). A fault
    /// that could not apply (`fault_skipped`) still counts as fired: its rule was spent on this reply.
    pub fn outbound_fired(&self, frame: &Frame) -> (Option<FaultKind>, Vec<WireAction>) {
        let listed = self.with_task_support(frame);
        let frame = listed.as_ref().unwrap_or(frame);
        let fired = match (frame.is_reply(), frame.id()) {
            (true, Some(id)) => {
                let (request, armed) = {
                    let mut state = self.state();
                    let named = state.named.remove(id);
                    (state.requests.remove(id), state.armed.remove(id).map(|fault| (fault, named)))
                };
                let mut memory = self.memory();
                if let (Some("tools/list"), Some(reply)) = (request.as_ref().and_then(Frame::method), frame.value()) {
                    memory.schemas.learn(reply);
                }
                let tool = request.as_ref().and_then(Frame::tool_name);
                match armed {
                    Some((fault, named)) => {
                        let mut earlier = memory.history.earlier(tool);
                        earlier.output_schema = tool.and_then(|tool| memory.schemas.of(tool));
                        Some((id.clone(), fault, named, request, earlier))
                    }
                    None => {
                        if let Some(tool) = tool {
                            memory.history.remember(tool, frame.bytes());
                        }
                        None
                    }
                }
            }
            _ => None,
        };
        // A reply held by `out_of_order` goes out once this one has been written: it has been overtaken.
        let overtaken = if frame.is_reply() { self.held().take() } else { None };
        let Some((id, fault, named, request, earlier)) = fired else {
            let mut actions = vec![WireAction::Send(frame.bytes().clone())];
            actions.extend(overtaken.map(WireAction::Release));
            return (None, actions);
        };
        let Applied { mut actions, skipped } = match fault {
            FaultKind::OutOfOrder(OutOfOrder { max_hold_ms }) => {
                let release = crate::catalogue::out_of_order::Release::default();
                *self.held() = Some(release.clone());
                let reply = Reply { frame, request: request.as_ref() };
                Applied { actions: crate::catalogue::out_of_order::hold(reply, max_hold_ms, &release), skipped: None }
            }
            _ => fault.apply_checked(Reply { frame, request: request.as_ref() }, &earlier),
        };
        let (name, request_id) = (named.unwrap_or(fault.name()).to_owned(), id.to_value());
        match skipped {
            Some(reason) => self.recorder.record(Event::FaultSkipped { fault: name, request_id, reason }),
            // The late-response fault was already reported when the cancel arrived; swallowing the framework's
            // reply is its second half, not a second activation.
            None if matches!(fault, FaultKind::LateResponse(_)) => {}
            None => self.recorder.record(Event::FaultActivated { fault: name, request_id }),
        }
        actions.extend(overtaken.map(WireAction::Release));
        (Some(fault), actions)
    }

    /// Forgets everything armed and remembered (the connection or session is closing).
    pub fn clear(&self) {
        let mut state = self.state();
        state.armed.clear();
        state.requests.clear();
        state.named.clear();
        state.standing.clear();
        drop(state);
        *self.memory() = Memory::default();
        if let Some(held) = self.held().take() {
            held.fire();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{
        self,
        tests::{RESULT, frame},
    };

    #[test]
    fn pending_asks_are_bounded_and_a_dropped_slot_frees_its_place() {
        let engine = Engine::new(Recorder::discard());
        let mut slots: Vec<AskSlot> = (0..MAX_PENDING_ASKS).map(|_| engine.ask_slot().unwrap()).collect();
        assert!(engine.ask_slot().is_none(), "one past the bound");
        drop(slots.pop());
        assert_eq!(engine.pending_asks(), MAX_PENDING_ASKS - 1);
        assert!(engine.ask_slot().is_some());
    }

    #[test]
    fn a_fault_fires_once_and_only_on_its_own_reply() {
        let engine = Engine::new(Recorder::memory());
        engine.arm(7.into(), FaultKind::Duplicate(catalogue::Duplicate {})).unwrap();
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
            engine.arm(i.into(), FaultKind::Duplicate(catalogue::Duplicate {})).unwrap();
        }
        let err = engine.arm(1000.into(), FaultKind::Duplicate(catalogue::Duplicate {})).unwrap_err();
        assert_eq!(err, ArmError::TooMany { limit: 128 });
        assert!(err.to_string().contains("at most 128"));
        assert!(engine.disarm(&0.into()));
        engine.arm(1000.into(), FaultKind::Duplicate(catalogue::Duplicate {})).unwrap();
    }

    #[test]
    fn late_response_answers_the_cancel_and_swallows_the_framework_reply() {
        let engine = Engine::new(Recorder::memory());
        engine.arm(7.into(), FaultKind::LateResponse(catalogue::LateResponse {})).unwrap();
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
    fn a_standing_fault_arms_every_later_matching_request_until_replaced() {
        let engine = Engine::new(Recorder::memory());
        let unknown = FaultKind::UnknownTool(catalogue::UnknownTool {});
        let standing = Standing { method: "tools/call".into(), tool: Some("gone".into()), fault: unknown.clone() };
        engine.arm_standing(standing.clone()).unwrap();
        assert_eq!(engine.standing_for("tools/call", Some("gone")), Some(unknown));
        for id in [3, 4] {
            call(&engine, id, "gone");
            let error = crate::catalogue::tests::sent(&engine.outbound(&reply(id, "ran")))[0].value().unwrap().clone();
            assert_eq!(error["error"]["code"], -32602, "request {id}");
        }
        call(&engine, 5, "kept");
        assert_eq!(sent_texts(&engine.outbound(&reply(5, "ran"))), vec![(5.into(), "ran".into())]);
        let duplicate = FaultKind::Duplicate(catalogue::Duplicate {});
        engine.arm_standing(Standing { fault: duplicate, ..standing }).unwrap();
        call(&engine, 6, "gone");
        assert_eq!(engine.outbound(&reply(6, "ran")).len(), 2, "the later standing fault replaced the first");
        assert!(engine.disarm_standing("tools/call"));
        call(&engine, 7, "gone");
        assert_eq!(engine.outbound(&reply(7, "ran")).len(), 1);
        let armed = engine.recorder().records().iter().filter(|r| matches!(r.event, Event::FaultArmed { .. })).count();
        assert_eq!(armed, 3, "each request it armed on is recorded");
    }

    #[test]
    fn standing_faults_are_bounded() {
        let engine = Engine::new(Recorder::discard());
        let standing = |i: usize| Standing {
            method: "tools/call".into(),
            tool: Some(format!("t{i}")),
            fault: FaultKind::UnknownTool(catalogue::UnknownTool {}),
        };
        for i in 0..MAX_STANDING_FAULTS {
            engine.arm_standing(standing(i)).unwrap();
        }
        assert_eq!(engine.arm_standing(standing(99)), Err(ArmError::TooMany { limit: MAX_STANDING_FAULTS }));
        engine.arm_standing(standing(0)).unwrap();
    }

    fn call(engine: &Engine, id: i64, tool: &str) {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}"}}}}"#);
        assert!(engine.inbound(&frame(&request)).is_none());
    }

    fn reply(id: i64, text: &str) -> Frame {
        frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#))
    }

    fn sent_texts(actions: &[WireAction]) -> Vec<(serde_json::Value, serde_json::Value)> {
        crate::catalogue::tests::sent(actions)
            .iter()
            .map(|f| (f.value().unwrap()["id"].clone(), f.value().unwrap()["result"]["content"][0]["text"].clone()))
            .collect()
    }

    #[test]
    fn stale_serves_the_last_unfaulted_reply_of_the_same_tool() {
        let engine = Engine::new(Recorder::discard());
        call(&engine, 1, "read");
        engine.outbound(&reply(1, "v1"));
        call(&engine, 2, "other");
        engine.outbound(&reply(2, "x"));
        for id in [3, 4] {
            call(&engine, id, "read");
            engine.arm(id.into(), FaultKind::Stale(catalogue::Stale {})).unwrap();
            let actions = engine.outbound(&reply(id, &format!("v{id}")));
            assert_eq!(sent_texts(&actions), vec![(id.into(), "v1".into())], "a faulted reply is not remembered");
        }
        call(&engine, 5, "new_tool");
        engine.arm(5.into(), FaultKind::Stale(catalogue::Stale {})).unwrap();
        assert_eq!(sent_texts(&engine.outbound(&reply(5, "fresh"))), vec![(5.into(), "fresh".into())]);
    }

    #[test]
    fn replayed_resends_the_last_tool_reply_with_its_old_id() {
        let engine = Engine::new(Recorder::discard());
        call(&engine, 1, "a");
        engine.arm(1.into(), FaultKind::Replayed(catalogue::Replayed {})).unwrap();
        assert_eq!(engine.outbound(&reply(1, "first")).len(), 1, "nothing earlier to replay");
        call(&engine, 2, "b");
        let real = reply(2, "two");
        engine.outbound(&real);
        call(&engine, 3, "a");
        engine.arm(3.into(), FaultKind::Replayed(catalogue::Replayed {})).unwrap();
        let now = reply(3, "three");
        assert_eq!(
            engine.outbound(&now),
            vec![WireAction::Send(now.bytes().clone()), WireAction::Send(real.bytes().clone())]
        );
    }

    #[test]
    fn history_is_bounded_and_cleared() {
        let engine = Engine::new(Recorder::discard());
        for i in 0..=MAX_REMEMBERED_TOOLS as i64 {
            call(&engine, i, &format!("tool{i}"));
            engine.outbound(&reply(i, "r"));
        }
        let huge = "x".repeat(MAX_REMEMBERED_REPLY_BYTES);
        call(&engine, 100, "tool1");
        engine.outbound(&reply(100, &huge));
        {
            let state = engine.memory();
            assert_eq!(state.history.by_tool.len(), MAX_REMEMBERED_TOOLS);
            assert!(state.history.earlier(Some("tool0")).same_tool.is_none(), "the oldest tool was forgotten");
            let kept = state.history.earlier(Some("tool1")).same_tool.unwrap();
            assert!(kept.len() < 100, "an over-large reply is not remembered");
        }
        engine.clear();
        assert!(engine.memory().history.earlier(Some("tool1")).any_tool.is_none());
    }

    #[test]
    fn out_of_order_holds_a_reply_until_the_next_one_releases_it() {
        let engine = Engine::new(Recorder::discard());
        engine.arm(7.into(), FaultKind::OutOfOrder(catalogue::OutOfOrder { max_hold_ms: 1000 })).unwrap();
        let held = engine.outbound(&frame(RESULT));
        let WireAction::AwaitRelease { release, .. } = &held[0] else { panic!("{held:?}") };
        assert!(matches!(&held[1], WireAction::Send(b) if b.as_ref() == RESULT.as_bytes()));
        let next = frame(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
        let after = engine.outbound(&next);
        assert_eq!(after, vec![WireAction::Send(next.bytes().clone()), WireAction::Release(release.clone())]);
        assert_eq!(engine.outbound(&next).len(), 1, "released once");
    }

    fn list_tools(engine: &Engine, id: i64, tools: serde_json::Value) {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
        assert!(engine.inbound(&frame(&request)).is_none());
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}});
        engine.outbound(&frame(&reply.to_string()));
    }

    fn structured(id: i64, content: &serde_json::Value) -> Frame {
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": content.to_string()}], "structuredContent": content}});
        frame(&reply.to_string())
    }

    #[test]
    fn a_listed_output_schema_keeps_contradictory_valid() {
        let engine = Engine::new(Recorder::memory());
        let schema = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}});
        list_tools(&engine, 1, serde_json::json!([{"name": "count", "inputSchema": {}, "outputSchema": schema}]));
        call(&engine, 2, "count");
        engine.arm(2.into(), FaultKind::Contradictory(catalogue::Contradictory {})).unwrap();
        let actions = engine.outbound(&structured(2, &serde_json::json!({"n": 5})));
        let sent = crate::catalogue::tests::sent(&actions);
        assert_eq!(sent[0].value().unwrap()["result"]["content"][1]["text"], r#"{"n":4}"#, "+1 would pass the maximum");
        // The same call of a tool the list did not name keeps the rule without a schema.
        call(&engine, 3, "other");
        engine.arm(3.into(), FaultKind::Contradictory(catalogue::Contradictory {})).unwrap();
        let actions = engine.outbound(&structured(3, &serde_json::json!({"n": 5})));
        let sent = crate::catalogue::tests::sent(&actions);
        assert_eq!(sent[0].value().unwrap()["result"]["content"][1]["text"], r#"{"n":6}"#);
    }

    #[test]
    fn a_fault_that_cannot_keep_the_result_valid_is_skipped_and_recorded() {
        let engine = Engine::new(Recorder::memory());
        let schema = serde_json::json!({"type": "object", "properties": {"n": {"const": 5}}});
        list_tools(&engine, 1, serde_json::json!([{"name": "fixed", "outputSchema": schema}]));
        call(&engine, 2, "fixed");
        let wrong =
            FaultKind::WrongValue(catalogue::WrongValue { pointer: "/structuredContent/n".into(), value: 6.into() });
        engine.arm(2.into(), wrong).unwrap();
        let reply = structured(2, &serde_json::json!({"n": 5}));
        assert_eq!(engine.outbound(&reply), vec![WireAction::Send(reply.bytes().clone())], "sent unchanged");
        let events: Vec<_> = engine.recorder().records().into_iter().map(|r| r.event).collect();
        let Event::FaultSkipped { fault, request_id, reason } = &events[1] else { panic!("{events:?}") };
        assert_eq!((fault.as_str(), request_id), ("wrong_value", &serde_json::json!(2)));
        assert!(reason.contains("/structuredContent/n") && reason.contains('5'), "{reason}");
        assert_eq!(events.len(), 2, "no fault_activated for a fault that changed nothing");
    }

    #[test]
    fn output_schemas_are_bounded_relearnt_and_cleared() {
        let engine = Engine::new(Recorder::discard());
        let schema = serde_json::json!({"type": "object"});
        let many: Vec<_> = (0..=MAX_REMEMBERED_SCHEMAS)
            .map(|i| serde_json::json!({"name": format!("tool{i}"), "outputSchema": schema}))
            .collect();
        list_tools(&engine, 1, serde_json::Value::Array(many));
        assert_eq!(engine.memory().schemas.by_tool.len(), MAX_REMEMBERED_SCHEMAS);
        let huge = serde_json::json!({"type": "object", "description": "x".repeat(MAX_OUTPUT_SCHEMA_BYTES)});
        list_tools(&engine, 2, serde_json::json!([{"name": "big", "outputSchema": huge}, {"name": "tool5"}]));
        {
            let state = engine.memory();
            assert!(state.schemas.of("tool0").is_none() && state.schemas.of("tool1").is_none(), "oldest forgotten");
            assert_eq!(state.schemas.of("tool2"), Some(OutputSchema::Listed(Arc::new(schema))));
            assert_eq!(state.schemas.of("big"), Some(OutputSchema::TooLarge), "too large, but not forgotten");
            assert!(state.schemas.of("tool5").is_none(), "listed again without a schema");
        }
        // Only replies to `tools/list` teach schemas.
        call(&engine, 3, "x");
        engine.outbound(&frame(r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"y","outputSchema":{}}]}}"#));
        assert!(engine.memory().schemas.of("y").is_none());
        engine.clear();
        assert!(engine.memory().schemas.by_tool.is_empty());
    }

    #[test]
    fn invalid_parameters_are_refused_at_arming() {
        let engine = Engine::new(Recorder::discard());
        let err = engine.arm(1.into(), FaultKind::SplitWrite(catalogue::SplitWrite { parts: 0 })).unwrap_err();
        assert!(matches!(err, ArmError::Invalid(m) if m.contains("parts")));
    }
}
