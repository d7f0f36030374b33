//! Replay: a recorded run's server replies, served again to the same or another agent.
//!
//! The replay server stands where the server stood, in front of a fresh server: every request still reaches that
//! server (so writes really happen again and the end state can be graded), but a reply the recording holds for the
//! same call — same method, same tool and arguments (key order ignored), same occurrence — is replaced by the
//! recorded one, with this request's id. Calls the recording lacks (the agent diverged) get the fresh server's
//! reply and are logged as `live`. The proxy in front applies the run's rules with the run's seed again, so faults
//! fire as they did for the same sequence of calls.

use crate::evidence::{TrajectoryError, trajectory_lines};
use faultlab_diagnose::model::canonical;
use faultlab_wire::child::{self, ChildCommand, Spawned, Stdin};
use faultlab_wire::line::{self, Line};
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES};
use futures::StreamExt as _;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio_util::codec::FramedRead;

/// The recorded replies, per call key, in the order they were recorded.
#[derive(Debug, Default)]
pub struct Cassette {
    replies: HashMap<String, VecDeque<Value>>,
}

impl Cassette {
    /// Reads a trajectory recorded with bodies (`faultlab proxy --record-bodies`). Replies the proxy answered
    /// itself (`instead` rules) are not the server's and are left out: the rule fires again on replay.
    pub fn from_trajectory(text: &str) -> Result<Self, TrajectoryError> {
        let mut cassette = Cassette::default();
        let mut open: HashMap<String, String> = HashMap::new();
        for (_, line) in trajectory_lines::<Value>(text)? {
            if line["event"] != "frame" || line["id"].is_null() {
                continue;
            }
            let id = line["id"].to_string();
            match (line["direction"].as_str(), line["method"].as_str()) {
                (Some("client_to_server"), Some(method)) => {
                    open.insert(id, key(method, line["tool"].as_str(), &line["arguments"]));
                }
                (Some("server_to_client"), None) if line["action"] != "injected" => {
                    if let (Some(key), Some(body)) = (open.remove(&id), line.get("body")) {
                        cassette.replies.entry(key).or_default().push_back(body.clone());
                    }
                }
                _ => {}
            }
        }
        Ok(cassette)
    }

    /// How many replies the recording holds.
    pub fn len(&self) -> usize {
        self.replies.values().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next recorded reply for this call, if any is left.
    fn take(&mut self, key: &str) -> Option<Value> {
        self.replies.get_mut(key)?.pop_front()
    }
}

/// What identifies "the same call": the method, and for `tools/call` the tool and its arguments with object keys
/// sorted (agents need not serialise arguments in the same order twice).
pub fn key(method: &str, tool: Option<&str>, arguments: &Value) -> String {
    match (method, tool) {
        ("tools/call", Some(tool)) => format!("tools/call {tool} {}", canonical(arguments)),
        _ => method.to_owned(),
    }
}

/// One line of the replay log: which call was answered from the recording and which live.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Served {
    pub key: String,
    /// `recorded` or `live`.
    pub from: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot start the server behind the replay: {0}")]
    Spawn(std::io::Error),
    #[error("replay i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Relays between the agent (`input`/`output`) and a fresh server (`server`), swapping in recorded replies.
/// `log` receives one [`Served`] line per reply. Returns when the agent has closed its input and the server has
/// ended: it gets [`child::DEFAULT_GRACE`] to exit after its stdin closes, then is stopped in the spec's order.
pub async fn serve<R, W>(
    cassette: Cassette,
    server: tokio::process::Command,
    input: R,
    output: W,
    mut log: Option<std::fs::File>,
) -> Result<(), ReplayError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    use std::io::Write as _;
    let Spawned { process: mut child, stdin: mut child_in, stdout: mut lines } =
        ChildCommand::new(server).spawn(MAX_LINE_BYTES).map_err(ReplayError::Spawn)?;
    let pending: Arc<Mutex<HashMap<String, String>>> = Arc::default();

