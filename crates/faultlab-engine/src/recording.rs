//! A recording's replies, matched to new requests: what `faultlab proxy --replay` answers from and what eval's
//! replay swaps in.
//!
//! A request is "the same call" as a recorded one when its method is the same and, for `tools/call`, its tool
//! and its arguments as canonical JSON (object keys sorted: agents need not write them in the same order twice).
//! Replies are served in the order they were recorded, one per occurrence of the call.

use crate::trajectory::{Exchange, Trajectory};
use faultlab_wire::canonical;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// What identifies a call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    pub method: String,
    /// For `tools/call`: the tool's name.
    pub tool: Option<String>,
    /// For `tools/call`: the arguments as canonical JSON (`null` when there are none).
    pub arguments: Option<String>,
}

impl CallKey {
    /// The key of a request: `arguments` is its `params.arguments` (read only for `tools/call`).
    pub fn new(method: &str, tool: Option<&str>, arguments: Option<&Value>) -> Self {
        match (method, tool) {
            ("tools/call", Some(tool)) => Self {
                method: method.to_owned(),
                tool: Some(tool.to_owned()),
                arguments: Some(canonical(arguments.unwrap_or(&Value::Null))),
            },
            _ => Self { method: method.to_owned(), tool: None, arguments: None },
        }
    }

    /// The key of a recorded exchange's request.
    pub fn of(exchange: &Exchange<'_>) -> Self {
        Self::new(exchange.method(), exchange.tool(), exchange.arguments())
    }

    /// The key of a JSON-RPC request message.
    pub fn of_request(message: &Value) -> Option<Self> {
        let method = message.get("method")?.as_str()?;
        let params = message.get("params");
        let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str);
        Some(Self::new(method, tool, params.and_then(|p| p.get("arguments"))))
    }

    /// How alike two keys are, for naming the closest recorded call: the method first, then the tool, then how
    /// many top-level arguments are equal.
    fn likeness(&self, other: &CallKey) -> (bool, bool, usize) {
        let members = |key: &CallKey| -> Vec<(String, String)> {
            let parsed = key.arguments.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok());
            match parsed {
                Some(Value::Object(map)) => map.into_iter().map(|(k, v)| (k, v.to_string())).collect(),
                _ => Vec::new(),
            }
        };
        let mine = members(self);
        let shared = members(other).iter().filter(|m| mine.contains(m)).count();
        (self.method == other.method, self.method == other.method && self.tool == other.tool, shared)
    }
}

/// `tools/call write_file {"content":"x","path":"a"}`, or the method alone.
impl fmt::Display for CallKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.tool, &self.arguments) {
            (Some(tool), Some(arguments)) => write!(f, "{} {tool} {arguments}", self.method),
            _ => f.write_str(&self.method),
        }
    }
}

/// The server's replies in a recording, per call, in the order they were recorded.
#[derive(Debug, Default, Clone)]
pub struct Recording {
    replies: HashMap<CallKey, VecDeque<Value>>,
    /// Every call's last recorded reply, kept when its queue runs out (see [`Recording::take_or_repeat`]).
    last: HashMap<CallKey, Value>,
    /// Recorded calls in the order first seen, for naming the closest one.
    order: Vec<CallKey>,
}

impl Recording {
    /// The replies of a trajectory recorded with bodies (`faultlab proxy --record-bodies`). Replies the proxy
    /// answered itself (`instead` rules) are not the server's and are left out: the rule fires again on replay.
    pub fn from_trajectory(trajectory: &Trajectory) -> Self {
        let mut recording = Recording::default();
        for exchange in trajectory.exchanges() {
            let Some(body) = exchange.recorded_reply() else { continue };
            let key = CallKey::of(&exchange);
            if !recording.replies.contains_key(&key) {
                recording.order.push(key.clone());
            }
            recording.last.insert(key.clone(), body.clone());
            recording.replies.entry(key).or_default().push_back(body.clone());
        }
        recording
    }

