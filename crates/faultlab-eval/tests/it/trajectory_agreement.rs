//! The three readers of a trajectory (diagnose, eval's grader, replay) see the same calls, the same replies and
//! the same failures: one with an error reply, one a fault consumed, one whose reply came twice (from the server,
//! then by a `duplicate` fault), one never answered.

use faultlab_engine::recording::{CallKey, Recording};
use faultlab_engine::trajectory::Trajectory;
use faultlab_eval::evidence;
use serde_json::json;

fn frame(line: serde_json::Value) -> String {
    let mut line = line;
    let defaults = json!({"tsMs": 1.0, "scope": "stdio", "event": "frame", "action": "forwarded", "method": null,
        "tool": null, "rule": null, "fault": null, "executed": null, "bytes": 10});
    for (key, value) in defaults.as_object().unwrap() {
        line.as_object_mut().unwrap().entry(key.clone()).or_insert(value.clone());
    }
    line.to_string()
}

fn call(id: u32, tool: &str) -> String {
    frame(json!({"direction": "client_to_server", "id": id, "method": "tools/call", "tool": tool,
        "arguments": {"path": format!("f{id}")}}))
}

fn reply(id: u32, extra: serde_json::Value) -> String {
    let mut line = json!({"direction": "server_to_client", "id": id, "error": false,
        "body": {"jsonrpc": "2.0", "id": id, "result": {"content": []}}});
    line.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    frame(line)
}

fn trajectory() -> String {
    let lines = [
        r#"{"tsMs":0.0,"scope":"stdio","event":"run_started","seed":1,"rules":2}"#.to_owned(),
        // 2-3: a call that worked.
        call(1, "read_file"),
        reply(1, json!({})),
        // 4-5: a call whose reply is an error.
        call(2, "write_file"),
        reply(
            2,
            json!({"error": true, "body": {"jsonrpc": "2.0", "id": 2, "result": {"isError": true, "content": []}}}),
        ),
        // 6-7: a call whose reply a `timeout` fault consumed (the server executed it).
        call(3, "write_file"),
        reply(3, json!({"action": "consumed", "rule": "t", "fault": "timeout", "executed": true})),
        // 8-10: a call whose reply the server sent twice, the first faulted by `duplicate`.
        call(4, "read_file"),
        reply(4, json!({"action": "faulted", "rule": "d", "fault": "duplicate", "executed": true})),
        reply(4, json!({})),
        // 11: a call never answered.
        call(5, "list_dir"),
    ];
    lines.join("\n") + "\n"
}

#[test]
fn diagnose_the_grader_and_replay_agree_on_calls_replies_and_failures() {
    let text = trajectory();
    let diagnosed = faultlab_diagnose::parse(&text, None).unwrap();
    let graded = evidence::tool_calls(&evidence::read_trajectory(text.as_bytes()).unwrap());
    let shared = Trajectory::parse(&text).unwrap();
    let mut replayed = Recording::from_trajectory(&shared);

    // The same calls, at the same lines (eval cites 0-based lines, diagnose 1-based).
    let calls: Vec<(usize, &str)> = diagnosed.calls.iter().map(|c| (c.at, c.tool.as_str())).collect();
    let graded_calls: Vec<(usize, &str)> = graded.iter().map(|c| (c.index + 1, c.tool.as_str())).collect();
    assert_eq!(calls, [(2, "read_file"), (4, "write_file"), (6, "write_file"), (8, "read_file"), (11, "list_dir")]);
    assert_eq!(graded_calls, calls);

    // The same replies: the first with the call's id; a consumed one never reached the agent.
    let reached: Vec<Option<usize>> = graded.iter().map(|c| c.reply_index.map(|i| i + 1)).collect();
    assert_eq!(reached, [Some(3), Some(5), None, Some(9), None]);
    let diagnosed_at: Vec<Option<usize>> = diagnosed.calls.iter().map(|c| c.result.as_ref().map(|r| r.at)).collect();
    assert_eq!(diagnosed_at, [Some(3), Some(5), Some(7), Some(9), None]);
    assert_eq!(shared.tool_calls()[3].duplicates, [10]);

    // The same failures: the error, the fault that held the reply, the duplicated reply, the call never answered.
    let failed = [false, true, true, true, true];
    assert_eq!(graded.iter().map(|c| c.failed()).collect::<Vec<_>>(), failed);
    let diagnosed_failed: Vec<bool> = diagnosed.calls.iter().map(|c| c.result.is_none() || c.failed()).collect();
    assert_eq!(diagnosed_failed, failed);
    assert_eq!(shared.tool_calls().iter().map(|e| e.failed()).collect::<Vec<_>>(), failed);

    // Replay serves the server's first reply to each answered call, and has nothing for the unanswered one.
    let key = |id: u32, tool: &str| CallKey::new("tools/call", Some(tool), Some(&json!({"path": format!("f{id}")})));
    assert_eq!(replayed.len(), 4);
    assert_eq!(replayed.take(&key(2, "write_file")).unwrap()["result"]["isError"], true);
    assert_eq!(replayed.take(&key(4, "read_file")).unwrap()["id"], 4);
    assert!(replayed.take(&key(5, "list_dir")).is_none());
}