    let requests = {
        let pending = pending.clone();
        async move {
            let mut lines = FramedRead::new(input, LineCodec::new(MAX_LINE_BYTES));
            while let Some(Ok(line)) = lines.next().await {
                // An over-long line cannot be relayed whole; the server never sees it, as with the proxy.
                let Line::Bytes(line) = line else { continue };
                let frame = Frame::parse(line.clone());
                if let (Some(id), Some(method)) = (frame.id(), frame.method()) {
                    let arguments = frame.value().and_then(|v| v.pointer("/params/arguments")).cloned();
                    let key = key(method, frame.tool_name(), &arguments.unwrap_or(Value::Null));
                    pending.lock().expect("not poisoned").insert(id.to_value().to_string(), key);
                }
                child_in.send(&line).await?;
            }
            Ok::<_, std::io::Error>(child_in)
        }
    };
    // The agent is gone: closing the server's input ends it, as a client's EOF would; one that stays is stopped.
    let requests = async {
        let (closing, sent) = match requests.await {
            Ok(child_in) => (Stdin::Close(Some(child_in)), Ok(())),
            Err(e) => (Stdin::Close(None), Err(e)),
        };
        child.stop(closing, child::DEFAULT_GRACE, |_| {}).await;
        sent
    };
    let replies = async move {
        let mut cassette = cassette;
        let mut output = output;
        while let Some(Ok(line)) = lines.next().await {
            // An over-long reply cannot be relayed whole; the agent's request then goes unanswered.
            let Line::Bytes(line) = line else { continue };
            let frame = Frame::parse(line.clone());
            let key = match (frame.is_reply(), frame.id()) {
                (true, Some(id)) => pending.lock().expect("not poisoned").remove(&id.to_value().to_string()),
                _ => None,
            };
            let Some(key) = key else {
                output.write_all(&line::encode(&line)).await?;
                output.flush().await?;
                continue;
            };
            let (text, from) = match cassette.take(&key) {
                Some(mut recorded) => {
                    recorded["id"] = frame.id().map(|id| id.to_value()).unwrap_or(Value::Null);
                    (recorded.to_string().into(), "recorded")
                }
                None => (line, "live"),
            };
            output.write_all(&line::encode(&text)).await?;
            output.flush().await?;
            if let Some(log) = log.as_mut() {
                let _ = writeln!(log, "{}", serde_json::json!({"key": key, "from": from}));
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let (sent, answered) = tokio::join!(requests, replies);
    sent?;
    answered?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_ignores_argument_order_but_not_values() {
        let a = key("tools/call", Some("write_file"), &serde_json::json!({"path": "a", "content": "x"}));
        let b = key("tools/call", Some("write_file"), &serde_json::json!({"content": "x", "path": "a"}));
        let c = key("tools/call", Some("write_file"), &serde_json::json!({"content": "y", "path": "a"}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(key("tools/list", None, &Value::Null), "tools/list");
    }

    #[test]
    fn the_cassette_keeps_server_replies_in_order_and_skips_injected_ones() {
        let text = [
            r#"{"event":"frame","direction":"client_to_server","id":1,"method":"tools/call","tool":"read_file","arguments":{"path":"a"}}"#,
            r#"{"event":"frame","direction":"server_to_client","action":"forwarded","id":1,"method":null,"body":{"jsonrpc":"2.0","id":1,"result":{"n":1}}}"#,
            r#"{"event":"frame","direction":"client_to_server","id":2,"method":"tools/call","tool":"read_file","arguments":{"path":"a"}}"#,
            r#"{"event":"frame","direction":"server_to_client","action":"injected","id":2,"method":null,"body":{"jsonrpc":"2.0","id":2,"error":{}}}"#,
            r#"{"event":"frame","direction":"client_to_server","id":3,"method":"tools/call","tool":"read_file","arguments":{"path":"a"}}"#,
            r#"{"event":"frame","direction":"server_to_client","action":"faulted","id":3,"method":null,"body":{"jsonrpc":"2.0","id":3,"result":{"n":3}}}"#,
        ]
        .join("\n");
        let mut cassette = Cassette::from_trajectory(&text).unwrap();
        assert_eq!(cassette.len(), 2);
        let k = key("tools/call", Some("read_file"), &serde_json::json!({"path": "a"}));
        assert_eq!(cassette.take(&k).unwrap()["result"]["n"], 1);
        assert_eq!(cassette.take(&k).unwrap()["result"]["n"], 3);
        assert!(cassette.take(&k).is_none());
    }
}
