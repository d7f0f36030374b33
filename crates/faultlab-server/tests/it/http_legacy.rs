//! Every fault tool inside 2025-11-25 HTTP sessions, plus session loss, DELETE and the session registry.

use crate::util::*;
use faultlab_engine::recorder::{Event, TransportEventKind};
use faultlab_wire::MessageId;
use serde_json::{Value, json};

async fn session_call(server: &HttpServer, sid: &str, id: i64, tool: &str, args: Value) -> Vec<faultlab_wire::Frame> {
    let (status, content_type, body) = exchange(server.post(&call(id, tool, args, None), Some(sid))).await;
    assert_eq!(status, 200);
    messages(&content_type, &body.expect("a complete body"))
}

/// A ping `id` on session `sid` is answered, with its id (`why` says what that shows).
async fn assert_ping_answered(server: &HttpServer, sid: &str, id: i64, why: &str) {
    let frames = session_call(server, sid, id, "ping", json!({})).await;
    assert_eq!(frames[0].id(), Some(&MessageId::from(id)), "{why}");
}

#[tokio::test]
async fn wire_faults_work_inside_a_session_on_event_streams() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let frames = session_call(&server, &sid, 2, "ping", json!({})).await;
    assert!(text_of(&frames[0]).contains(r#""status":"ok""#));
    let frames = session_call(&server, &sid, 3, "duplicate_response", json!({})).await;
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].bytes(), frames[1].bytes());
    let frames = session_call(&server, &sid, 4, "malformed_message", json!({"variant": "missing-jsonrpc"})).await;
    assert!(frames[0].value().unwrap().get("jsonrpc").is_none());
    let frames = session_call(&server, &sid, 5, "list_changed_storm", json!({"count": 3})).await;
    assert_eq!(frames.len(), 4);
    let frames = session_call(&server, &sid, 6, "wrong_id", json!({})).await;
    assert_eq!(frames[0].value().unwrap()["id"], "6-wrong");
    let response = server.post(&call(7, "http_status", json!({"status": 503, "retryAfterSec": 1}), None), Some(&sid));
    let (status, _, _) = exchange(response).await;
    assert_eq!(status, 503);
    let (_, _, body) = exchange(server.post(&call(8, "disconnect", json!({}), None), Some(&sid))).await;
    assert!(body.is_err(), "the session's response stream is aborted");
    assert_ping_answered(&server, &sid, 9, "the session survives a stream abort").await;
}

#[tokio::test]
async fn response_after_cancellation_answers_on_the_open_stream() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let mut request = call(2, "response_after_cancellation", json!({}), None);
    request["params"]["_meta"] = json!({"progressToken": "late"});
    let response = server.post(&request, Some(&sid)).send().await.unwrap();
    let mut events = EventReader::new(response);
    let progress = events.next().await.unwrap().unwrap();
    assert_eq!(progress.method(), Some("notifications/progress"));
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}});
    assert_eq!(server.post(&cancel, Some(&sid)).send().await.unwrap().status(), 202);
    let late = events.next().await.unwrap().unwrap();
    assert_eq!(late.id(), Some(&MessageId::from(2)));
    assert_eq!(text_of(&late), "response sent after cancellation");
    assert!(events.next().await.is_none(), "exactly one late result, then the stream ends");
}

#[tokio::test]
async fn session_loss_during_request_interrupts_and_then_404s() {
    let server = HttpServer::start().await;
    let lost = server.open_session().await;
    let healthy = server.open_session().await;
    let (_, _, body) =
        exchange(server.post(&call(2, "session_loss", json!({"activation": "during_request"}), None), Some(&lost)))
            .await;
    assert!(body.is_err(), "no tool result: the response is interrupted");
    let (status, _, body) = exchange(server.post(&call(3, "ping", json!({}), None), Some(&lost))).await;
    assert_eq!(status, 404);
    let error: Value = serde_json::from_slice(&body.unwrap()).unwrap();
    assert_eq!(error["error"]["code"], -32001);
    assert_eq!(error["id"], 3);
    assert_ping_answered(&server, &healthy, 4, "other sessions are unaffected").await;
}

#[tokio::test]
async fn session_loss_after_response_delivers_the_result_first() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let frames = session_call(&server, &sid, 2, "session_loss", json!({"activation": "after_response"})).await;
    assert_eq!(text_of(&frames[0]), "session loss activated after_response");
    let (status, _, _) = exchange(server.post(&call(3, "ping", json!({}), None), Some(&sid))).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn delete_ends_a_session_and_frees_its_place() {
    let server = HttpServer::start_with(|o| faultlab_server::http::HttpOptions { max_sessions: 1, ..o }).await;
    let sid = server.open_session().await;
    let (status, _, _) = exchange(server.post(&initialize(1, "2025-11-25"), None)).await;
    assert_eq!(status, 503, "the cap of 1 is reached");
    let deleted = server.http.delete(&server.url).header("mcp-session-id", &sid).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    let (status, _, _) = exchange(server.post(&call(2, "ping", json!({}), None), Some(&sid))).await;
    assert_eq!(status, 404);
    server.open_session().await;
}

