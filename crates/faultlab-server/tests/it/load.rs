//! 1,000 concurrent legacy `initialize` attempts against the 128-session cap.

use crate::util::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_128_sessions_are_admitted_and_the_server_stays_responsive() {
    let server = HttpServer::start().await;
    let attempts = (0..1000).map(|i| {
        let req = server.post(&initialize(i, "2025-11-25"), None);
        async move {
            let response = within("an initialize answer", req.send()).await.unwrap();
            let status = response.status().as_u16();
            let sid = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
            let _ = response.bytes().await;
            (status, sid)
        }
    });
    let results = futures::future::join_all(attempts).await;
    let admitted: Vec<String> =
        results.iter().filter(|(s, _)| *s == 200).map(|(_, sid)| sid.clone().unwrap()).collect();
    let refused = results.iter().filter(|(s, _)| *s == 503).count();
    assert_eq!(admitted.len(), 128);
    assert_eq!(refused, 872);

    for sid in admitted.iter().take(8) {
        let (status, content_type, body) = exchange(server.post(&call(2, "ping", json!({}), None), Some(sid))).await;
        assert_eq!(status, 200);
        assert!(text_of(&messages(&content_type, &body.unwrap())[0]).contains("ok"));
    }
    let deleted = server.http.delete(&server.url).header("mcp-session-id", &admitted[0]).send().await.unwrap();
    assert!(deleted.status().is_success());
    let (status, _, _) = exchange(server.post(&initialize(5000, "2025-11-25"), None)).await;
    assert_eq!(status, 200, "a place freed by DELETE is admitted again");
}
