//! What the HTTP front refuses before anything reaches the MCP handler.

use crate::util::*;
use serde_json::json;

#[tokio::test]
async fn path_host_origin_method_and_size_checks() {
    let server = HttpServer::start().await;
    let ping = call(1, "ping", json!({}), Some(modern_meta()));

    let wrong_path = server.http.post(format!("http://{}/other", server.addr)).body("{}").send().await.unwrap();
    assert_eq!(wrong_path.status(), 404);

    let (status, _, body) =
        exchange(server.post_modern_call(1, "ping", json!({})).header("host", "evil.example")).await;
    assert_eq!(status, 403);
    assert!(String::from_utf8_lossy(&body.unwrap()).contains("Host"));

    let (status, _, _) =
        exchange(server.post_modern_call(1, "ping", json!({})).header("origin", "http://evil.example")).await;
    assert_eq!(status, 403);
    let (status, _, _) =
        exchange(server.post_modern_call(1, "ping", json!({})).header("origin", "http://localhost:8080")).await;
    assert_eq!(status, 200, "a loopback origin is allowed");

    let put = server.http.put(&server.url).body(ping.to_string()).send().await.unwrap();
    assert_eq!(put.status(), 405);

    let huge = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ping", "arguments": {"pad": "x".repeat(5 * 1024 * 1024)}}});
    let (status, _, _) = exchange(server.post(&huge, None)).await;
    assert_eq!(status, 413);
}

#[tokio::test]
async fn an_unknown_session_is_404_with_json_rpc_error() {
    let server = HttpServer::start().await;
    let (status, _, body) = exchange(server.post(&call(7, "ping", json!({}), None), Some("no-such-session"))).await;
    assert_eq!(status, 404);
    let error: serde_json::Value = serde_json::from_slice(&body.unwrap()).unwrap();
    assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (json!(7), json!(-32001)));
}

#[tokio::test]
async fn shutdown_refuses_new_requests_and_ends_the_server() {
    let mut server = HttpServer::start().await;
    let sid = server.open_session().await;
    // A request held open must not keep the server from stopping.
    let hanging = server.post(&call(2, "hang", json!({}), None), Some(&sid)).send();
    let hanging = tokio::spawn(hanging);
    server.shutdown.cancel();
    within("server shutdown", &mut server.task).await.unwrap().unwrap();
    let after = server.post_modern_call(3, "ping", json!({})).send().await;
    assert!(after.is_err() || after.unwrap().status() == 503, "nothing is served after shutdown");
    let _ = within("the held request to end", hanging).await;
}

#[tokio::test]
async fn a_body_of_a_million_tiny_values_is_refused_naming_the_limit_before_it_is_parsed() {
    let server = HttpServer::start().await;
    // `{},` over and over: under the 4 MiB body limit, and about 100 times its size once parsed.
    let start = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ping","arguments":{"pad":["#;
    let mut wide = start.to_owned();
    wide.push_str(&"{},".repeat((4 * 1024 * 1024 - 200) / 3));
    wide.push_str("{}]}}}");
    let post = server
        .http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(wide);
    let (status, _, body) = exchange(post).await;
    assert_eq!(status, 413);
    let error: serde_json::Value = serde_json::from_slice(&body.unwrap()).unwrap();
    assert_eq!(error["id"], 7, "the id is read from the body's start: {error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("JSON elements"), "{error}");
    let (status, _, _) = exchange(server.post_modern_call(8, "ping", json!({}))).await;
    assert_eq!(status, 200, "the server goes on");
}
