//! What a run leaves to grade, read back from files: the proxy's trajectory, the workspace server's side-effect
//! ledger, snapshots of the workspace, the agent's claim and how the agent ended.

use crate::contract::Claim;
use faultlab_engine::recorder::Direction;
use faultlab_engine::trajectory::{Exchange, Outcome, ReadError, Trajectory};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// One `tools/call` as the proxy saw it: the request, and the reply the agent got (if any).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// 0-based line of the request in the trajectory file (evidence citations point here).
    pub index: usize,
    /// The JSON-RPC id of the request.
    pub id: Value,
    /// The connection it came on (the trajectory's scope): requests in flight together share one. Not in the
    /// report: its trajectory lines say it.
    #[serde(skip)]
    pub scope: String,
    pub tool: String,
    pub arguments: Value,
    /// Milliseconds since the proxy started, when the request arrived.
    pub at_ms: f64,
    /// Line of the reply in the trajectory, when one was written to the agent.
    pub reply_index: Option<usize>,
    /// Milliseconds since the proxy started, when that reply was written to the agent. Not in the report: its
    /// trajectory line says it.
    #[serde(skip)]
    pub reply_at_ms: Option<f64>,
    /// The server's reply message as the trajectory recorded it (before any fault changed how it was framed).
    /// Not in the report: its trajectory line holds it.
    #[serde(skip)]
    pub reply_body: Option<Value>,
    /// The upstream server executed the request (false when a rule answered instead or nothing came back).
    pub executed: bool,
    /// The rule and fault applied to the request or its reply.
    pub rule: Option<String>,
    pub fault: Option<String>,
    /// What the agent saw of that fault (the catalogue's effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<faultlab_engine::catalogue::Effect>,
    /// The upstream's reply was an error (JSON-RPC error or `isError: true`).
    pub error: bool,
    /// The authorization in front of the server (`--auth`) refused the request with a challenge: the server never
    /// saw it, and the agent met a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<faultlab_engine::recorder::Refusal>,
    /// The agent cancelled the call (`notifications/cancelled`) before its next request on the connection: it gave
    /// up waiting, however late its next call came. Read from the order of frames, since a notification's
    /// `requestId` is not in the trajectory: the call is the connection's last request before the cancel.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
}

impl ToolCall {
    /// The agent met a failure on this call: an error, a fault, a refusal by the authorization, or no reply at all
    /// ([`Exchange::failed`], the one definition diagnose and replay share).
    pub fn failed(&self) -> bool {
        let reply = self.reply_index.map(|_| true);
        Outcome::call_failed(Outcome::of_call(self.refused.is_some(), self.effect, reply, self.error))
    }

