//! `task_work`: task-augmented `tools/call` (the tasks extension, SEP-2663) over stdio and HTTP, and the task
//! faults, checked on the bytes: the handle's `resultType`, each `tasks/get`'s status and `pollIntervalMs`,
//! `tasks/result`, `tasks/list`, `tasks/cancel`, and the error codes.

use crate::util::*;
use faultlab_wire::{Frame, MessageId};
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn with_tasks() -> Value {
    json!({"extensions": {TASKS: {}}})
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn result(frame: &Frame) -> Value {
    frame.value().unwrap().get("result").cloned().unwrap_or_else(|| panic!("a result: {frame:?}"))
}

/// Reads frames until the reply to `id`.
async fn reply(c: &mut StdioClient, id: i64) -> Frame {
    loop {
        let frame = c.recv().await;
        if frame.id() == Some(&MessageId::from(id)) {
            return frame;
        }
    }
}

async fn start_task(c: &mut StdioClient, id: i64, args: Value) -> Value {
    c.call(id, "task_work", args).await;
    let handle = result(&reply(c, id).await);
    assert_eq!(handle["resultType"], "task", "{handle}");
    assert_eq!(handle["status"], "working", "{handle}");
    handle
}

async fn get(c: &mut StdioClient, id: i64, task_id: &str) -> Value {
    c.send(&request(id, "tasks/get", json!({"taskId": task_id}))).await;
    result(&reply(c, id).await)
}

/// Polls `tasks/get` (ids from `first`) until the status is not `working`, at most `polls` times, yielding to
/// the real clock between polls with the server's own `tasks/result` as the barrier when asked to.
async fn statuses_until_terminal(c: &mut StdioClient, first: i64, task_id: &str, polls: usize) -> Vec<Value> {
    let mut seen = Vec::new();
    for n in 0..polls {
        let task = get(c, first + n as i64, task_id).await;
        let terminal = task["status"] != "working";
        seen.push(task);
        if terminal {
            break;
        }
        // Waiting for the work: tasks/result blocks until the task is terminal (no fixed sleep).
        c.send(&request(first + 1000 + n as i64, "tasks/result", json!({"taskId": task_id}))).await;
        let _ = reply(c, first + 1000 + n as i64).await;
    }
    seen
}

#[tokio::test]
async fn the_server_advertises_the_tasks_extension() {
    let mut c = StdioClient::start(None).await;
    let mut init = initialize(1, "2025-11-25");
    init["params"]["capabilities"] = with_tasks();
    c.send(&init).await;
    let caps = &result(&c.recv().await)["capabilities"];
    assert!(caps["extensions"][TASKS].is_object(), "{caps}");
}

#[tokio::test]
async fn an_honest_task_is_working_then_completed_with_the_result_in_tasks_get_and_tasks_result() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    let handle = start_task(&mut c, 2, json!({"workMs": 50, "ttlMs": 5000})).await;
    assert_eq!(handle["pollIntervalMs"], 100);
    assert_eq!(handle["ttlMs"], 5000);
    let task_id = handle["taskId"].as_str().unwrap().to_owned();
    c.send(&request(3, "tasks/result", json!({"taskId": task_id}))).await;
    let answered = result(&reply(&mut c, 3).await);
    assert_eq!(answered["content"][0]["text"], "task work done after 50 ms", "{answered}");
    let done = get(&mut c, 4, &task_id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "task work done after 50 ms");
    assert_eq!(done["resultType"], "complete");
    // Terminal is final: asked again, it stays completed.
    assert_eq!(get(&mut c, 5, &task_id).await["status"], "completed");
    c.send(&request(6, "tasks/list", json!({}))).await;
    let listed = result(&reply(&mut c, 6).await);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["tasks"][0]["taskId"], task_id.as_str());
}

#[tokio::test]
async fn the_listing_says_each_tools_task_support_and_task_only_refuses_a_call_that_is_not_a_task() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    c.send(&request(2, "tools/list", json!({}))).await;
    let tools = result(&reply(&mut c, 2).await)["tools"].as_array().unwrap().clone();
    let support = |name: &str| {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} listed"));
        tool.pointer("/execution/taskSupport").cloned()
    };
    assert_eq!(support("task_only"), Some(json!("required")));
    assert_eq!(support("task_work"), Some(json!("optional")));
    assert_eq!(support("ping"), None, "every other tool lists nothing: forbidden");
    // The extension declared, but the 2025-11-25 call does not ask for a task (no params.task): -32021.
    c.call(3, "task_only", json!({"workMs": 0})).await;
    let refused = reply(&mut c, 3).await;
    assert_eq!(refused.value().unwrap()["error"]["code"], -32021, "{refused:?}");
    // Asked for (params.task): a task handle, as task_work gives.
    c.send(&request(4, "tools/call", json!({"name": "task_only", "arguments": {"workMs": 0}, "task": {}}))).await;
    assert_eq!(result(&reply(&mut c, 4).await)["resultType"], "task");
}

