//! `session_lifecycle`: each way a server loses or refuses a legacy session, read as raw HTTP (status, JSON-RPC
//! error code, which later requests are refused and which still served).

use crate::util::*;
use faultlab_server::http::lifecycle::REFUSED_INITIALIZES;
use serde_json::{Value, json};

/// Status and JSON body of a request (Value::Null for an empty or SSE body).
async fn answer(req: reqwest::RequestBuilder) -> (u16, Value) {
    let (status, content_type, body) = exchange(req).await;
    let body = body.expect("a complete body");
    let value = if content_type.starts_with("application/json") {
        serde_json::from_slice(&body).unwrap()
    } else {
        messages(&content_type, &body).first().and_then(|f| f.value().cloned()).unwrap_or(Value::Null)
    };
    (status, value)
}

async fn lifecycle(server: &HttpServer, sid: &str, id: i64, variant: &str) -> (u16, Value) {
    answer(server.post(&call(id, "session_lifecycle", json!({"variant": variant}), None), Some(sid))).await
}

async fn ping(server: &HttpServer, sid: &str, id: i64) -> (u16, Value) {
    answer(server.post(&call(id, "ping", json!({}), None), Some(sid))).await
}

#[tokio::test]
async fn unknown_400_answers_the_forgotten_id_with_400_and_others_still_404() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (status, reply) = lifecycle(&server, &sid, 2, "unknown_400").await;
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["content"][0]["text"], "session lifecycle unknown_400 activated");
    let (status, body) = ping(&server, &sid, 3).await;
    assert_eq!((status, &body["error"]["code"], &body["id"]), (400, &json!(-32600), &json!(3)));
    let (status, body) = ping(&server, "never-issued", 4).await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!(-32001)));
}

#[tokio::test]
async fn get_404_refuses_only_the_get_stream() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    assert_eq!(lifecycle(&server, &sid, 2, "get_404").await.0, 200);
    let get = server
        .http
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25");
    let (status, body) = answer(get).await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!(-32001)));
    let (status, body) = ping(&server, &sid, 3).await;
    assert_eq!((status, &body["id"]), (200, &json!(3)), "POSTs on the session are still served");
}

#[tokio::test]
async fn restart_forgets_every_session_at_once() {
    let server = HttpServer::start().await;
    let (a, b) = (server.open_session().await, server.open_session().await);
    assert_eq!(lifecycle(&server, &a, 2, "restart").await.0, 200, "the restarting result is delivered");
    for (sid, id) in [(&a, 3), (&b, 4)] {
        let (status, body) = ping(&server, sid, id).await;
        assert_eq!((status, &body["error"]["code"]), (404, &json!(-32001)), "{sid}");
    }
    let fresh = server.open_session().await;
    assert_eq!(ping(&server, &fresh, 5).await.0, 200, "a new session after the restart works");
}

#[tokio::test]
async fn reinit_404_refuses_the_next_initializes_then_admits_one() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    assert_eq!(lifecycle(&server, &sid, 2, "reinit_404").await.0, 200);
    assert_eq!(ping(&server, &sid, 3).await.0, 404);
    for attempt in 0..REFUSED_INITIALIZES {
        let (status, body) = answer(server.post(&initialize(10, "2025-11-25"), None)).await;
        assert_eq!((status, &body["error"]["code"]), (404, &json!(-32001)), "initialize {attempt}");
    }
    let fresh = server.open_session().await;
    assert_eq!(ping(&server, &fresh, 4).await.0, 200, "the initialize after them is admitted");
}

#[tokio::test]
async fn expire_in_flight_answers_the_request_404_and_the_session_is_gone() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (status, body) = lifecycle(&server, &sid, 2, "expire_in_flight").await;
    assert_eq!((status, &body["id"], &body["error"]["code"]), (404, &json!(2), &json!(-32001)));
    assert_eq!(ping(&server, &sid, 3).await.0, 404);
}