    fn of(exchange: &Exchange<'_>) -> Self {
        let (rule, fault) = match exchange.fault() {
            Some((rule, fault)) => (rule.map(str::to_owned), Some(fault.to_owned())),
            None => (None, None),
        };
        ToolCall {
            // Evidence cites 0-based lines.
            index: exchange.request.line - 1,
            id: exchange.id().clone(),
            scope: exchange.request.scope.to_owned(),
            tool: exchange.tool().unwrap_or_default().to_owned(),
            arguments: exchange.arguments().cloned().unwrap_or(Value::Null),
            at_ms: exchange.request.ts_ms,
            reply_index: exchange.reply_line().map(|line| line - 1),
            reply_at_ms: exchange.reply.filter(|_| exchange.reached()).map(|reply| reply.ts_ms),
            reply_body: exchange.recorded_reply().filter(|_| exchange.reached()).cloned(),
            executed: exchange.executed().unwrap_or(false),
            rule,
            fault,
            effect: exchange.effect(),
            error: exchange.error(),
            refused: exchange.refused().cloned(),
            cancelled: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("trajectory {0}")]
pub struct TrajectoryError(#[from] pub ReadError);

impl TrajectoryError {
    /// 1-based line of the error.
    pub fn line(&self) -> usize {
        self.0.line
    }
}

/// Reads a trajectory (JSON lines from `faultlab proxy --record`) line by line. A last line cut short (the proxy
/// was killed while writing it) is ignored; any other bad line is an error.
pub fn read_trajectory(input: impl std::io::BufRead) -> Result<Trajectory, TrajectoryError> {
    Ok(Trajectory::read(input)?)
}

/// The tool calls of a trajectory, in arrival order.
pub fn tool_calls(trajectory: &Trajectory) -> Vec<ToolCall> {
    let mut calls: Vec<ToolCall> = trajectory.tool_calls().iter().map(ToolCall::of).collect();
    // Each connection's last request so far (its line, 0-based), and whether it was a tool call: a cancel that
    // follows a tool call with no other request between cancels that call.
    let mut last: std::collections::HashMap<&str, usize> = Default::default();
    for line in &trajectory.lines {
        let faultlab_engine::Event::Frame(frame) = &line.record.event else { continue };
        if frame.direction != Direction::ClientToServer {
            continue;
        }
        let scope = line.record.scope.as_str();
        match (frame.method.as_deref(), &frame.id) {
            (Some("notifications/cancelled"), _) => {
                if let Some(call) = last.remove(scope).and_then(|at| calls.iter_mut().find(|c| c.index == at)) {
                    call.cancelled = true;
                }
            }
            (Some(_), Some(id)) if !id.is_null() => {
                last.insert(scope, line.number - 1);
            }
            _ => {}
        }
    }
    calls
}

/// A request of the protocol itself (`initialize`, `tools/list`, ...: anything but `tools/call`) that failed, by
/// the definition tool calls have ([`Exchange::failed`]), a refusal by the authorization aside. The recovery detail
/// names them when no tool call failed: an agent whose handshake was lost met a failure too.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolFailure {
    /// Its trajectory line, 0-based as evidence cites.
    pub index: usize,
    pub method: String,
    /// What the client got (`lost`, `error`, `timeout`, `refused`...; `unanswered` when nothing came).
    pub outcome: &'static str,
}

/// The failed protocol requests of a trajectory, in arrival order.
pub fn protocol_failures(trajectory: &Trajectory) -> Vec<ProtocolFailure> {
    trajectory
        .exchanges()
        .iter()
        .filter(|e| e.request.frame.direction == Direction::ClientToServer && e.method() != "tools/call")
        // A challenge before the agent had authorized is how OAuth begins (its discovery), not a failure it met.
        .filter(|e| e.failed() && e.refused().is_none())
        .map(|e| ProtocolFailure {
            index: e.request.line - 1,
            method: e.method().to_owned(),
            outcome: e.outcome().map_or("unanswered", Outcome::name),
        })
        .collect()
}

/// The ledger's line type, the workspace server's own (`faultlab_engine::ledger`): one type written and read.
pub use faultlab_engine::ledger::{Op, SideEffect};

/// Reads a ledger file; a last line cut short is ignored.
pub fn ledger(text: &str) -> Result<Vec<SideEffect>, TrajectoryError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut entries = Vec::new();
    for (index, raw) in lines.iter().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(raw) {
            Ok(entry) => entries.push(entry),
            Err(_) if index + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => {
                let message = format!("ledger: {e}");
                return Err(TrajectoryError(ReadError { line: index + 1, column: None, message }));
            }
        }
    }
    Ok(entries)
}

/// A file in a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileState {
    /// SHA-256 of the contents, hex.
    pub sha256: String,
    pub bytes: u64,
    /// The contents, when UTF-8 and at most [`TEXT_LIMIT`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Largest file whose text a snapshot keeps (64 KiB); bigger files are compared by hash only.
pub const TEXT_LIMIT: u64 = 64 * 1024;

/// Every regular file under a folder: relative path (with `/`) → state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Snapshot {
    pub files: BTreeMap<String, FileState>,
}

impl Snapshot {
    pub fn take(root: &Path) -> std::io::Result<Self> {
        let mut snapshot = Snapshot::default();
        walk(root, root, &mut snapshot)?;
        Ok(snapshot)
    }

    pub fn get(&self, path: &str) -> Option<&FileState> {
        self.files.get(path.trim_start_matches("./"))
    }
}

fn walk(root: &Path, dir: &Path, snapshot: &mut Snapshot) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            walk(root, &path, snapshot)?;
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let name = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            let bytes = entry.metadata()?.len();
            // A file an agent wrote can be any size: hashed in pieces, its text kept only when small.
            let sha256 = crate::guard::sha256_file(&path).map_err(|e| match e {
                crate::guard::ReadError::Io(e) => e,
                other => std::io::Error::other(other.to_string()),
            })?;
            let text = match bytes <= TEXT_LIMIT {
                true => std::fs::read(&path).ok().and_then(|c| String::from_utf8(c).ok()),
                false => None,
            };
            snapshot.files.insert(name, FileState { sha256, bytes, text });
        }
    }
    Ok(())
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "end")]
pub enum AgentEnd {
    /// It exited by itself (`code` is absent when a signal ended it).
    Exited { code: Option<i32> },
    /// It was still running at the task deadline and was killed (with everything it started).
    KilledAtDeadline,
    /// It could not be started.
    FailedToStart,
}

