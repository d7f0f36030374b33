//! Every fault tool over 2026-07-28 stateless HTTP, observed as raw HTTP responses.

use crate::util::*;
use faultlab_engine::recorder::{Event, TransportEventKind};
use faultlab_wire::{Kind, MessageId};
use futures::StreamExt;
use serde_json::{Value, json};
use std::time::Duration;

async fn call(server: &HttpServer, id: i64, tool: &str, args: Value) -> (u16, String, Vec<faultlab_wire::Frame>) {
    let (status, content_type, body) = exchange(server.post_modern_call(id, tool, args)).await;
    let body = body.expect("a complete body");
    (status, content_type.clone(), messages(&content_type, &body))
}

#[tokio::test]
async fn ping_delay_and_argument_errors() {
    let server = HttpServer::start().await;
    let (status, content_type, frames) = call(&server, 1, "ping", json!({})).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert!(text_of(&frames[0]).contains(r#""status":"ok""#));
    let (_, _, frames) = call(&server, 2, "delay", json!({"delayMs": 20})).await;
    assert_eq!(text_of(&frames[0]), r#"{"status":"delayed","delayMs":20}"#);
    let (_, _, frames) = call(&server, 3, "delay", json!({"delayMs": -1})).await;
    assert_eq!(frames[0].value().unwrap()["result"]["isError"], true);
}

#[tokio::test]
async fn hang_holds_the_request_until_the_client_gives_up() {
    let server = HttpServer::start().await;
    let hung =
        tokio::time::timeout(Duration::from_millis(300), server.post_modern_call(1, "hang", json!({})).send()).await;
    assert!(hung.is_err(), "no response while hanging");
    let (status, _, frames) = call(&server, 2, "ping", json!({})).await;
    assert_eq!((status, frames[0].id()), (200, Some(&MessageId::from(2))), "the server still answers");
}

#[tokio::test]
async fn disconnect_aborts_the_response_and_the_listener_stays_up() {
    let server = HttpServer::start().await;
    let (status, content_type, body) = exchange(server.post_modern_call(1, "disconnect", json!({}))).await;
    // The response starts (a client sees its head), then breaks off: not a connection closed with no answer.
    assert_eq!((status, content_type.as_str()), (200, "text/event-stream"), "{body:?}");
    assert!(body.is_err(), "the body must break off: {body:?}");
    let (status, _, _) = call(&server, 2, "ping", json!({})).await;
    assert_eq!(status, 200);
    let closed = server.records().into_iter().any(|r| {
        matches!(r.event, Event::Transport { outcome: TransportEventKind::Closed, request_id: Some(ref id), .. } if *id == 1)
    });
    assert!(closed, "{:?}", server.records());
}

#[tokio::test]
async fn malformed_duplicate_and_id_faults() {
    let server = HttpServer::start().await;
    let (_, _, frames) = call(&server, 1, "malformed_message", json!({"variant": "invalid-jsonrpc-version"})).await;
    assert_eq!(frames[0].value().unwrap()["jsonrpc"], "1.0");
    let (_, content_type, frames) = call(&server, 2, "duplicate_response", json!({})).await;
    assert_eq!(content_type, "text/event-stream", "a JSON reply sent twice needs an event stream");
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].bytes(), frames[1].bytes());
    assert_eq!(frames[0].id(), Some(&MessageId::from(2)));
    let (_, _, frames) = call(&server, 3, "wrong_id", json!({})).await;
    assert_eq!(frames[0].value().unwrap()["id"], "3-wrong");
    let (_, _, frames) = call(&server, 4, "missing_id", json!({})).await;
    assert!(frames[0].value().unwrap().get("id").is_none());
}

#[tokio::test]
async fn truncated_non_json_and_framing_faults() {
    let server = HttpServer::start().await;
    let (_, _, frames) = call(&server, 1, "truncated_response", json!({})).await;
    assert_eq!(frames[0].kind(), &Kind::Unparsable);
    let (_, _, frames) = call(&server, 2, "non_json_line", json!({})).await;
    assert_eq!(frames[0].bytes().as_ref(), b"faultlab: this line is not JSON-RPC");
    assert_eq!(frames[1].id(), Some(&MessageId::from(2)));
    let (_, _, body) = exchange(server.post_modern_call(3, "framing", json!({"style": "crlf"}))).await;
    let body = body.unwrap();
    assert!(body.windows(2).any(|w| w == b"\r\n") && !body.windows(2).any(|w| w[0] != b'\r' && w[1] == b'\n'));
    let (_, _, body) = exchange(server.post_modern_call(4, "framing", json!({"style": "bom"}))).await;
    assert!(sse_data(&body.unwrap())[0].starts_with('\u{feff}'));
}

#[tokio::test]
async fn oversized_split_progress_and_storm() {
    let server = HttpServer::start().await;
    let (_, _, frames) = call(&server, 1, "oversized_response", json!({"bytes": 2_000_000})).await;
    assert!(frames[0].bytes().len() > 2_000_000);

    let response = server.post_modern_call(2, "split_response", json!({"parts": 8})).send().await.unwrap();
    let chunks: Vec<_> = response.bytes_stream().map(|c| c.unwrap()).collect().await;
    assert!(chunks.len() > 1, "one reply in several body chunks");
    let joined: Vec<u8> = chunks.concat();
    assert_eq!(messages("text/event-stream", &joined)[0].id(), Some(&MessageId::from(2)));

    let mut request = crate::util::call(3, "progress_after_result", json!({}), Some(modern_meta()));
    request["params"]["_meta"]["progressToken"] = json!("p3");
    let req = server
        .post(&request, None)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "progress_after_result");
    let (_, content_type, body) = exchange(req).await;
    let frames = messages(&content_type, &body.unwrap());
    assert_eq!(frames[0].id(), Some(&MessageId::from(3)));
    assert_eq!(frames[1].value().unwrap()["params"]["progressToken"], "p3");

    let (_, _, frames) = call(&server, 4, "list_changed_storm", json!({"count": 20})).await;
    assert_eq!(frames.len(), 21);
    assert!(frames[..20].iter().all(|f| f.method() == Some("notifications/tools/list_changed")));
}

