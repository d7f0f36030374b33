//! Every catalogue example whose fault a server tool arms, through that tool over an in-process stdio
//! connection: the client sees the effect the fault's file promises (the proxy's fronts run every example in
//! `faultlab-proxy`'s `catalogue_examples`). The server has no unfaulted answer to compare with, so a padded
//! result (`oversized`, wrong data) counts as a result here.

use super::util::{StdioClient, call, modern_meta};
use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::observe::{self, Ending};
use faultlab_engine::catalogue::{Arms, Effect, Offered};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::{Instant, timeout_at};

/// How long a cell waits for a reply it expects none of, or for the reply still to come after a frame that is
/// not it (a non-JSON line, a reply with another id).
const ABSENCE: Duration = Duration::from_millis(300);

/// The tool that arms `fault` (written as the catalogue writes it) and its arguments; `None` where no tool does.
fn tool_for(fault: &Value) -> Option<(&'static str, Value)> {
    let parameter = |name: &str| fault[name].clone();
    Some(match fault["type"].as_str()? {
        "latency" => ("delay", json!({"delayMs": parameter("delay_ms")})),
        "disconnect" => ("disconnect", json!({})),
        "malformed" => ("malformed_message", json!({"variant": parameter("variant")})),
        "duplicate" => ("duplicate_response", json!({})),
        "wrong_id" => ("wrong_id", json!({})),
        "missing_id" => ("missing_id", json!({})),
        "truncated" => ("truncated_response", json!({})),
        "non_json_line" => ("non_json_line", json!({})),
        "framing" => ("framing", json!({"style": parameter("style")})),
        "oversized" => ("oversized_response", json!({"bytes": parameter("bytes")})),
        "split_write" => ("split_response", json!({"parts": parameter("parts")})),
        "progress_after_result" => ("progress_after_result", json!({})),
        "request_after_result" => ("request_after_result", json!({"method": parameter("method")})),
        "elicitation_complete_unknown" => ("elicitation_complete_unknown", json!({})),
        "list_changed_storm" => (
            "list_changed_storm",
            json!({"count": parameter("count"), "list": fault.get("list").cloned().unwrap_or(json!("tools"))}),
        ),
        "http_status" => {
            ("http_status", json!({"status": parameter("status"), "retryAfterSec": parameter("retry_after_sec")}))
        }
        "html_page" => {
            ("html_page", json!({"status": parameter("status"), "retryAfterSec": parameter("retry_after_sec")}))
        }
        "not_jsonrpc" => ("not_jsonrpc", json!({"status": parameter("status")})),
        "protocol_error" => ("protocol_error", json!({"code": parameter("code")})),
        "stream_cut" => {
            let ids = fault.get("ids").cloned().unwrap_or(json!(true));
            (
                "stream_cut",
                json!({"afterEvents": parameter("after_events"), "ids": ids, "retryMs": parameter("retry_ms")}),
            )
        }
        "stream_cut_again" => {
            ("stream_cut_again", json!({"retryMs": parameter("retry_ms"), "resumes": parameter("resumes")}))
        }
        "stream_retry" => ("stream_retry", json!({"retryMs": parameter("retry_ms")})),
        "empty_event_id" => ("empty_event_id", json!({"retryMs": parameter("retry_ms")})),
        "stream_replay" if fault["variant"] == "foreign" => {
            ("replay_foreign", json!({"retryMs": parameter("retry_ms")}))
        }
        "stream_replay" => ("replay_duplicate", json!({"retryMs": parameter("retry_ms")})),
        "resume_refused" => {
            ("resume_refused", json!({"status": parameter("status"), "retryMs": parameter("retry_ms")}))
        }
        "stream_lost" => ("stream_lost", json!({})),
        "session_lifecycle" => ("session_lifecycle", json!({"variant": parameter("variant")})),
        "session_expired_in_flight" => ("session_lifecycle", json!({"variant": "expire_in_flight"})),
        // This client does not declare the tasks extension: the call answers synchronously (a result), or, when
        // a task is required, with -32021. `tasks` checks each variant's task on the wire with the extension.
        "task_lifecycle" => ("task_work", json!({"workMs": 0, "fault": parameter("variant")})),
        "task_required" => ("task_work", json!({"workMs": 0, "requireTask": true})),
        // The first answer of each variant is a result (input_required, or an unknown resultType); `rounds`
        // checks the retries on the wire.
        "input_required" => ("input_rounds", json!({"fault": parameter("variant")})),
        // `through_tool` answers the server's requests as a robust client would, on a 2025-11-25 connection
        // (`askback` checks each variant's bytes and the answers the server records).
        "ask_back" => ("ask_client", json!({"ask": parameter("ask"), "fault": parameter("variant")})),
        // This client sends no progressToken: only `unknown_token` puts notifications on the wire, and the call
        // lasts count x everyMs whatever the shape (`askback` checks the values with a token).
        "progress_stream" => (
            "progress_stream",
            json!({"shape": parameter("shape"), "everyMs": parameter("every_ms"), "count": parameter("count")}),
        ),
        // Standing faults on later replies: `surface` runs them (the listing after the call is what changes).
        "list_drift" | "unknown_tool" => ("tool_list_drift", json!({"change": "removed"})),
        "broken_pagination" | "page_error" => ("list_pagination", json!({"variant": "stuck"})),
        name @ ("output_schema_violation"
        | "error_structured_content"
        | "missing_structured_content"
        | "content_structured_mismatch") => ("structured_output", json!({"fault": name})),
        _ => return None,
    })
}