/// Everything the grader looks at for one run.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    pub calls: Vec<ToolCall>,
    /// The protocol's own requests that failed (not in the report: their trajectory lines say it).
    #[serde(skip)]
    pub protocol_failures: Vec<ProtocolFailure>,
    /// The built-in server's ledger; `None` for other servers (side effects then come from the snapshots).
    pub ledger: Option<Vec<SideEffect>>,
    pub before: Snapshot,
    pub after: Snapshot,
    pub claim: Option<Claim>,
    /// Why the claim file could not be read, when the agent wrote one that is not a claim.
    pub claim_error: Option<String>,
    pub end: AgentEnd,
    pub duration_ms: u64,
    /// The run's nonce (the value `{{nonce}}` took).
    pub nonce: String,
    /// For each `command_succeeded` state assertion, in order: whether it exited 0.
    pub commands: Vec<bool>,
    /// The requests to the task's model, for a task with one (not in the report: `model.jsonl` holds them).
    #[serde(skip)]
    pub model_requests: Vec<crate::model_hop::ModelRequest>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `notifications/cancelled` marks the connection's last request as cancelled when that was a tool call; a
    /// request between them (a listing) takes it, and another connection's cancel is not this one's.
    #[test]
    fn a_cancel_marks_the_connections_last_tool_call() {
        let frame = |ts: u32, scope: &str, id: Option<u32>, method: &str| {
            let id = id.map_or("null".to_owned(), |i| i.to_string());
            let tool = if method == "tools/call" { r#""tool":"read_file","arguments":{"path":"a"},"# } else { "" };
            format!(
                r#"{{"tsMs":{ts},"scope":"{scope}","event":"frame","direction":"client_to_server","action":"forwarded","id":{id},"method":"{method}",{tool}"bytes":9}}"#
            )
        };
        let text = [
            frame(1, "c1", Some(1), "tools/call"),
            frame(2, "c1", None, "notifications/cancelled"),
            frame(3, "c1", Some(2), "tools/call"),
            frame(4, "c1", Some(3), "tools/list"),
            frame(5, "c1", None, "notifications/cancelled"),
            frame(6, "c2", Some(1), "tools/call"),
            frame(7, "c1", Some(4), "tools/call"),
            frame(8, "c2", None, "notifications/cancelled"),
        ]
        .join("\n");
        let calls = tool_calls(&Trajectory::parse(&text).unwrap());
        let cancelled: Vec<(usize, bool)> = calls.iter().map(|c| (c.index, c.cancelled)).collect();
        assert_eq!(cancelled, [(0, true), (2, false), (5, true), (6, false)]);
    }

    #[test]
    fn calls_pair_requests_with_replies_and_keep_the_fault() {
        let text = concat!(
            r#"{"tsMs":0.0,"scope":"stdio","event":"run_started","seed":7,"rules":1}"#,
            "\n",
            r#"{"tsMs":1.0,"scope":"stdio","event":"frame","direction":"client_to_server","action":"forwarded","id":2,"method":"tools/call","tool":"write_file","rule":null,"fault":null,"executed":null,"bytes":80,"arguments":{"path":"a"}}"#,
            "\n",
            r#"{"tsMs":2.0,"scope":"stdio","event":"frame","direction":"server_to_client","action":"consumed","id":2,"method":null,"tool":null,"rule":"t","fault":"timeout","executed":true,"bytes":50,"error":false}"#,
            "\n",
            r#"{"tsMs":3.0,"scope":"stdio","event":"frame","direction":"client_to_server","action":"consumed","id":3,"method":"tools/call","tool":"write_file","rule":"f","fault":"forbidden","executed":false,"bytes":80,"arguments":{"path":"a"}}"#,
            "\n",
            r#"{"tsMs":3.0,"scope":"stdio","event":"frame","direction":"server_to_client","action":"injected","id":3,"method":null,"tool":null,"rule":"f","fault":"forbidden","executed":false,"bytes":60}"#,
            "\n",
            r#"{"tsMs":4.0,"scope":"stdio","event":"frame","direction":"client_to_server","action":"forwarded","id":4,"me"#,
        );
        let calls = tool_calls(&read_trajectory(text.as_bytes()).unwrap());
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].executed, calls[0].reply_index, calls[0].fault.as_deref()), (true, None, Some("timeout")));
        assert!(calls[0].failed());
        assert_eq!(
            (calls[1].executed, calls[1].reply_index, calls[1].fault.as_deref()),
            (false, Some(4), Some("forbidden"))
        );
        assert_eq!(calls[1].arguments["path"], "a");
    }

    #[test]
    fn a_bad_line_in_the_middle_is_named() {
        let good = r#"{"tsMs":0.0,"scope":"","event":"run_started","seed":7,"rules":1}"#;
        let err = read_trajectory(format!("{good}\nnot json\n{good}\n").as_bytes()).unwrap_err();
        assert_eq!(err.line(), 2);
    }

    #[test]
    fn a_snapshot_hashes_every_file_with_relative_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "abc").unwrap();
        let snapshot = Snapshot::take(dir.path()).unwrap();
        let a = snapshot.get("sub/a.txt").unwrap();
        assert_eq!(a.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(a.text.as_deref(), Some("abc"));
    }
}
