//! Resumable streams through the real binary: a flood of resume requests (valid, malformed, unknown, another
//! session's) against `faultlab serve --transport http` leaves its memory flat.

use crate::common::{Lab, http_client, mcp_post};
use futures::StreamExt as _;
use serde_json::json;

/// The resident set of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

async fn open_session(http: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}});
    let response = mcp_post(http, url, init.to_string()).send().await.unwrap();
    let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = response.bytes().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let ack =
        mcp_post(http, url, initialized).header("mcp-session-id", &sid).header("mcp-protocol-version", "2025-11-25");
    assert_eq!(ack.send().await.unwrap().status(), 202);
    sid
}

/// A cut stream on `sid`; returns the id of its priming event.
async fn cut_stream(http: &reqwest::Client, url: &str, sid: &str, id: i64) -> String {
    let call =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "stream_cut", "arguments": {}}});
    let response = mcp_post(http, url, call.to_string())
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    let text = String::from_utf8(response.bytes().await.unwrap().to_vec()).unwrap();
    text.lines().find_map(|l| l.strip_prefix("id: ")).expect("a primed stream").to_owned()
}

/// `count` resume GETs, 16 at a time, cycling through `cases` (session, Last-Event-ID); the statuses seen.
async fn flood(http: &reqwest::Client, url: &str, cases: &[(String, String)], count: usize) -> Vec<u16> {
    futures::stream::iter(0..count)
        .map(|i| {
            let (sid, last) = &cases[i % cases.len()];
            let request = http
                .get(url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", sid)
                .header("mcp-protocol-version", "2025-11-25")
                .header("last-event-id", last);
            async move {
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                let _ = response.bytes().await;
                status
            }
        })
        .buffer_unordered(16)
        .collect()
        .await
}

#[tokio::test]
async fn a_flood_of_resume_requests_leaves_the_servers_memory_flat() {
    let (lab, url) = Lab::serve(&[]).await;
    let pid = lab.child.id().unwrap();
    let http = http_client();
    let (mine, theirs) = (open_session(&http, &url).await, open_session(&http, &url).await);
    let my_id = cut_stream(&http, &url, &mine, 2).await;
    let their_id = cut_stream(&http, &url, &theirs, 2).await;
    let cases: Vec<(String, String)> = [
        (&mine, my_id.as_str()),
        (&mine, their_id.as_str()),
        (&mine, "garbage"),
        (&mine, "999999-0"),
        (&theirs, their_id.as_str()),
    ]
    .into_iter()
    .map(|(s, l)| (s.clone(), l.to_owned()))
    .collect();
    // Warm up: the allocator's arenas and the connection machinery reach their working size first.
    flood(&http, &url, &cases, 500).await;
    let before = rss_kib(pid);
    let statuses = flood(&http, &url, &cases, 5_000).await;
    let after = rss_kib(pid);
    let replays = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 404).count();
    assert_eq!((replays, refused), (2_000, 3_000), "each valid resume replays, every other id gets 404");
    // 5,000 resumes that each kept even 160 bytes would add 780 KiB; a flat store adds nothing but allocator noise
    // (0 KiB here).
    let growth = after.saturating_sub(before);
    eprintln!("RSS {before} KiB before, {after} KiB after 5,000 resume requests");
    assert!(growth < 768, "RSS grew {growth} KiB over 5,000 resume requests ({before} -> {after} KiB)");
    // The sessions still work: their streams are still resumable.
    let check: Vec<(String, String)> = vec![(mine.clone(), my_id.clone())];
    assert_eq!(flood(&http, &url, &check, 1).await, [200]);
}