    /// How many replies are left to serve.
    pub fn len(&self) -> usize {
        self.replies.values().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next recorded reply for this call, if any is left.
    pub fn take(&mut self, key: &CallKey) -> Option<Value> {
        self.replies.get_mut(key)?.pop_front()
    }

    /// The next recorded reply for this call; once they are all served, the last one again (a client that
    /// lists tools or reads a file once more than it did while recording gets the same answer).
    pub fn take_or_repeat(&mut self, key: &CallKey) -> Option<Value> {
        self.take(key).or_else(|| self.last.get(key).cloned())
    }

    /// The recorded call most like `key` (same method first, then same tool, then most equal arguments).
    pub fn closest(&self, key: &CallKey) -> Option<&CallKey> {
        // The earliest recorded wins a tie: `max_by_key` keeps the last maximum, so walk the calls in reverse.
        self.order.iter().rev().max_by_key(|recorded| key.likeness(recorded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(lines: &[&str]) -> Recording {
        Recording::from_trajectory(&Trajectory::parse(&lines.join("\n")).unwrap())
    }

    #[test]
    fn the_key_ignores_argument_order_but_not_values() {
        let a = CallKey::new("tools/call", Some("write_file"), Some(&json!({"path": "a", "content": "x"})));
        let b = CallKey::new("tools/call", Some("write_file"), Some(&json!({"content": "x", "path": "a"})));
        let c = CallKey::new("tools/call", Some("write_file"), Some(&json!({"content": "y", "path": "a"})));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.to_string(), r#"tools/call write_file {"content":"x","path":"a"}"#);
        assert_eq!(CallKey::new("tools/list", None, None).to_string(), "tools/list");
        let request = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "write_file", "arguments": {"content": "x", "path": "a"}}});
        assert_eq!(CallKey::of_request(&request), Some(a));
    }

    #[test]
    fn replies_are_served_in_order_without_injected_ones_then_the_last_repeats() {
        let mut recording = recorded(&[
            r#"{"scope":"stdio","tsMs":1,"event":"frame","direction":"client_to_server","action":"forwarded","id":1,"method":"tools/call","tool":"read_file","bytes":1,"arguments":{"path":"a"}}"#,
            r#"{"scope":"stdio","tsMs":2,"event":"frame","direction":"server_to_client","action":"forwarded","id":1,"bytes":1,"body":{"jsonrpc":"2.0","id":1,"result":{"n":1}}}"#,
            r#"{"scope":"stdio","tsMs":3,"event":"frame","direction":"client_to_server","action":"consumed","id":2,"method":"tools/call","tool":"read_file","bytes":1,"arguments":{"path":"a"}}"#,
            r#"{"scope":"stdio","tsMs":4,"event":"frame","direction":"server_to_client","action":"injected","id":2,"bytes":1,"body":{"jsonrpc":"2.0","id":2,"error":{}}}"#,
            r#"{"scope":"stdio","tsMs":5,"event":"frame","direction":"client_to_server","action":"forwarded","id":3,"method":"tools/call","tool":"read_file","bytes":1,"arguments":{"path":"a"}}"#,
            r#"{"scope":"stdio","tsMs":6,"event":"frame","direction":"server_to_client","action":"faulted","id":3,"bytes":1,"body":{"jsonrpc":"2.0","id":3,"result":{"n":3}}}"#,
        ]);
        assert_eq!(recording.len(), 2);
        let key = CallKey::new("tools/call", Some("read_file"), Some(&json!({"path": "a"})));
        assert_eq!(recording.take(&key).unwrap()["result"]["n"], 1);
        assert_eq!(recording.take_or_repeat(&key).unwrap()["result"]["n"], 3);
        assert!(recording.take(&key).is_none());
        assert_eq!(recording.take_or_repeat(&key).unwrap()["result"]["n"], 3);
    }

    #[test]
    fn the_closest_call_prefers_the_same_tool_and_the_most_equal_arguments() {
        let recording = recorded(&[
            r#"{"scope":"stdio","tsMs":1,"event":"frame","direction":"client_to_server","action":"forwarded","id":1,"method":"tools/list","bytes":1}"#,
            r#"{"scope":"stdio","tsMs":2,"event":"frame","direction":"server_to_client","action":"forwarded","id":1,"bytes":1,"body":{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            r#"{"scope":"stdio","tsMs":3,"event":"frame","direction":"client_to_server","action":"forwarded","id":2,"method":"tools/call","tool":"write_file","bytes":1,"arguments":{"path":"a","content":"x"}}"#,
            r#"{"scope":"stdio","tsMs":4,"event":"frame","direction":"server_to_client","action":"forwarded","id":2,"bytes":1,"body":{"jsonrpc":"2.0","id":2,"result":{}}}"#,
            r#"{"scope":"stdio","tsMs":5,"event":"frame","direction":"client_to_server","action":"forwarded","id":3,"method":"tools/call","tool":"write_file","bytes":1,"arguments":{"path":"b","content":"y"}}"#,
            r#"{"scope":"stdio","tsMs":6,"event":"frame","direction":"server_to_client","action":"forwarded","id":3,"bytes":1,"body":{"jsonrpc":"2.0","id":3,"result":{}}}"#,
        ]);
        let asked = CallKey::new("tools/call", Some("write_file"), Some(&json!({"path": "b", "content": "z"})));
        assert_eq!(
            recording.closest(&asked).unwrap().to_string(),
            r#"tools/call write_file {"content":"y","path":"b"}"#
        );
        let other_tool = CallKey::new("tools/call", Some("delete_file"), Some(&json!({})));
        assert_eq!(
            recording.closest(&other_tool).unwrap().to_string(),
            r#"tools/call write_file {"content":"x","path":"a"}"#
        );
        assert_eq!(recording.closest(&CallKey::new("prompts/list", None, None)).unwrap().to_string(), "tools/list");
    }
}
