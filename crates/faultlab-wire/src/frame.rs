//! One JSON-RPC message as bytes plus its parsed view.

use bytes::Bytes;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The hasher of maps and sets keyed by [`MessageId`]. The relay looks ids up about six times per call; std's
/// SipHash costs about 300 instructions a lookup on a short id, foldhash a fraction of that, and its per-process
/// random seed still keeps a peer from choosing colliding ids in advance.
pub type IdHasher = foldhash::fast::RandomState;
/// A map keyed by request id (see [`IdHasher`]).
pub type IdMap<V> = std::collections::HashMap<MessageId, V, IdHasher>;
/// A set of request ids (see [`IdHasher`]).
pub type IdSet = std::collections::HashSet<MessageId, IdHasher>;

/// The identity of a JSON-RPC request as it appeared on the wire.
///
/// JSON-RPC ids are strings or numbers, and `1` and `"1"` are different ids, so the key is the id's compact JSON
/// text (`1` vs `"1"`). Built from the parsed value, so `1` and `1 ` (with a space) are the same id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);

impl MessageId {
    /// The key of a JSON id value; `None` for values JSON-RPC does not allow as ids (null, objects, arrays, bools).
    pub fn from_value(id: &Value) -> Option<Self> {
        match id {
            Value::String(_) | Value::Number(_) => Some(Self(id.to_string())),
            _ => None,
        }
    }

    /// The id as a JSON value again (for writing it into a message).
    pub fn to_value(&self) -> Value {
        // Most ids are small integers: read without the JSON parser (the trajectory does this for every frame).
        if let Ok(n) = self.0.parse::<u64>() {
            return Value::from(n);
        }
        // The text was produced by `Value::to_string`, so it parses back to the same value.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The compact JSON text of the id, e.g. `7` or `"req-7"`.
    pub fn as_json(&self) -> &str {
        &self.0
    }
}

impl MessageId {
    /// The top-level `id` of a message known only by its start (a line over the size limit, cut short): found
    /// when `id` comes before the cut, as it does in the messages MCP SDKs write (`{"jsonrpc":"2.0","id":7,...`).
    /// Members before it are skipped whole, however nested; `None` when the start is not a JSON object or the id
    /// is not among the bytes given.
    pub fn from_prefix(bytes: &[u8]) -> Option<Self> {
        let mut scan = Scan { bytes, at: 0 };
        scan.space();
        scan.eat(b'{')?;
        loop {
            scan.space();
            let key_start = scan.at;
            scan.string()?;
            let is_id = &bytes[key_start..scan.at] == b"\"id\"";
            scan.space();
            scan.eat(b':')?;
            scan.space();
            let start = scan.at;
            scan.value()?;
            if is_id {
                let value: Value = serde_json::from_slice(&bytes[start..scan.at]).ok()?;
                return Self::from_value(&value);
            }
            scan.space();
            scan.eat(b',')?;
        }
    }
}

/// A cursor over the start of a JSON text, for [`MessageId::from_prefix`]. Every step returns `None` at the end of
/// the bytes.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn space(&mut self) {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (*self.bytes.get(self.at)? == byte).then(|| self.at += 1)
    }

    /// A whole string.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match *self.bytes.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                _ => self.at += 1,
            }
        }
    }

    /// One whole value: a string, a container (nesting tracked, strings inside skipped whole), or a scalar.
    fn value(&mut self) -> Option<()> {
        match *self.bytes.get(self.at)? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.bytes.get(self.at)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                let start = self.at;
                while self.bytes.get(self.at).is_some_and(|b| !b",}] \t\r\n".contains(b)) {
                    self.at += 1;
                }
                // A scalar that runs to the end of the bytes may be cut short (`12` of `123`).
                (self.at > start && self.at < self.bytes.len()).then_some(())
            }
        }
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<i64> for MessageId {
    fn from(n: i64) -> Self {
        Self(n.to_string())
    }
}

/// What a frame is, as far as JSON-RPC 2.0 shape goes. Lenient on purpose: a frame with a wrong `jsonrpc` version
/// still classifies by its other members, so the lab can both produce and recognise broken messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Request {
        id: MessageId,
        method: String,
    },
    Notification {
        method: String,
    },
    /// A success response (`result` present).
    Response {
        id: MessageId,
    },
    /// An error response; the id may be absent or null when the peer could not read the request's id.
    Error {
        id: Option<MessageId>,
    },
    /// JSON, but not a JSON-RPC message (an array, a scalar, an object of unknown shape).
    Other,
    /// Not JSON at all (truncated, garbage, not UTF-8).
    Unparsable,
}

/// One message exactly as it crossed the wire, without its framing (no trailing newline, no `data:` prefix).
#[derive(Clone)]
pub struct Frame {
    bytes: Bytes,
    /// Shared, so that keeping a frame (a request remembered until its reply) does not copy the whole tree.
    value: Option<Arc<Value>>,
    kind: Kind,
}