#[tokio::test]
async fn without_the_extension_the_call_answers_synchronously_or_with_error_32021_when_a_task_is_required() {
    let mut c = StdioClient::start_declaring(json!({})).await;
    c.call(2, "task_work", json!({"workMs": 0})).await;
    let sync = result(&reply(&mut c, 2).await);
    assert!(sync.get("resultType").is_none_or(|t| t == "complete"), "{sync}");
    assert_eq!(sync["isError"], false);
    c.call(3, "task_work", json!({"requireTask": true})).await;
    let refused = reply(&mut c, 3).await;
    let error = &refused.value().unwrap()["error"];
    assert_eq!(error["code"], -32021, "{refused:?}");
    assert!(error["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(), "{error}");
    // tasks/get from a client that did not declare the extension is refused the same way.
    c.send(&request(4, "tasks/get", json!({"taskId": "anything"}))).await;
    assert_eq!(reply(&mut c, 4).await.value().unwrap()["error"]["code"], -32021);
}

#[tokio::test]
async fn an_unknown_task_id_is_invalid_params() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    c.send(&request(2, "tasks/get", json!({"taskId": "no-such-task"}))).await;
    assert_eq!(reply(&mut c, 2).await.value().unwrap()["error"]["code"], -32602);
}

#[tokio::test]
async fn tasks_cancel_ends_a_running_task_cancelled() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    let handle = start_task(&mut c, 2, json!({"workMs": 30000})).await;
    let task_id = handle["taskId"].as_str().unwrap().to_owned();
    c.send(&request(3, "tasks/cancel", json!({"taskId": task_id}))).await;
    let ack = result(&reply(&mut c, 3).await);
    assert_eq!(ack, json!({"resultType": "complete"}));
    c.send(&request(4, "tasks/result", json!({"taskId": task_id}))).await;
    let error = reply(&mut c, 4).await;
    assert!(error.value().unwrap()["error"]["message"].as_str().unwrap().contains("cancelled"), "{error:?}");
    assert_eq!(get(&mut c, 5, &task_id).await["status"], "cancelled");
}

#[tokio::test]
async fn poll_interval_faults_put_zero_and_one_day_in_the_handle_and_every_get() {
    for (fault, interval) in [("poll_interval_zero", 0u64), ("poll_interval_huge", 86_400_000)] {
        let mut c = StdioClient::start_declaring(with_tasks()).await;
        let handle = start_task(&mut c, 2, json!({"workMs": 20, "fault": fault})).await;
        assert_eq!(handle["pollIntervalMs"], interval, "{fault}: {handle}");
        let task_id = handle["taskId"].as_str().unwrap().to_owned();
        for task in statuses_until_terminal(&mut c, 10, &task_id, 3).await {
            assert_eq!(task["pollIntervalMs"], interval, "{fault}: {task}");
        }
    }
}

#[tokio::test]
async fn stuck_working_says_working_past_its_ttl() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    let handle = start_task(&mut c, 2, json!({"ttlMs": 100, "fault": "stuck_working"})).await;
    assert_eq!(handle["ttlMs"], 100);
    let task_id = handle["taskId"].as_str().unwrap().to_owned();
    // Time must pass beyond the 100 ms ttl on the server's clock (rmcp's task manager reads the wall clock, so a
    // paused tokio clock cannot stand in): the `delay` tool's reply comes 300 ms later.
    c.call(3, "delay", json!({"delayMs": 300})).await;
    let _ = reply(&mut c, 3).await;
    let task = get(&mut c, 4, &task_id).await;
    assert_eq!(task["status"], "working", "{task}");
    assert_eq!(task["ttlMs"], 100);
    let created = chrono_ms(task["createdAt"].as_str().unwrap());
    let updated = chrono_ms(task["lastUpdatedAt"].as_str().unwrap());
    assert!(updated >= created);
}

fn chrono_ms(stamp: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(stamp).unwrap().timestamp_millis()
}

