//! `task_lifecycle`: a task-augmented `tools/call` whose task misbehaves, as `variant` says (tasks extension).
//!
//! **What it does on the wire.** `faultlab serve`'s `task_work` tool, called by a client that declared the tasks
//! extension (`io.modelcontextprotocol/tasks`), answers with a task handle (`resultType: "task"`); the task then
//! misbehaves by `variant`, for real: `stuck_working`: the work never ends and every `tasks/get` says `working`,
//! also past the task's `ttlMs`; `poll_interval_zero`: `pollIntervalMs` is 0 in the handle and in every
//! `tasks/get`; `poll_interval_huge`: it is one day (86400000 ms); `status_reverts`: the first `tasks/get` after
//! the work says `completed` with the result, later ones say `working` again; `result_never`: `tasks/result` is
//! held open and never answers (until the client cancels it or leaves) while `tasks/get` says `completed`;
//! `failed`: the task ends `failed` (JSON-RPC error -32603); `cancelled`: the task ends `cancelled` although no one
//! cancelled it. A client that did not declare the extension gets the result synchronously. Only `faultlab serve`
//! commits it: a proxy cannot make another server's tasks misbehave, so its rules refuse it.
//!
//! **What a robust client should do.** Poll `tasks/get` at the suggested interval, within a floor and a cap of
//! its own (never a hot loop at 0, never a day's sleep past its deadline); give up at `createdAt + ttlMs` or its own
//! deadline and cancel; keep the first terminal status (terminal is final); bound its wait for `tasks/result` or
//! read the result from `tasks/get`; report `failed` and `cancelled` as not done, without retrying blindly.
//!
//! **Example.** `{"type": "task_lifecycle", "variant": "stuck_working"}`
//!
//! **How it is graded.** The reference client records each poll, the statuses it saw and any revert; a scenario's
//! `expect.task` checks the final status, the poll count bounds and whether the client cancelled.

use super::{Applied, Category};

/// The `pollIntervalMs` an honest task suggests, in ms.
pub const POLL_INTERVAL_MS: u64 = 100;
/// The `pollIntervalMs` of `poll_interval_huge`: one day, in ms.
pub const HUGE_POLL_INTERVAL_MS: u64 = 86_400_000;

/// How the task misbehaves.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum TaskVariant {
    /// The work never ends; `tasks/get` says `working` past `ttlMs`.
    StuckWorking,
    /// `pollIntervalMs` is 0.
    PollIntervalZero,
    /// `pollIntervalMs` is one day.
    PollIntervalHuge,
    /// A terminal status goes back to `working` on the next `tasks/get`.
    StatusReverts,
    /// `tasks/result` never answers.
    ResultNever,
    /// The task ends `failed`.
    Failed,
    /// The task ends `cancelled`, uncancelled.
    Cancelled,
}

/// How a task's work ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnding {
    /// It never does.
    Never,
    Completed,
    /// `failed`, with a JSON-RPC internal error.
    Failed,
    /// `cancelled`, though no one cancelled it.
    Cancelled,
}

impl TaskVariant {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

fault! {
    /// A task-augmented call whose task misbehaves as `variant` says (faultlab serve's task_work only).
    #[derive(Copy)]
    pub struct TaskLifecycle {
        pub variant: TaskVariant,
    }
    category: Temporal,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("task_work")),
    examples: [
        r#"{"type": "task_lifecycle", "variant": "stuck_working"}"#,
        r#"{"type": "task_lifecycle", "variant": "poll_interval_zero"}"#,
        r#"{"type": "task_lifecycle", "variant": "poll_interval_huge"}"#,
        r#"{"type": "task_lifecycle", "variant": "status_reverts"}"#,
        r#"{"type": "task_lifecycle", "variant": "result_never"}"#,
        r#"{"type": "task_lifecycle", "variant": "failed"}"#,
        r#"{"type": "task_lifecycle", "variant": "cancelled"}"#,
    ],
    serve_only: SERVE_ONLY,
    category_of: |fault| match fault.variant {
        TaskVariant::StatusReverts => Category::Protocol,
        TaskVariant::Failed | TaskVariant::Cancelled => Category::Systemic,
        _ => Category::Temporal,
    },
    apply: |_, reply, _| Applied::skipped(reply, SERVE_ONLY.into()),
}

/// Why the proxy refuses it (and why the engine would pass the reply unchanged).
const SERVE_ONLY: &str = "task_lifecycle is committed by faultlab serve's task_work tool (the task's own \
                          behaviour); a proxy cannot make another server's tasks misbehave";

/// The one reading of the variants: `faultlab serve`'s `task_work` builds its task from it.
impl TaskLifecycle {
    /// The `pollIntervalMs` the handle and every `tasks/get` suggest, in ms.
    pub fn poll_interval_ms(&self) -> u64 {
        match self.variant {
            TaskVariant::PollIntervalZero => 0,
            TaskVariant::PollIntervalHuge => HUGE_POLL_INTERVAL_MS,
            _ => POLL_INTERVAL_MS,
        }
    }

    /// How the task's work ends.
    pub fn ending(&self) -> TaskEnding {
        match self.variant {
            TaskVariant::StuckWorking => TaskEnding::Never,
            TaskVariant::Failed => TaskEnding::Failed,
            TaskVariant::Cancelled => TaskEnding::Cancelled,
            _ => TaskEnding::Completed,
        }
    }

    /// Whether a `tasks/get` after the first that reported the terminal status says `working` again.
    pub fn reverts(&self) -> bool {
        self.variant == TaskVariant::StatusReverts
    }

    /// Whether `tasks/result` is held open for ever.
    pub fn holds_result(&self) -> bool {
        self.variant == TaskVariant::ResultNever
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::FaultKind;

    #[test]
    fn the_variants_read_as_the_server_applies_them_and_the_proxy_refuses_them() {
        let read = |variant: &str| TaskLifecycle { variant: serde_json::from_value(variant.into()).unwrap() };
        assert_eq!(read("poll_interval_zero").poll_interval_ms(), 0);
        assert_eq!(read("poll_interval_huge").poll_interval_ms(), 86_400_000);
        assert_eq!(read("failed").poll_interval_ms(), POLL_INTERVAL_MS);
        assert_eq!(read("stuck_working").ending(), TaskEnding::Never);
        assert_eq!(read("cancelled").ending(), TaskEnding::Cancelled);
        assert_eq!(read("result_never").ending(), TaskEnding::Completed);
        assert!(read("status_reverts").reverts() && !read("failed").reverts());
        assert!(read("result_never").holds_result());
        let fault = FaultKind::from(read("failed"));
        assert!(fault.serve_only().is_some_and(|why| why.contains("task_work")));
        let reply = frame(RESULT);
        let applied = fault.apply_checked(Reply { frame: &reply, request: None }, &Default::default());
        assert_eq!(applied.actions, unchanged(Reply { frame: &reply, request: None }));
        assert!(applied.skipped.is_some());
    }
}
