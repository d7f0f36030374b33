//! `faultlab serve` on stdio under bad input, through the real binary: a second `initialize`, an oversized
//! argument quoted back in an error, a request over the frame-size limit, and a bounded fuzz of malformed frames.
//! Every request with an id is answered and the server never exits silently.

use serde_json::{Value, json};

use crate::common::{Client, PATIENCE};

#[tokio::test]
async fn the_server_refuses_a_second_initialize_and_keeps_its_version() {
    let mut server = Client::spawn_peer(&["serve"]);
    let first: Value = serde_json::from_str(&server.initialize().await).unwrap();
    assert_eq!(first["result"]["protocolVersion"], "2025-11-25");
    server
        .send(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05",
            "capabilities":{},"clientInfo":{"name":"again","version":"1"}}}))
        .await;
    let second = server.recv().await;
    assert_eq!(second["id"], 1);
    assert_eq!(second["error"]["code"], -32600, "{second}");
    server.send(&json!({"jsonrpc":"2.0","id":2,"method":"ping"})).await;
    let ping = server.recv().await;
    assert_eq!(ping, json!({"jsonrpc":"2.0","id":2,"result":{}}), "still the 2025-11-25 session");
}

#[tokio::test]
async fn an_error_reply_quotes_a_few_kib_of_an_oversized_argument() {
    let mut server = Client::spawn_peer(&["serve"]);
    server.initialize().await;
    // Quotes escape twice in rmcp's message: unbounded, the reply would be about twice the argument.
    let argument = "\"".repeat(20_000);
    server.call(1, "delay", json!({"delayMs": argument})).await;
    let line = server.recv_raw().await.unwrap();
    assert!(line.len() < 8 * 1024, "the error quotes a few KiB, not the argument: {} bytes", line.len());
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["id"], 1);
    assert!(line.contains("truncated"), "{line}");
    server.send(&json!({"jsonrpc":"2.0","id":3,"method":"ping"})).await;
    assert_eq!(server.recv().await["id"], 3, "the server goes on");
}

#[tokio::test]
async fn a_request_over_the_frame_limit_gets_an_error_for_its_id_and_a_diagnostic() {
    let mut server = Client::spawn_peer(&["serve", "--max-frame-bytes", "65536"]);
    server.initialize().await;

    server.send_oversized_then_ping("delay", 70_000).await;
    let (code, stderr) = server.finish_output(PATIENCE).await;
    assert_eq!(code, Some(0));
    assert!(stderr.contains(r#""event":"dropped""#), "a diagnostic line says what was dropped: {stderr}");
}

#[tokio::test]
async fn a_request_rmcp_cannot_read_still_gets_an_error_for_its_id() {
    let mut server = Client::spawn_peer(&["serve"]);
    server.initialize().await;
    for line in [
        r#"{"id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":5}"#,
        r#"{"jsonrpc":"1.0","id":"three","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":4.5,"method":"ping"}"#,
    ] {
        server.send_raw(format!("{line}\n").as_bytes()).await;
    }
    server.send(&json!({"jsonrpc":"2.0","id":"last","method":"ping"})).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let reply = server.recv().await;
        assert!(reply["id"] == "last" || reply["error"]["code"] == -32600, "{reply}");
        ids.push(reply["id"].clone());
    }
    assert_eq!(ids, [json!(1), json!(2), json!("three"), json!(4.5), json!("last")]);
}