impl Frame {
    /// Parses `bytes`; never fails, because unparsable input is itself something to record or forward.
    pub fn parse(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        let value = serde_json::from_slice::<Value>(&bytes).ok();
        let kind = value.as_ref().map_or(Kind::Unparsable, classify);
        Self { bytes, value: value.map(Arc::new), kind }
    }

    /// A frame for a value built in memory, serialised compactly (never contains a newline).
    pub fn from_value(value: Value) -> Self {
        let bytes = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        let kind = classify(&value);
        Self { bytes, value: Some(Arc::new(value)), kind }
    }

    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    pub fn value(&self) -> Option<&Value> {
        self.value.as_deref()
    }

    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The id of a request or response (`None` for notifications, id-less errors and non-messages).
    pub fn id(&self) -> Option<&MessageId> {
        match &self.kind {
            Kind::Request { id, .. } | Kind::Response { id } => Some(id),
            Kind::Error { id } => id.as_ref(),
            _ => None,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match &self.kind {
            Kind::Request { method, .. } | Kind::Notification { method } => Some(method),
            _ => None,
        }
    }

    /// `params.name` of a `tools/call` request.
    pub fn tool_name(&self) -> Option<&str> {
        if self.method() != Some("tools/call") {
            return None;
        }
        at(self.value()?, &["params", "name"])?.as_str()
    }

    /// What a 2026-07-28 request mirrors in its `Mcp-Name` header: `params.name` of `tools/call` and `prompts/get`,
    /// `params.uri` of `resources/read`, `resources/subscribe` and `resources/unsubscribe`, `params.taskId` of
    /// `tasks/get`, `tasks/update` and `tasks/cancel` (the tasks extension: it lets an intermediary route a poll to
    /// the instance holding the task).
    pub fn mcp_name(&self) -> Option<&str> {
        let key = match self.method()? {
            "tools/call" | "prompts/get" => "name",
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
            "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
            _ => return None,
        };
        at(self.value()?, &["params", key])?.as_str()
    }

    /// `params._meta.progressToken` of a request, if the sender asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        at(self.value()?, &["params", "_meta", "progressToken"])
    }

    /// True for a response or error answering a request (what faults armed on a request id act on).
    pub fn is_reply(&self) -> bool {
        matches!(self.kind, Kind::Response { .. } | Kind::Error { .. })
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame").field("kind", &self.kind).field("bytes", &String::from_utf8_lossy(&self.bytes)).finish()
    }
}

/// The value under object keys `path` (what `Value::pointer` finds for `/a/b` when every step is an object key),
/// without the allocations `pointer` makes to unescape each step: this runs several times for every frame.
pub fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |value, key| member(value.as_object()?, key))
}

/// Objects up to this many members are searched in order rather than through their hash index.
const SCAN_MEMBERS: usize = 8;

/// `object.get(key)`. A JSON-RPC message and its `params` or `result` have a handful of members, and comparing
/// that many short keys costs a fraction of hashing `key` once with the map's SipHash (about 150 instructions):
/// this runs several times for every frame. Keys are unique in a map, so the first match is the only one.
pub fn member<'a>(object: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    if object.len() <= SCAN_MEMBERS {
        object.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        object.get(key)
    }
}