#[tokio::test]
async fn status_reverts_goes_back_to_working_after_a_terminal_status() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    let handle = start_task(&mut c, 2, json!({"workMs": 20, "fault": "status_reverts"})).await;
    let task_id = handle["taskId"].as_str().unwrap().to_owned();
    let seen = statuses_until_terminal(&mut c, 10, &task_id, 3).await;
    assert_eq!(seen.last().unwrap()["status"], "completed", "{seen:?}");
    let again = get(&mut c, 20, &task_id).await;
    assert_eq!(again["status"], "working", "{again}");
    assert!(again.get("result").is_none(), "{again}");
}

#[tokio::test]
async fn failed_and_cancelled_end_the_task_so() {
    for (fault, status) in [("failed", "failed"), ("cancelled", "cancelled")] {
        let mut c = StdioClient::start_declaring(with_tasks()).await;
        let handle = start_task(&mut c, 2, json!({"workMs": 10, "fault": fault})).await;
        let task_id = handle["taskId"].as_str().unwrap().to_owned();
        let seen = statuses_until_terminal(&mut c, 10, &task_id, 3).await;
        let last = seen.last().unwrap();
        assert_eq!(last["status"], status, "{fault}: {seen:?}");
        if fault == "failed" {
            assert_eq!(last["error"]["code"], -32603, "{last}");
            c.send(&request(30, "tasks/result", json!({"taskId": task_id}))).await;
            assert_eq!(reply(&mut c, 30).await.value().unwrap()["error"]["code"], -32603);
        }
    }
}

#[tokio::test]
async fn result_never_holds_tasks_result_open_while_tasks_get_says_completed() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    let handle = start_task(&mut c, 2, json!({"workMs": 0, "fault": "result_never"})).await;
    let task_id = handle["taskId"].as_str().unwrap().to_owned();
    c.send(&request(3, "tasks/result", json!({"taskId": task_id}))).await;
    // The connection still answers: a later call comes back while request 3 stays unanswered.
    c.call(4, "delay", json!({"delayMs": 50})).await;
    let next = c.recv().await;
    assert_eq!(next.id(), Some(&MessageId::from(4)), "tasks/result must not answer: {next:?}");
    assert_eq!(get(&mut c, 5, &task_id).await["status"], "completed");
}

#[tokio::test]
async fn the_tasks_of_a_connection_are_bounded() {
    let mut c = StdioClient::start_declaring(with_tasks()).await;
    for n in 0..16 {
        start_task(&mut c, 100 + n, json!({"workMs": 30000})).await;
    }
    c.call(200, "task_work", json!({"workMs": 30000})).await;
    let refused = result(&reply(&mut c, 200).await);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused["content"][0]["text"].as_str().unwrap().contains("16 tasks"), "{refused}");
}

#[tokio::test]
async fn a_task_over_modern_stateless_http_is_polled_to_completion() {
    let server = HttpServer::start().await;
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = with_tasks();
    let post = |body: Value, method: &str, name: Option<&str>| {
        let mut req =
            server.post(&body, None).header("mcp-protocol-version", "2026-07-28").header("mcp-method", method);
        if let Some(name) = name {
            req = req.header("mcp-name", name);
        }
        req
    };
    let body = call(2, "task_work", json!({"workMs": 0}), Some(meta.clone()));
    let (status, _, bytes) = exchange(post(body, "tools/call", Some("task_work"))).await;
    assert_eq!(status, 200);
    let handle: Value = serde_json::from_slice(&bytes.unwrap()).unwrap();
    assert_eq!(handle["result"]["resultType"], "task", "{handle}");
    let task_id = handle["result"]["taskId"].as_str().unwrap().to_owned();
    // tasks/result holds until the task is terminal; then tasks/get reports it.
    let body =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task_id, "_meta": meta}});
    let (status, _, bytes) = exchange(post(body, "tasks/result", Some(&task_id))).await;
    assert_eq!(status, 200);
    let answered: Value = serde_json::from_slice(&bytes.unwrap()).unwrap();
    assert_eq!(answered["result"]["content"][0]["text"], "task work done after 0 ms", "{answered}");
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task_id, "_meta": meta}});
    let (status, _, bytes) = exchange(post(body, "tasks/get", Some(&task_id))).await;
    assert_eq!(status, 200);
    let last: Value = serde_json::from_slice(&bytes.unwrap()).unwrap();
    assert_eq!(last["result"]["status"], "completed", "{last}");
}
