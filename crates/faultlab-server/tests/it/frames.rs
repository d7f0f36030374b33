//! No panic and no lost connection on any input line: random bytes, truncated messages, odd JSON.

use crate::util::*;
use proptest::prelude::*;
use serde_json::json;

const VALID: &str = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ping","arguments":{}}}"#;

fn garbage_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..200),
        (0usize..VALID.len()).prop_map(|cut| VALID.as_bytes()[..cut].to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":null,"result":{}}"#.to_vec()),
        Just(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call"}"#.to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_stdio_server_survives_any_lines(lines in proptest::collection::vec(garbage_line(), 1..6)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let mut c = StdioClient::start(Some("2025-11-25")).await;
            for line in &lines {
                let mut bytes = line.clone();
                bytes.push(b'\n');
                c.send_raw(&bytes).await;
            }
            c.call(4242, "ping", json!({})).await;
            loop {
                let reply = c.recv().await;
                if reply.id() == Some(&faultlab_wire::MessageId::from(4242)) {
                    break;
                }
            }
            assert!(!c.server.is_finished(), "the server is still serving");
        });
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn the_http_front_answers_any_body(body in garbage_line()) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let server = HttpServer::start().await;
            let request = server.http.post(&server.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.clone());
            let (status, _, _) = exchange(request).await;
            assert!((200..500).contains(&status), "status {status}");
            let (status, _, _) = exchange(server.post_modern_call(1, "ping", json!({}))).await;
            assert_eq!(status, 200);
        });
    }
}
