//! With many calls in flight, only the activating request is affected.

use crate::util::*;
use faultlab_wire::{Frame, MessageId};
use serde_json::json;
use std::collections::HashMap;

/// 40 pings and delays around one faulted call; every other call gets exactly one clean reply.
fn workload(faulted_id: i64) -> Vec<(i64, &'static str, serde_json::Value)> {
    (1..=41)
        .map(|id| match id {
            id if id == faulted_id => (id, "duplicate_response", json!({})),
            id if id % 2 == 0 => (id, "delay", json!({"delayMs": 5})),
            id => (id, "ping", json!({})),
        })
        .collect()
}

fn assert_only_the_faulted_call_is_touched(frames: &[Frame], faulted: i64) {
    let mut seen: HashMap<MessageId, Vec<&Frame>> = HashMap::new();
    for frame in frames {
        seen.entry(frame.id().cloned().expect("every reply has an id")).or_default().push(frame);
    }
    for id in 1..=41 {
        let replies = &seen[&MessageId::from(id)];
        let expected = if id == faulted { 2 } else { 1 };
        assert_eq!(replies.len(), expected, "id {id}: {replies:?}");
        assert_eq!(replies[0].value().unwrap()["jsonrpc"], "2.0");
        assert_eq!(replies[0].value().unwrap()["result"]["isError"], false, "id {id}");
    }
}

/// Every message of the HTTP exchanges `calls`, run at once; each must be answered 200.
async fn all_replies<F: std::future::Future<Output = (u16, String, Result<bytes::Bytes, reqwest::Error>)>>(
    calls: impl IntoIterator<Item = F>,
) -> Vec<Frame> {
    let mut frames = Vec::new();
    for (status, content_type, body) in futures::future::join_all(calls).await {
        assert_eq!(status, 200);
        frames.extend(messages(&content_type, &body.unwrap()));
    }
    frames
}

#[tokio::test]
async fn stdio_many_in_flight() {
    let mut c = StdioClient::start(Some("2025-11-25")).await;
    for (id, tool, args) in workload(17) {
        c.call(id, tool, args).await;
    }
    let mut frames = Vec::new();
    for _ in 0..42 {
        frames.push(c.recv().await);
    }
    assert_only_the_faulted_call_is_touched(&frames, 17);
}

#[tokio::test]
async fn http_modern_many_in_flight() {
    let server = HttpServer::start().await;
    let calls = workload(23).into_iter().map(|(id, tool, args)| exchange(server.post_modern_call(id, tool, args)));
    assert_only_the_faulted_call_is_touched(&all_replies(calls).await, 23);
}

#[tokio::test]
async fn http_legacy_many_in_flight_in_one_session() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let calls =
        workload(5).into_iter().map(|(id, tool, args)| exchange(server.post(&call(id, tool, args, None), Some(&sid))));
    assert_only_the_faulted_call_is_touched(&all_replies(calls).await, 5);
}

#[tokio::test]
async fn a_disconnect_aborts_only_its_own_stream() {
    let server = HttpServer::start().await;
    let mut calls: Vec<_> =
        (1..=20).map(|id| exchange(server.post_modern_call(id, "delay", json!({"delayMs": 20})))).collect();
    calls.push(exchange(server.post_modern_call(99, "disconnect", json!({}))));
    let results = futures::future::join_all(calls).await;
    let (aborted, completed): (Vec<_>, Vec<_>) = results.into_iter().partition(|(_, _, body)| body.is_err());
    assert_eq!(aborted.len(), 1);
    assert_eq!(completed.len(), 20);
}