#[tokio::test]
async fn idle_sessions_are_reclaimed_by_the_timer() {
    let server = HttpServer::start_with(|o| faultlab_server::http::HttpOptions {
        max_sessions: 1,
        session_idle: std::time::Duration::from_millis(100),
        ..o
    })
    .await;
    let sid = server.open_session().await;
    // No new session is asked for: only the timer can free the place. Poll until it has.
    within("idle reclaim", async {
        loop {
            let (status, _, _) = exchange(server.post(&call(2, "ping", json!({}), None), Some(&sid))).await;
            if status == 404 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    })
    .await;
    server.open_session().await;
}

#[tokio::test]
async fn protocol_ping_liveness_round_trip_in_a_session() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let args = json!({"pingAfterMs": 0, "livenessTimeoutMs": 5000});
    let response = server.post(&call(2, "protocol_ping_liveness", args, None), Some(&sid)).send().await.unwrap();
    let mut events = EventReader::new(response);
    let ping = events.next().await.unwrap().unwrap();
    assert_eq!(ping.method(), Some("ping"), "{ping:?}");
    let answer = json!({"jsonrpc": "2.0", "id": ping.value().unwrap()["id"], "result": {}});
    assert_eq!(server.post(&answer, Some(&sid)).send().await.unwrap().status(), 202);
    let result = events.next().await.unwrap().unwrap();
    assert!(text_of(&result).contains("protocol_ping_succeeded"), "{result:?}");
}

#[tokio::test]
async fn a_failed_ping_with_close_on_failure_aborts_the_stream() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let args = json!({"pingAfterMs": 0, "livenessTimeoutMs": 50, "closeOnFailure": true});
    let response = server.post(&call(2, "protocol_ping_liveness", args, None), Some(&sid)).send().await.unwrap();
    let mut events = EventReader::new(response);
    assert_eq!(events.next().await.unwrap().unwrap().method(), Some("ping"));
    loop {
        match events.next().await {
            Some(Ok(frame)) => assert!(frame.id() != Some(&MessageId::from(2)), "no result may arrive: {frame:?}"),
            Some(Err(_)) => break,
            None => panic!("the stream must break off, not end cleanly"),
        }
    }
    let outcomes: Vec<_> = server
        .records()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::ProtocolPingLiveness { transport, .. } => Some(transport.outcome),
            Event::Transport { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes,
        [TransportEventKind::ClosureRequested, TransportEventKind::ClosureRequested, TransportEventKind::Closed]
    );
}

#[tokio::test]
async fn sessions_list_the_session_tools() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (_, content_type, body) =
        exchange(server.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), Some(&sid))).await;
    let list = messages(&content_type, &body.unwrap())[0].value().unwrap().clone();
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in ["session_loss", "response_after_cancellation", "http_status", "protocol_ping_liveness"] {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }
}

/// The faults the diagnostics record (armed / activated), in order, as (event, fault, request id).
fn fault_events(server: &HttpServer) -> Vec<(&'static str, String, Value)> {
    server
        .records()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::FaultArmed { fault, request_id } => Some(("armed", fault, request_id)),
            Event::FaultActivated { fault, request_id } => Some(("activated", fault, request_id)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_diagnostics_record_hang_and_session_loss_as_what_they_are() {
    let server = HttpServer::start().await;
    let lost = server.open_session().await;
    let (_, _, body) =
        exchange(server.post(&call(2, "session_loss", json!({"activation": "during_request"}), None), Some(&lost)))
            .await;
    assert!(body.is_err(), "the response is interrupted");
    let after = server.open_session().await;
    session_call(&server, &after, 3, "session_loss", json!({"activation": "after_response"})).await;
    assert_eq!(
        fault_events(&server),
        [
            ("armed", "session_loss".to_owned(), json!(2)),
            ("activated", "session_loss".to_owned(), json!(2)),
            ("armed", "session_loss".to_owned(), json!(3)),
        ],
        "not recorded as a disconnect, nor missing"
    );
    // A hang is recorded when the call arrives, though no reply ever comes.
    let hanging = tokio::spawn(server.post_modern_call(4, "hang", json!({})).send());
    within("the hang's diagnostic", async {
        while !fault_events(&server).contains(&("armed", "hang".to_owned(), json!(4))) {
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    hanging.abort();
}
