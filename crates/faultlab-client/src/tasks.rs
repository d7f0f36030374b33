//! Task-augmented calls (the tasks extension, `io.modelcontextprotocol/tasks`, as rmcp 3.11 serves it): when a
//! `tools/call` is answered with a task handle (`resultType: "task"`), the client polls `tasks/get` at the
//! server's `pollIntervalMs`, held between a floor ([`POLL_FLOOR`]) and a cap ([`POLL_CAP`]) of its own; stops at
//! the call's deadline or at the task's `ttlMs`, whichever is first, and then sends `tasks/cancel`; keeps the
//! first terminal status it sees (terminal is final); fetches the payload with `tasks/result` within what is left
//! of the deadline, falling back to the result `tasks/get` carried; and asks `tasks/get` once more after that, to
//! see (and record) a status that went back to `working`. Everything it saw is in the call's [`TaskRecord`].

use crate::connection::{Connection, Reply};
use crate::outcome::{ErrorKind, Observation, Outcome, classify_tool_reply};
use faultlab_wire::Frame;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// The extension's name in capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The shortest wait between two `tasks/get` (a `pollIntervalMs` of 0 is not a hot loop), in ms.
pub const POLL_FLOOR: Duration = Duration::from_millis(50);
/// The longest wait between two `tasks/get` (a day's `pollIntervalMs` is not a day's sleep), 5 s.
pub const POLL_CAP: Duration = Duration::from_secs(5);
/// Before giving up, one last `tasks/get` this long before the give-up time (100 ms), however long the interval.
pub const LAST_POLL_MARGIN: Duration = Duration::from_millis(100);
/// How long the `tasks/cancel` sent after giving up, and the confirming `tasks/get`, may take (1 s each; past the
/// call's deadline, which they come after).
pub const AFTER_WAIT: Duration = Duration::from_secs(1);

/// What the caller asks of a task-augmented call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskOptions {
    /// The caller asks for a task-augmented call (a scenario step's `task`); the tool's listing may overrule it
    /// ([`TaskSupport::augments`]).
    pub asked: bool,
    /// The ttl the client asks for, sent as `params.task.ttl` (ms; the 2025-11-25 spelling, which the extension's
    /// servers may ignore); the client also gives up on the task at this age.
    pub ttl: Option<Duration>,
}

/// What the client saw of one task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    pub task_id: String,
    /// The status the client kept: the first terminal one (`completed`, `failed`, `cancelled`), else the last seen.
    pub status: String,
    /// Every status the handle and each `tasks/get` reported, in order, repeats collapsed (`working`,
    /// `completed`, `working` for a status that went back).
    pub statuses: Vec<String>,
    /// `tasks/get` requests sent.
    pub polls: u32,
    /// The `pollIntervalMs` the server last suggested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// The longest wait the client made between two polls, in ms (the suggestion within floor and cap).
    pub longest_wait_ms: f64,
    /// The task's `ttlMs` as the server told it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Times a `working` status came after a terminal one.
    pub reverts: u32,
    /// `tasks/result` answered (a result or an error) before the deadline.
    pub result_answered: bool,
    /// Why the result came from elsewhere, or not at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_note: Option<String>,
    /// Why the client stopped before a terminal status: `deadline` or `ttl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gave_up: Option<String>,
    /// The client sent `tasks/cancel`.
    pub cancelled: bool,
}

/// What a tool's `tools/list` entry says of tasks (`execution.taskSupport`, MCP 2025-11-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// The tool must be called as a task.
    Required,
    /// It may be.
    Optional,
    /// It must not be; also what a tool that lists no `execution.taskSupport`, or is not listed, gets (the
    /// spec's default).
    Forbidden,
}

impl TaskSupport {
    /// What `tool`, one entry of a `tools/list` result, says (an unknown value reads as the default).
    pub fn of(tool: &Value) -> Self {
        match tool.pointer("/execution/taskSupport").and_then(Value::as_str) {
            Some("required") => Self::Required,
            Some("optional") => Self::Optional,
            _ => Self::Forbidden,
        }
    }

    /// Whether the call is task-augmented: always when required, never when forbidden, as `asked` when optional.
    pub fn augments(self, asked: bool) -> bool {
        match self {
            Self::Required => true,
            Self::Optional => asked,
            Self::Forbidden => false,
        }
    }
}

/// What the client read of a tool's task support before calling it, and what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSupportRecord {
    /// The tool's `execution.taskSupport` (`forbidden` when it lists none).
    pub listed: TaskSupport,
    /// The call asked for a task (a scenario step's `task`).
    pub asked: bool,
    /// The call was task-augmented (`params.task` sent).
    pub augmented: bool,
}