fn classify(value: &Value) -> Kind {
    let Some(obj) = value.as_object() else {
        return Kind::Other;
    };
    let id = member(obj, "id");
    let method = member(obj, "method").and_then(Value::as_str);
    match (method, id) {
        (Some(method), Some(id)) => match MessageId::from_value(id) {
            Some(id) => Kind::Request { id, method: method.to_owned() },
            None => Kind::Other,
        },
        (Some(method), None) => Kind::Notification { method: method.to_owned() },
        (None, _) if member(obj, "error").is_some() => Kind::Error { id: id.and_then(MessageId::from_value) },
        (None, Some(id)) if member(obj, "result").is_some() => match MessageId::from_value(id) {
            Some(id) => Kind::Response { id },
            None => Kind::Other,
        },
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_id_is_recovered_from_the_start_of_a_cut_message() {
        let id = |s: &str| MessageId::from_prefix(s.as_bytes()).map(|id| id.to_string());
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xxxx"#), Some("7".into()));
        assert_eq!(id(r#" { "meta" : {"id": 1, "s": "}\"{"}, "id" : "a-1" , "params": ["#), Some("\"a-1\"".into()));
        assert_eq!(id(r#"{"jsonrpc":"2.0","result":{"id":3,"x":"xxxx"#), None, "a nested id is not the message's");
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":12"#), None, "a number at the cut may be cut short");
        assert_eq!(id(r#"{"id":null,"error":{"#), None);
        assert_eq!(id("[1,2"), None);
        assert_eq!(id(""), None);
    }

    #[test]
    fn the_mcp_name_header_mirrors_what_each_request_acts_on() {
        let name = |body: &str| Frame::parse(body.as_bytes().to_vec()).mcp_name().map(str::to_owned);
        let request = |method: &str, params: &str| {
            name(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#))
        };
        assert_eq!(request("tools/call", r#"{"name":"echo"}"#).as_deref(), Some("echo"));
        assert_eq!(request("prompts/get", r#"{"name":"greet"}"#).as_deref(), Some("greet"));
        assert_eq!(request("resources/read", r#"{"uri":"file:///a"}"#).as_deref(), Some("file:///a"));
        assert_eq!(request("tasks/get", r#"{"taskId":"t-1"}"#).as_deref(), Some("t-1"));
        assert_eq!(request("tasks/cancel", r#"{"taskId":"t-1"}"#).as_deref(), Some("t-1"));
        assert_eq!(request("tasks/result", r#"{"taskId":"t-1"}"#), None, "not one the header carries");
        assert_eq!(request("tools/list", "{}"), None);
        assert_eq!(name(r#"{"jsonrpc":"2.0","id":1,"result":{"name":"x"}}"#), None, "a reply has none");
    }

    #[test]
    fn classifies_each_message_shape() {
        let req = Frame::parse(&br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang"}}"#[..]);
        assert_eq!(req.kind(), &Kind::Request { id: 1.into(), method: "tools/call".into() });
        assert_eq!(req.tool_name(), Some("hang"));
        let note = Frame::parse(&br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#[..]);
        assert_eq!(note.method(), Some("notifications/cancelled"));
        let resp = Frame::parse(&br#"{"jsonrpc":"2.0","id":"a","result":{}}"#[..]);
        assert_eq!(resp.id().map(MessageId::as_json), Some("\"a\""));
        let idless = Frame::parse(&br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"x"}}"#[..]);
        assert_eq!(idless.kind(), &Kind::Error { id: None });
        assert_eq!(Frame::parse(&b"{\"jsonrpc\":"[..]).kind(), &Kind::Unparsable);
        assert_eq!(Frame::parse(&b"[1,2]"[..]).kind(), &Kind::Other);
    }

    #[test]
    fn members_are_found_in_small_and_large_objects() {
        let mut large: serde_json::Map<String, Value> = (0..20).map(|i| (format!("k{i}"), Value::from(i))).collect();
        large.insert("id".into(), Value::from(7));
        let large = Value::Object(large);
        let small = serde_json::json!({"jsonrpc": "2.0", "result": {"isError": true}, "id": 7});
        for message in [&small, &large] {
            assert_eq!(at(message, &["id"]), Some(&Value::from(7)));
            assert_eq!(at(message, &["absent"]), None);
        }
        assert_eq!(at(&large, &["k19"]), Some(&Value::from(19)));
        assert_eq!(at(&small, &["result", "isError"]), Some(&Value::Bool(true)));
        assert_eq!(at(&small, &["jsonrpc", "x"]), None, "a string has no members");
    }

    #[test]
    fn string_and_number_ids_differ() {
        let a = MessageId::from_value(&serde_json::json!(1)).unwrap();
        let b = MessageId::from_value(&serde_json::json!("1")).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.to_value(), serde_json::json!(1));
        assert_eq!(b.to_value(), serde_json::json!("1"));
        for id in [serde_json::json!(-3), serde_json::json!(u64::MAX), serde_json::json!(1.5), serde_json::json!("x")] {
            assert_eq!(MessageId::from_value(&id).unwrap().to_value(), id);
        }
    }

    #[test]
    fn keeps_original_bytes_and_key_order() {
        let raw = br#"{"z":1,"jsonrpc":"2.0","id":3,"result":{"b":1,"a":2},"x-extra":true}"#;
        let frame = Frame::parse(&raw[..]);
        assert_eq!(frame.bytes().as_ref(), raw);
        let keys: Vec<_> = frame.value().unwrap().as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "jsonrpc", "id", "result", "x-extra"]);
    }

    proptest! {
        #[test]
        fn reading_an_id_from_any_start_never_panics(input in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = MessageId::from_prefix(&input);
        }

        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let frame = Frame::parse(bytes.clone());
            prop_assert_eq!(frame.bytes().as_ref(), &bytes[..]);
            let _ = (frame.id(), frame.method(), frame.tool_name(), frame.progress_token());
        }

        #[test]
        fn truncations_of_a_valid_message_never_panic(cut in 0usize..80) {
            let raw = br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"delay","arguments":{"delayMs":5}}}"#;
            let frame = Frame::parse(&raw[..cut.min(raw.len())]);
            if cut < raw.len() {
                prop_assert_eq!(frame.kind(), &Kind::Unparsable);
            }
        }
    }
}
