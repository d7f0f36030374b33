//! `task_work`: a tool that runs as a task (the `io.modelcontextprotocol/tasks` extension, SEP-2663, as rmcp
//! 3.11 implements it), and the task faults servers commit.
//!
//! A client that declares the tasks extension (in `initialize`, or in a 2026-07-28 request's
//! `clientCapabilities`) gets a task handle (`resultType: "task"`) instead of the result; the work then runs in
//! rmcp's [`TaskManager`] for `workMs` of real time, and `tasks/get`, `tasks/update` and `tasks/cancel` answer
//! from it. The 2025-11-25 methods `tasks/result` (blocks until the task is terminal, then answers with the
//! call's result or error) and `tasks/list` are answered too, as custom methods rmcp passes through. A client
//! that did not declare the extension gets the result synchronously, or, with `requireTask`, the JSON-RPC error
//! -32021 "Missing required client capability" naming the extension.
//!
//! Every connection (stdio connection, 2025-11-25 HTTP session) has its own [`TaskBook`], bounded to
//! [`MAX_TASKS`] tasks and shut down (every running task aborted) when the connection ends. 2026-07-28 stateless
//! requests share one book for the process, bounded to [`MAX_STATELESS_TASKS`], whose task ids are unguessable
//! UUIDs.

use super::{FaultServer, check_range, text_result};
use faultlab_engine::catalogue::{TaskEnding, TaskLifecycle, TaskVariant};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, CreateTaskResult, CustomResult, DetailedTask, ErrorCode,
    GetTaskParams, GetTaskResult, TaskPayload, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions, current_timestamp};
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Most tasks one connection holds at once (running, or terminal and still retained for its `ttlMs`).
pub const MAX_TASKS: usize = 16;
/// Most tasks the stateless (2026-07-28) requests of one process hold at once.
pub const MAX_STATELESS_TASKS: usize = 64;
/// Longest work a task does, in ms.
pub const MAX_WORK_MS: u64 = 30_000;
const DEFAULT_WORK_MS: u64 = 200;
/// Shortest and longest `ttlMs` a task is given, in ms (100 ms to 10 min), and the default (1 min).
pub const MIN_TTL_MS: u64 = 100;
pub const MAX_TTL_MS: u64 = 600_000;
const DEFAULT_TTL_MS: u64 = 60_000;
use faultlab_engine::catalogue::task_lifecycle::POLL_INTERVAL_MS;
/// How often a blocked `tasks/result` looks at its task again, in ms.
const RESULT_RECHECK_MS: u64 = 20;
/// How much longer than its advertised `ttlMs` a `stuck_working` task is really kept (so a book whose client
/// never cancels still frees the place).
const STUCK_RETENTION_FACTOR: u64 = 4;

#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskArgs {
    /// How long the work takes, in ms (0 to 30000; 200 when absent).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub work_ms: Option<u64>,
    /// The task's `ttlMs`, in ms (100 to 600000; 60000 when absent).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub ttl_ms: Option<u64>,
    /// The catalogue's `task_lifecycle` variant the task commits (none when absent): stuck_working,
    /// poll_interval_zero, poll_interval_huge, status_reverts, result_never, failed or cancelled.
    #[serde(default)]
    #[schemars(with = "TaskVariant")]
    pub fault: Option<TaskVariant>,
    /// The tool requires a task: a client that did not declare the tasks extension gets error -32021 (the
    /// catalogue's `task_required`).
    #[serde(default)]
    pub require_task: bool,
}

/// What the book knows of one task beyond rmcp's manager.
#[derive(Debug, Clone, Copy)]
struct Entry {
    fault: Option<TaskLifecycle>,
    /// The `ttlMs` the client was told (a `stuck_working` task is kept longer).
    ttl_ms: u64,
    /// A `tasks/get` has already reported its terminal status.
    reported_terminal: bool,
}

/// A connection's tasks: rmcp's [`TaskManager`] runs them; the book bounds them, remembers each one's fault, and
/// aborts them all when it is dropped (the connection or session ended).
pub struct TaskBook {
    manager: TaskManager,
    entries: Mutex<HashMap<String, Entry>>,
    cap: usize,
}

impl TaskBook {
    pub fn new(cap: usize) -> Self {
        Self { manager: TaskManager::new(), entries: Mutex::new(HashMap::new()), cap }
    }