pub(crate) fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// The wait before the next poll for a suggested `pollIntervalMs`, within [`POLL_FLOOR`] and [`POLL_CAP`].
pub fn poll_wait(suggested_ms: Option<u64>) -> Duration {
    Duration::from_millis(suggested_ms.unwrap_or(0)).clamp(POLL_FLOOR, POLL_CAP)
}

/// When to poll next: after `wait`, but at the latest [`LAST_POLL_MARGIN`] before `give_up` for one last poll;
/// `None` once that last poll is done and the next would come after `give_up`.
fn next_poll(now: Instant, wait: Duration, give_up: Instant, last_done: &mut bool) -> Option<Instant> {
    let wake = now + wait;
    let last = give_up.checked_sub(LAST_POLL_MARGIN).unwrap_or(give_up);
    if wake <= last {
        return Some(wake);
    }
    if *last_done {
        return None;
    }
    *last_done = true;
    Some(last.max(now))
}

impl TaskRecord {
    fn saw(&mut self, status: &str) {
        if self.statuses.last().is_none_or(|s| s != status) {
            self.statuses.push(status.to_owned());
        }
        if is_terminal(&self.status) {
            if !is_terminal(status) {
                self.reverts += 1;
            }
        } else {
            self.status = status.to_owned();
        }
    }
}

impl Connection {
    /// Follows the task whose handle answered the call in `obs` (its `result` has `resultType: "task"`) until a
    /// terminal status or `until` (the call's deadline); the observation then reports the task's outcome.
    pub(crate) async fn follow_task(&self, mut obs: Observation, until: Instant, options: TaskOptions) -> Observation {
        let handle = obs.result.clone().unwrap_or_default();
        let received = Instant::now();
        let mut record = TaskRecord {
            task_id: handle.get("taskId").and_then(Value::as_str).unwrap_or_default().to_owned(),
            poll_interval_ms: handle.get("pollIntervalMs").and_then(Value::as_u64),
            ttl_ms: handle.get("ttlMs").and_then(Value::as_u64),
            ..TaskRecord::default()
        };
        record.saw(handle.get("status").and_then(Value::as_str).unwrap_or("working"));
        let ttl = [record.ttl_ms.map(Duration::from_millis), options.ttl].into_iter().flatten().min();
        let give_up = ttl.map_or(until, |ttl| until.min(received + ttl));
        let mut last_done = false;
        let mut terminal: Option<Value> = None;
        while terminal.is_none() {
            let now = Instant::now();
            let wait = poll_wait(record.poll_interval_ms);
            let Some(wake) = next_poll(now, wait, give_up, &mut last_done) else { break };
            record.longest_wait_ms = record.longest_wait_ms.max((wake - now).as_secs_f64() * 1000.0);
            tokio::time::sleep_until(wake).await;
            let left = give_up.saturating_duration_since(Instant::now()).max(POLL_FLOOR);
            record.polls += 1;
            match self.request_result("tasks/get", json!({"taskId": record.task_id}), left).await {
                Ok(task) => {
                    if let Some(ms) = task.get("pollIntervalMs").and_then(Value::as_u64) {
                        record.poll_interval_ms = Some(ms);
                    }
                    let status = task.get("status").and_then(Value::as_str).unwrap_or("unknown");
                    record.saw(status);
                    if is_terminal(status) {
                        terminal = Some(task);
                    }
                }
                Err(why) => {
                    obs.outcome = Outcome::Error;
                    obs.error_kind = Some(ErrorKind::ProtocolError);
                    obs.error = Some(Value::from(format!("tasks/get failed: {why}")));
                    obs.task = Some(record);
                    return obs;
                }
            }
        }
        let Some(task) = terminal else {
            record.gave_up = Some(if give_up < until { "ttl" } else { "deadline" }.into());
            let _ = self.request_result("tasks/cancel", json!({"taskId": record.task_id}), AFTER_WAIT).await;
            record.cancelled = true;
            obs.outcome = Outcome::Timeout;
            obs.error_kind = None;
            obs.error = Some(Value::from(format!(
                "task {} still {} after {} polls; gave up at its {} and cancelled it",
                record.task_id,
                record.status,
                record.polls,
                record.gave_up.as_deref().unwrap_or("deadline")
            )));
            obs.task = Some(record);
            return obs;
        };
        obs = self.task_payload(obs, &task, &mut record, until).await;
        // Terminal is final: one more look shows whether the server says otherwise (recorded, not believed).
        if self.is_alive()
            && let Ok(again) = self.request_result("tasks/get", json!({"taskId": record.task_id}), AFTER_WAIT).await
        {
            record.polls += 1;
            record.saw(again.get("status").and_then(Value::as_str).unwrap_or("unknown"));
        }
        obs.task = Some(record);
        obs
    }

