//! Replies that are not MCP (`html_page`, `not_jsonrpc`) and the 2026-07-28 transport errors (`protocol_error`),
//! read as raw HTTP: status, `Content-Type`, `Retry-After` and the body's bytes, stateless and inside a session.

use crate::util::*;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// Status, headers and body bytes of one response.
async fn raw(req: reqwest::RequestBuilder) -> (u16, HeaderMap, String) {
    let response = within("a response", req.send()).await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let body = within("a body", response.bytes()).await.unwrap();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn html_page_is_nginx_s_page_or_a_sign_in_page_with_no_json_rpc() {
    let server = HttpServer::start().await;
    let (status, headers, body) = raw(server.post_modern_call(1, "html_page", json!({"status": 502}))).await;
    assert_eq!((status, h(&headers, "content-type")), (502, "text/html; charset=utf-8"));
    assert_eq!(
        body,
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\
         \r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    );
    let (status, headers, body) =
        raw(server.post_modern_call(2, "html_page", json!({"status": 503, "retryAfterSec": 4}))).await;
    assert_eq!((status, h(&headers, "retry-after")), (503, "4"));
    assert!(body.contains("<title>503 Service Temporarily Unavailable</title>"), "{body}");
    let (status, headers, body) = raw(server.post_modern_call(3, "html_page", json!({"status": 200}))).await;
    assert_eq!((status, h(&headers, "content-type")), (200, "text/html; charset=utf-8"));
    assert!(body.starts_with("<!DOCTYPE html>") && body.contains("<form"), "{body}");
    let (_, _, body) = raw(server.post_modern_call(4, "html_page", json!({"status": 404}))).await;
    assert!(body.contains("status must be one of [200, 502, 503, 504]"), "{body}");
}

#[tokio::test]
async fn not_jsonrpc_is_json_without_a_json_rpc_member() {
    let server = HttpServer::start().await;
    for (id, status, expected) in
        [(1, 502, r#"{"message":"Bad Gateway","status":502}"#), (2, 200, r#"{"message":"OK","status":200}"#)]
    {
        let (got, headers, body) = raw(server.post_modern_call(id, "not_jsonrpc", json!({"status": status}))).await;
        assert_eq!((got, h(&headers, "content-type"), body.as_str()), (status, "application/json", expected));
    }
}

#[tokio::test]
async fn protocol_error_answers_400_with_each_2026_code_and_its_data() {
    let server = HttpServer::start().await;
    let mut bodies = Vec::new();
    for (id, code) in [(1, -32020), (2, -32021), (3, -32022)] {
        let (status, headers, body) = raw(server.post_modern_call(id, "protocol_error", json!({"code": code}))).await;
        assert_eq!((status, h(&headers, "content-type")), (400, "application/json"));
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((&body["id"], &body["error"]["code"]), (&json!(id), &json!(code)));
        bodies.push(body);
    }
    assert_eq!(bodies[1]["error"]["data"], json!({"requiredCapabilities": {"elicitation": {}}}));
    assert_eq!(bodies[2]["error"]["data"], json!({"requested": "2026-07-28", "supported": ["2025-11-25"]}));
}

#[tokio::test]
async fn inside_a_session_the_status_replaces_the_event_stream_and_the_session_survives() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (status, headers, body) =
        raw(server.post(&call(2, "html_page", json!({"status": 504}), None), Some(&sid))).await;
    assert_eq!((status, h(&headers, "content-type")), (504, "text/html; charset=utf-8"));
    assert!(body.contains("<title>504 Gateway Time-out</title>"), "{body}");
    let (status, _, body) =
        raw(server.post(&call(3, "protocol_error", json!({"code": -32022}), None), Some(&sid))).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["data"],
        json!({"requested": "2025-11-25", "supported": ["2025-06-18"]}),
        "no _meta: legacy"
    );
    let (status, content_type, body) = exchange(server.post(&call(4, "ping", json!({}), None), Some(&sid))).await;
    assert_eq!(status, 200);
    assert!(text_of(&messages(&content_type, &body.unwrap())[0]).contains(r#""status":"ok""#));
}

/// A header's value as text ("" when absent).
fn h<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}