/// Calls `tool` as request 2 and reads until its reply, the end of the output, or the deadline. For `ask_client`
/// the connection is a 2025-11-25 one whose client declares every feature (none for `undeclared`) and answers the
/// server's requests at once: accepts, a sampling reply, one root, or -32601 for a feature it did not declare.
async fn through_tool(tool: &'static str, arguments: Value, expected: Effect) -> Effect {
    let asks = tool == "ask_client";
    let declares = asks && arguments["fault"] != "undeclared";
    let mut client = if asks {
        let everything = json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}});
        StdioClient::start_declaring(if declares { everything } else { json!({}) }).await
    } else {
        StdioClient::start(None).await
    };
    client.send(&call(2, tool, arguments, (!asks).then(modern_meta))).await;
    let patience = if expected == Effect::Timeout { ABSENCE } else { super::util::PATIENCE };
    let mut until = Instant::now() + patience;
    let mut frames = Vec::new();
    let ended = loop {
        match timeout_at(until, client.recv_raw()).await {
            Err(_) => break Ending::Waited,
            Ok(None) => break Ending::Lost,
            Ok(Some(line)) => {
                let message = observe::parse(&line);
                frames.push(line);
                match message {
                    Some(m) if m.get("id") == Some(&json!(2)) => break Ending::Done,
                    Some(m) if m.get("method").is_some() => {
                        if let Some(id) = m.get("id").filter(|_| asks) {
                            client.send(&answer_as_a_robust_client(id, &m, declares)).await;
                        }
                    }
                    _ => until = until.min(Instant::now() + ABSENCE),
                }
            }
        }
    };
    client.server.abort();
    let read: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    // A client that validates holds a result to the schema the tool listed.
    let schema =
        (tool == "structured_output").then(|| Value::Object((*faultlab_server::tools::structured_schema()).clone()));
    observe::seen(&read, &json!(2), ended, None, schema.as_ref())
}

/// The answer a robust client gives to a server's request it gets during a call.
fn answer_as_a_robust_client(id: &Value, request: &Value, declared: bool) -> Value {
    let result = match request["method"].as_str() {
        _ if !declared => {
            return json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}});
        }
        Some("elicitation/create") if request["params"]["mode"] == "url" => json!({"action": "accept"}),
        Some("elicitation/create") => json!({"action": "accept", "content": {"confirm": true}}),
        Some("sampling/createMessage") => {
            json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "robust-client"})
        }
        _ => json!({"roots": [{"uri": "file:///robust-client"}]}),
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_a_tool_arms_has_its_effect() {
    let mut cells = Vec::new();
    for (_, examples) in FaultKind::examples() {
        for &example in examples {
            let fault: FaultKind = serde_json::from_str(example).unwrap();
            let armed_by = tool_for(&serde_json::to_value(&fault).unwrap());
            // `faultlab faults` names the tool from the catalogue: it must be the tool that arms the fault. (The
            // late response needs a cancellation, so its tool has its own tests instead of a cell here; the
            // catalogue names `replay_duplicate` for `stream_replay`, whose `foreign` variant `replay_foreign` arms.)
            let replay_foreign = armed_by.as_ref().is_some_and(|(tool, _)| *tool == "replay_foreign");
            if fault.name() != "late_response" && !replay_foreign {
                let named = fault.serve_tool().map(|tool| tool.name);
                assert_eq!(named, armed_by.as_ref().map(|(tool, _)| *tool), "{example}: SERVE_TOOL");
            }
            let Some((tool, arguments)) = armed_by else { continue };
            // This client speaks stdio, where an HTTP-only tool is not offered (its call would fail as an unknown
            // tool whatever the fault does): those run over HTTP in `http_modern`, `http_legacy` and `not_mcp`.
            // The session tools run in `resume` and `lifecycle`, where a 2025-11-25 session is.
            if fault.serve_tool().is_some_and(|t| matches!(t.offered, Offered::HttpOnly | Offered::Sessions)) {
                continue;
            }
            // A standing fault changes the connection's later replies, not this call's: `surface` checks those.
            if fault.serve_tool().is_some_and(|t| t.arms == Arms::LaterReplies) {
                continue;
            }
            let expected = match fault.effect() {
                Effect::WrongData => Effect::Result,
                effect => effect,
            };
            cells.push((example, expected, tokio::spawn(through_tool(tool, arguments, expected))));
        }
    }
    assert!(cells.len() >= 15, "{} examples have a tool", cells.len());
    let mut wrong = Vec::new();
    for (example, expected, cell) in cells {
        let seen = cell.await.unwrap();
        if seen != expected {
            wrong.push(format!("{example}: expected {}, the client saw {}", expected.name(), seen.name()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