    /// The call's outcome from a terminal task: `tasks/result` within what is left of `until`, else the result
    /// or error `tasks/get` carried.
    async fn task_payload(
        &self,
        obs: Observation,
        task: &Value,
        record: &mut TaskRecord,
        until: Instant,
    ) -> Observation {
        let left = until.saturating_duration_since(Instant::now());
        let (reply, id) = if left.is_zero() {
            (None, None)
        } else {
            let (reply, id) = self.request("tasks/result", json!({"taskId": record.task_id}), left).await;
            (reply, Some(id))
        };
        match reply {
            Some(Reply::Frame(frame)) => {
                record.result_answered = true;
                classify_tool_reply(&frame, Observation { error: None, error_kind: None, result: None, ..obs })
            }
            other => {
                if let Some(id) = id.filter(|_| other.is_none()) {
                    self.cancel(&id, "deadline exceeded").await;
                }
                record.result_note = Some(match other {
                    None => {
                        format!("tasks/result did not answer within {} ms; the result is tasks/get's", left.as_millis())
                    }
                    Some(_) => "tasks/result was not answered with a message; the result is tasks/get's".into(),
                });
                let inline = match (task.get("result"), task.get("error")) {
                    (Some(result), _) => json!({"jsonrpc": "2.0", "id": obs.request_id, "result": result}),
                    (None, Some(error)) => json!({"jsonrpc": "2.0", "id": obs.request_id, "error": error}),
                    (None, None) => json!({"jsonrpc": "2.0", "id": obs.request_id,
                        "error": {"code": -32603, "message": format!("the task ended {}", record.status)}}),
                };
                classify_tool_reply(
                    &Frame::from_value(inline),
                    Observation { error: None, error_kind: None, result: None, ..obs },
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_overrules_the_caller_required_always_forbidden_never_optional_as_asked() {
        let listed = |support: Value| TaskSupport::of(&json!({"name": "t", "execution": {"taskSupport": support}}));
        assert_eq!(listed(json!("required")), TaskSupport::Required);
        assert_eq!(listed(json!("optional")), TaskSupport::Optional);
        assert_eq!(listed(json!("sometimes")), TaskSupport::Forbidden, "an unknown value is the default");
        assert_eq!(TaskSupport::of(&json!({"name": "t"})), TaskSupport::Forbidden, "nothing listed: forbidden");
        for asked in [false, true] {
            assert!(TaskSupport::Required.augments(asked));
            assert!(!TaskSupport::Forbidden.augments(asked));
            assert_eq!(TaskSupport::Optional.augments(asked), asked);
        }
    }

    #[test]
    fn the_suggested_interval_is_held_between_the_floor_and_the_cap() {
        assert_eq!(poll_wait(Some(0)), POLL_FLOOR);
        assert_eq!(poll_wait(None), POLL_FLOOR);
        assert_eq!(poll_wait(Some(100)), Duration::from_millis(100));
        assert_eq!(poll_wait(Some(86_400_000)), POLL_CAP);
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_interval_still_leaves_one_last_poll_before_giving_up() {
        let now = Instant::now();
        let give_up = now + Duration::from_secs(1);
        let mut last = false;
        assert_eq!(
            next_poll(now, Duration::from_millis(100), give_up, &mut last),
            Some(now + Duration::from_millis(100))
        );
        assert!(!last);
        let late = next_poll(now, POLL_CAP, give_up, &mut last);
        assert_eq!(late, Some(give_up - LAST_POLL_MARGIN));
        assert!(last);
        assert_eq!(next_poll(give_up - LAST_POLL_MARGIN, POLL_FLOOR, give_up, &mut last), None);
    }

    #[test]
    fn a_terminal_status_is_kept_and_a_later_working_counts_as_a_revert() {
        let mut record = TaskRecord::default();
        for status in ["working", "working", "completed", "working", "failed"] {
            record.saw(status);
        }
        assert_eq!(record.status, "completed");
        assert_eq!(record.statuses, ["working", "completed", "working", "failed"]);
        assert_eq!(record.reverts, 1);
    }
}