#[tokio::test]
async fn http_status_replaces_the_response() {
    let server = HttpServer::start().await;
    for (id, status) in [(1, 401), (2, 403), (3, 404), (4, 429), (5, 500), (6, 503)] {
        let args = json!({"status": status, "retryAfterSec": 7});
        let response = server.post_modern_call(id, "http_status", args).send().await.unwrap();
        assert_eq!(response.status().as_u16(), status);
        let headers = response.headers().clone();
        if status == 401 {
            assert!(headers["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
        }
        assert_eq!(headers["retry-after"], "7");
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_eq!(body["id"], id);
        assert_eq!(body["error"]["data"]["httpStatus"], status);
    }
    let (_, _, frames) = call(&server, 9, "http_status", json!({"status": 200})).await;
    assert!(text_of(&frames[0]).contains("status must be one of"));
}

#[tokio::test]
async fn liveness_is_unsupported_and_session_tools_are_absent() {
    let server = HttpServer::start().await;
    let (_, _, frames) =
        call(&server, 1, "protocol_ping_liveness", json!({"pingAfterMs": 0, "livenessTimeoutMs": 50})).await;
    assert!(text_of(&frames[0]).contains(r#""outcome":"unsupported""#));
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let req = server.post(&list, None).header("mcp-protocol-version", "2026-07-28").header("mcp-method", "tools/list");
    let (_, content_type, body) = exchange(req).await;
    let tools = messages(&content_type, &body.unwrap())[0].value().unwrap()["result"]["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"http_status") && names.contains(&"duplicate_response"));
    assert!(!names.contains(&"session_loss") && !names.contains(&"response_after_cancellation"), "{names:?}");
}

#[tokio::test]
async fn a_legacy_request_without_a_session_is_served_statelessly() {
    let server = HttpServer::start().await;
    let req = server
        .post(&crate::util::call(1, "duplicate_response", json!({}), None), None)
        .header("mcp-protocol-version", "2025-11-25");
    let (status, content_type, body) = exchange(req).await;
    assert_eq!(status, 200);
    let frames = messages(&content_type, &body.unwrap());
    assert_eq!(frames.len(), 2, "{frames:?}");
}