    /// The book the stateless requests of this process share.
    pub fn stateless() -> Arc<Self> {
        static BOOK: OnceLock<Arc<TaskBook>> = OnceLock::new();
        BOOK.get_or_init(|| Arc::new(Self::new(MAX_STATELESS_TASKS))).clone()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets the tasks the manager no longer has (evicted after their ttl); what is left counts against the cap.
    fn live(&self) -> usize {
        let mut entries = self.entries();
        entries.retain(|id, _| self.manager.get_task(id).is_ok());
        entries.len()
    }

    fn entry(&self, task_id: &str) -> Option<Entry> {
        self.entries().get(task_id).copied()
    }

    /// Tasks known to this book, for `tasks/list`, in creation order.
    fn list(&self) -> Vec<DetailedTask> {
        self.live();
        let ids: Vec<(String, Entry)> = self.entries().iter().map(|(id, e)| (id.clone(), *e)).collect();
        let mut tasks: Vec<DetailedTask> = ids
            .into_iter()
            .filter_map(|(id, entry)| self.manager.get_task(&id).ok().map(|t| shown(t, entry)))
            .collect();
        tasks.sort_by(|a, b| a.task.created_at.cmp(&b.task.created_at));
        tasks
    }

    /// `tasks/get`: the manager's state, as the task's fault shows it.
    pub fn get(&self, task_id: &str) -> Result<DetailedTask, ErrorData> {
        let detailed = self.manager.get_task(task_id)?;
        let Some(entry) = self.entry(task_id) else { return Ok(detailed) };
        let terminal = detailed.status().is_terminal();
        let mut shown = shown(detailed, entry);
        if terminal {
            let mut entries = self.entries();
            if let Some(e) = entries.get_mut(task_id) {
                if e.fault.is_some_and(|f| f.reverts()) && e.reported_terminal {
                    // A terminal status is final; this one goes back to `working`.
                    let mut task = shown.task;
                    task.last_updated_at = current_timestamp();
                    shown = DetailedTask::new(task, TaskPayload::Working);
                }
                e.reported_terminal = true;
            }
        }
        Ok(shown)
    }
}

impl Drop for TaskBook {
    fn drop(&mut self) {
        // The connection or session is over: its tasks' work stops and their places are free.
        self.manager.shutdown();
    }
}

/// The task as the client is told: the advertised `ttlMs` (a stuck task is kept longer than it says).
fn shown(mut detailed: DetailedTask, entry: Entry) -> DetailedTask {
    detailed.task.ttl_ms = Some(entry.ttl_ms);
    detailed
}

fn declared_tasks(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities().is_some_and(|caps| caps.supports_tasks())
}

/// The work itself: `work_ms` of real time, then the result the fault calls for; a `tasks/cancel` stops it.
async fn work(
    ending: TaskEnding,
    work_ms: u64,
    context: rmcp::task_manager::TaskContext,
) -> Result<rmcp::model::CallToolResult, TaskExit> {
    let finished = async {
        if ending == TaskEnding::Never {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(Duration::from_millis(work_ms)).await;
    };
    tokio::select! {
        () = finished => {}
        () = context.cancelled() => return Err(TaskExit::Cancelled),
    }
    match ending {
        TaskEnding::Failed => {
            Err(TaskExit::Error(ErrorData::internal_error("faultlab: the task failed on purpose", None)))
        }
        TaskEnding::Cancelled => Err(TaskExit::Cancelled),
        TaskEnding::Completed | TaskEnding::Never => Ok(text_result(format!("task work done after {work_ms} ms"))),
    }
}

#[tool_router(router = tasks_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "As task_work, but its tools/list entry says execution.taskSupport required: a call that is \
                          not task-augmented (a 2025-11-25 call without params.task, or a client that did not \
                          declare the tasks extension) gets the error -32021 (task_required). Arguments as \
                          task_work's; requireTask is implied.")]
    async fn task_only(
        &self,
        Parameters(args): Parameters<TaskArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // 2026-07-28 has no `params.task`: a request that declares the extension asks for a task. rmcp does not
        // parse a 2025-11-25 call's `params.task`, so it is read from the request as the client sent it.
        let asked = super::is_modern(&ctx) || {
            let request = self.scope(&ctx)?.engine.request(&super::request_id(&ctx));
            request.and_then(|r| r.value().map(|v| v.pointer("/params/task").is_some_and(Value::is_object)))
                == Some(true)
        };
        if !asked {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        self.task_work(Parameters(TaskArgs { require_task: true, ..args }), ctx).await
    }

    #[tool(description = "Work for workMs as a task when the client declared the tasks extension \
                          (io.modelcontextprotocol/tasks): the reply is a task handle, then tasks/get, tasks/result, \
                          tasks/list, tasks/update and tasks/cancel answer. fault none, stuck_working, \
                          poll_interval_zero, poll_interval_huge, status_reverts, result_never, failed or \
                          cancelled (the catalogue's task_lifecycle variants). Without the extension the call \
                          answers synchronously, or with requireTask the error -32021 (task_required).")]
    async fn task_work(
        &self,
        Parameters(args): Parameters<TaskArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let work_ms = args.work_ms.unwrap_or(DEFAULT_WORK_MS);
        let ttl_ms = args.ttl_ms.unwrap_or(DEFAULT_TTL_MS);
        for (name, value, min, max) in [("workMs", work_ms, 0, MAX_WORK_MS), ("ttlMs", ttl_ms, MIN_TTL_MS, MAX_TTL_MS)]
        {
            if let Err(error) = check_range(name, value, min, max) {
                return Ok(super::tool_error(error).into());
            }
        }
        if !declared_tasks(&ctx) {
            if args.require_task {
                // The catalogue's `task_required`: the error it puts on the wire, as rmcp shapes it.
                return Err(ErrorData::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                ));
            }
            // No task: the same work, synchronously.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(work_ms)) => {}
                () = ctx.ct.cancelled() => return Ok(super::tool_error("The request was cancelled.").into()),
            }
            return Ok(text_result(format!(
                "work done after {work_ms} ms (no task: the client did not declare the tasks extension)"
            ))
            .into());
        }
        let book = self.tasks.clone();
        if book.live() >= book.cap {
            return Ok(super::tool_error(format!("{} tasks are already held on this connection", book.cap)).into());
        }
        // The task's behaviour is the catalogue entry's (`task_lifecycle`), read in one place.
        let fault = args.fault.map(|variant| TaskLifecycle { variant });
        let ending = fault.map_or(TaskEnding::Completed, |f| f.ending());
        let poll_ms = fault.map_or(POLL_INTERVAL_MS, |f| f.poll_interval_ms());
        // A stuck task ignores its advertised ttl; it is still dropped some time after, so its place frees.
        let kept_ms = if ending == TaskEnding::Never { ttl_ms * STUCK_RETENTION_FACTOR } else { ttl_ms };
        let options = TaskOptions::new().with_ttl_ms(kept_ms).with_poll_interval_ms(poll_ms);
        let mut task = book.manager.spawn(options, move |context| Box::pin(work(ending, work_ms, context)));
        book.entries().insert(task.task_id.clone(), Entry { fault, ttl_ms, reported_terminal: false });
        task.ttl_ms = Some(ttl_ms);
        Ok(CreateTaskResult::new(task).into())
    }
}

impl FaultServer {
    pub(super) async fn get_task_(&self, params: GetTaskParams) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&params.task_id).map(GetTaskResult::new)
    }

    pub(super) async fn cancel_task_(&self, params: CancelTaskParams) -> Result<(), ErrorData> {
        self.tasks.manager.cancel_task(&params.task_id)
    }

    pub(super) async fn update_task_(&self, params: UpdateTaskParams) -> Result<(), ErrorData> {
        self.tasks.manager.update_task(&params.task_id, params.input_responses)
    }

    /// The 2025-11-25 methods rmcp does not know: `tasks/result` and `tasks/list`; anything else is -32601.
    pub(super) async fn custom_(
        &self,
        method: &str,
        params: Option<Value>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        match method {
            "tasks/list" => {
                let tasks: Vec<Value> =
                    self.tasks.list().into_iter().map(|t| serde_json::to_value(t.task).unwrap_or_default()).collect();
                Ok(CustomResult::new(json!({"tasks": tasks})))
            }
            "tasks/result" => {
                let task_id = params
                    .as_ref()
                    .and_then(|p| p.get("taskId"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| ErrorData::invalid_params("tasks/result needs params.taskId (a string)", None))?
                    .to_owned();
                self.task_result(&task_id, ctx).await
            }
            _ => Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {method}"), None)),
        }
    }

    /// `tasks/result`: waits for the task to be terminal, then answers with the call's result (`completed`), its
    /// error (`failed`), or an error saying it was cancelled.
    async fn task_result(&self, task_id: &str, ctx: RequestContext<RoleServer>) -> Result<CustomResult, ErrorData> {
        let fault = self.tasks.entry(task_id).and_then(|e| e.fault);
        if fault.is_some_and(|f| f.holds_result()) {
            // Held open: no answer, until the client cancels the request or the connection ends.
            ctx.ct.cancelled().await;
            return Err(ErrorData::internal_error("tasks/result was cancelled; it was never going to answer", None));
        }
        loop {
            let detailed = self.tasks.manager.get_task(task_id)?;
            match detailed.payload {
                TaskPayload::Completed { result } => return Ok(CustomResult::new(Value::Object(result))),
                TaskPayload::Failed { error } => {
                    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
                    let message = error.get("message").and_then(Value::as_str).unwrap_or("task failed").to_owned();
                    return Err(ErrorData::new(ErrorCode(code as i32), message, error.get("data").cloned()));
                }
                TaskPayload::Cancelled => {
                    return Err(ErrorData::internal_error(format!("task {task_id} was cancelled"), None));
                }
                _ => {}
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(RESULT_RECHECK_MS)) => {}
                () = ctx.ct.cancelled() => return Err(ErrorData::internal_error("tasks/result was cancelled", None)),
            }
        }
    }
}
