//! Resumable streams in 2025-11-25 sessions and the stream fault tools, checked on the wire: the bytes of every
//! event (ids, `retry:`, priming), where a stream is cut, and what a `GET` with `Last-Event-ID` gets.

use crate::util::*;
use serde_json::{Value, json};

/// A tool call that asks for progress (the notifications a stream fault sends before its cut).
fn call_with_progress(id: i64, tool: &str, args: Value) -> Value {
    call(id, tool, args, Some(json!({"progressToken": format!("p{id}")})))
}

/// POSTs `body` on session `sid`; the status, the headers and the whole SSE body as text (the body must end
/// cleanly: a cut is a clean end).
async fn post_sse(server: &HttpServer, sid: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let response = within("a response", server.post(body, Some(sid)).send()).await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let bytes = within("a whole body", response.bytes()).await.expect("the stream ends cleanly");
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A resuming GET on `sid`: status, content type, body text.
async fn resume(server: &HttpServer, sid: &str, last_event_ids: &[&str]) -> (u16, String, String) {
    let mut request = server
        .http
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-11-25");
    for id in last_event_ids {
        request = request.header("last-event-id", *id);
    }
    let (status, content_type, body) = exchange(request).await;
    (status, content_type, String::from_utf8(body.expect("a whole body").to_vec()).unwrap())
}

/// The `id:` lines of an SSE text, in order (`""` for an explicit empty `id:`).
fn ids(text: &str) -> Vec<String> {
    text.lines().filter_map(|l| l.strip_prefix("id:")).map(|v| v.trim_start().to_owned()).collect()
}

/// The stream number of an id `<stream>-<index>`.
fn stream_of(id: &str) -> &str {
    id.split_once('-').unwrap().0
}

fn result_events(text: &str) -> usize {
    sse_data(text.as_bytes()).iter().filter(|d| d.contains(r#""result""#)).count()
}

#[tokio::test]
async fn a_session_stream_is_primed_and_every_event_has_an_id_unique_in_the_session() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (status, headers, first) = post_sse(&server, &sid, &call(2, "ping", json!({}), None)).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream");
    let first_ids = ids(&first);
    let stream = stream_of(&first_ids[0]).to_owned();
    assert!(
        first.starts_with(&format!("id: {stream}-0\nretry: 3000\ndata: \n\n")),
        "a priming event: an id, retry and empty data first: {first:?}"
    );
    assert_eq!(first_ids, [format!("{stream}-0"), format!("{stream}-1")], "{first:?}");
    assert_eq!(result_events(&first), 1);
    let (_, _, second) = post_sse(&server, &sid, &call(3, "ping", json!({}), None)).await;
    let second_ids = ids(&second);
    assert_ne!(stream_of(&second_ids[0]), stream, "each POST stream is a stream of its own");
    assert!(second_ids.iter().all(|id| !first_ids.contains(id)), "no id is used twice in a session");
}

#[tokio::test]
async fn a_cut_stream_is_resumed_and_replays_only_its_own_missed_events() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (_, _, other) = post_sse(&server, &sid, &call(2, "ping", json!({}), None)).await;
    let (status, _, cut) =
        post_sse(&server, &sid, &call_with_progress(3, "stream_cut", json!({"afterEvents": 2}))).await;
    assert_eq!(status, 200);
    let seen = ids(&cut);
    assert_eq!(seen.len(), 3, "priming and two progress notifications, then the cut: {cut:?}");
    assert_eq!(result_events(&cut), 0, "the stream closes before the result");
    let stream = stream_of(&seen[0]);

    let (status, content_type, replay) = resume(&server, &sid, &[&seen[2]]).await;
    assert_eq!((status, content_type.as_str()), (200, "text/event-stream"));
    assert_eq!(ids(&replay), [format!("{stream}-3")], "only what came after the id named: {replay:?}");
    let data = sse_data(replay.as_bytes());
    let reply: Value = serde_json::from_str(&data[0]).unwrap();
    assert_eq!(reply["id"], 3, "the cut request's own result");
    assert!(!replay.contains(&ids(&other)[1]), "never another stream's event");

    let (_, _, from_priming) = resume(&server, &sid, &[&seen[0]]).await;
    assert_eq!(ids(&from_priming), [format!("{stream}-1"), format!("{stream}-2"), format!("{stream}-3")]);
}

#[tokio::test]
async fn a_stream_cut_without_ids_carries_no_id_and_no_priming() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let body = call_with_progress(2, "stream_cut", json!({"ids": false, "afterEvents": 1}));
    let (_, _, cut) = post_sse(&server, &sid, &body).await;
    assert!(ids(&cut).is_empty() && !cut.contains("retry:"), "{cut:?}");
    assert_eq!(sse_data(cut.as_bytes()).len(), 1, "one progress notification, then the cut: {cut:?}");
    assert_eq!(result_events(&cut), 0);
}

#[tokio::test]
async fn malformed_unknown_unsent_and_other_sessions_ids_get_404_never_a_replay() {
    let server = HttpServer::start().await;
    let mine = server.open_session().await;
    let theirs = server.open_session().await;
    let (_, _, their_stream) = post_sse(&server, &theirs, &call(2, "stream_cut", json!({}), None)).await;
    let their_id = ids(&their_stream)[0].clone();
    let (_, _, my_stream) = post_sse(&server, &mine, &call(2, "ping", json!({}), None)).await;
    let my_stream = stream_of(&ids(&my_stream)[0]).to_owned();
    let unsent = format!("{my_stream}-9");
    let unknown = format!("{}-0", 1000 + my_stream.parse::<u64>().unwrap());
    for bad in ["garbage", "", "0/0", "-1", "01-0", &unsent, &unknown] {
        let (status, _, body) = resume(&server, &mine, &[bad]).await;
        assert_eq!(status, 404, "{bad:?}: {body}");
        assert!(body.contains("-32001") && !body.contains("result"), "{bad:?}: {body}");
    }
    let (status, _, body) = resume(&server, &mine, &[&their_id]).await;
    assert_eq!(status, 404, "another session's event id is unknown here: {body}");
    let (status, _, body) = resume(&server, &theirs, &[&their_id]).await;
    assert_eq!(status, 200);
    assert_eq!(result_events(&body), 1, "the owner resumes its own stream: {body}");
    let (status, _, _) = resume(&server, &mine, &[&their_id, &their_id]).await;
    assert_eq!(status, 400, "two Last-Event-ID headers are malformed");
    let (status, _, _) = resume(&server, "no-such-session", &[&their_id]).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn stream_cut_again_closes_the_first_resume_before_any_id_and_the_next_resume_replays() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (_, _, cut) = post_sse(&server, &sid, &call(2, "stream_cut_again", json!({}), None)).await;
    let priming = ids(&cut);
    assert_eq!(priming.len(), 1, "only the priming event: {cut:?}");
    let (status, content_type, again) = resume(&server, &sid, &[&priming[0]]).await;
    assert_eq!((status, content_type.as_str()), (200, "text/event-stream"));
    assert!(ids(&again).is_empty() && again.is_empty(), "closed before any id-bearing event: {again:?}");
    let (status, _, replay) = resume(&server, &sid, &[&priming[0]]).await;
    assert_eq!(status, 200);
    assert_eq!(result_events(&replay), 1, "the same Last-Event-ID again gets the result: {replay:?}");
}

#[tokio::test]
async fn stream_cut_again_closes_as_many_resumes_as_asked_then_replays() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (_, _, cut) = post_sse(&server, &sid, &call(2, "stream_cut_again", json!({"resumes": 3}), None)).await;
    let priming = ids(&cut);
    assert_eq!(priming.len(), 1, "only the priming event: {cut:?}");
    for attempt in 1..=3 {
        let (status, content_type, again) = resume(&server, &sid, &[&priming[0]]).await;
        assert_eq!((status, content_type.as_str()), (200, "text/event-stream"), "resume {attempt}");
        assert!(again.is_empty(), "resume {attempt} closed before any event: {again:?}");
    }
    let (status, _, replay) = resume(&server, &sid, &[&priming[0]]).await;
    assert_eq!((status, result_events(&replay)), (200, 1), "the fourth resume replays the result: {replay:?}");
    let (_, _, refused) = post_sse(&server, &sid, &call(3, "stream_cut_again", json!({"resumes": 0}), None)).await;
    assert!(refused.contains("resumes must be an integer between 1 and 1000"), "{refused}");
}

#[tokio::test]
async fn stream_retry_writes_the_asked_retry_or_none_on_the_priming_event() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    for (args, expected) in [
        (json!({"retryMs": 0}), Some("retry: 0\n")),
        (json!({"retryMs": 86_400_000}), Some("retry: 86400000\n")),
        (json!({}), None),
    ] {
        let (_, _, cut) = post_sse(&server, &sid, &call(2, "stream_retry", args.clone(), None)).await;
        let priming = &ids(&cut)[0];
        match expected {
            Some(line) => assert_eq!(cut, format!("id: {priming}\n{line}data: \n\n"), "{args}"),
            None => assert_eq!(cut, format!("id: {priming}\ndata: \n\n"), "absent retry: {args}"),
        }
        let (status, _, replay) = resume(&server, &sid, &[priming]).await;
        assert_eq!((status, result_events(&replay)), (200, 1), "{args}");
    }
    let (_, _, refused) = post_sse(&server, &sid, &call(3, "stream_retry", json!({"retryMs": 86_400_001}), None)).await;
    assert!(refused.contains("retryMs must be an integer between 0 and 86400000") && refused.contains("retry: 3000"));
}

#[tokio::test]
async fn empty_event_id_sends_an_explicit_empty_id_line_before_the_cut() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (_, _, cut) = post_sse(&server, &sid, &call_with_progress(2, "empty_event_id", json!({}))).await;
    let seen = ids(&cut);
    assert_eq!(seen.len(), 2, "{cut:?}");
    assert!(seen[0].ends_with("-0") && seen[1].is_empty(), "a primed id, then `id:` empty: {cut:?}");
    assert!(cut.contains("\nid:\ndata: {") && cut.contains("notifications/progress"), "{cut:?}");
    assert_eq!(result_events(&cut), 0);
    let (status, _, replay) = resume(&server, &sid, &[&seen[0]]).await;
    assert_eq!((status, result_events(&replay)), (200, 1), "a stale id still resumes on this server");
}

#[tokio::test]
async fn replay_duplicate_sends_the_seen_events_again_with_their_ids_before_the_result() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (_, _, cut) = post_sse(&server, &sid, &call_with_progress(2, "replay_duplicate", json!({}))).await;
    let seen = ids(&cut);
    assert_eq!(seen.len(), 2, "priming and one progress notification: {cut:?}");
    let (_, _, replay) = resume(&server, &sid, &[&seen[1]]).await;
    let stream = stream_of(&seen[0]);
    assert_eq!(ids(&replay), [format!("{stream}-1"), format!("{stream}-2")], "{replay:?}");
    assert!(replay.contains("notifications/progress"), "the already-seen progress again: {replay:?}");
    assert_eq!(result_events(&replay), 1);
    let (_, _, honest) = resume(&server, &sid, &[&seen[1]]).await;
    assert_eq!(ids(&honest), [format!("{stream}-2")], "only the first resume is faulty: {honest:?}");
}

#[tokio::test]
async fn replay_foreign_sends_another_streams_reply_first_on_the_resume() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let (_, _, other) = post_sse(&server, &sid, &call(2, "ping", json!({}), None)).await;
    let other_reply = ids(&other)[1].clone();
    let (_, _, cut) = post_sse(&server, &sid, &call(3, "replay_foreign", json!({}), None)).await;
    let priming = ids(&cut)[0].clone();
    let (_, _, replay) = resume(&server, &sid, &[&priming]).await;
    let replayed = ids(&replay);
    assert_eq!(replayed[0], other_reply, "another stream's event, with its own id, first: {replay:?}");
    assert_eq!(stream_of(&replayed[1]), stream_of(&priming), "then this stream's own result: {replay:?}");
    let data = sse_data(replay.as_bytes());
    let ids_answered: Vec<Value> =
        data.iter().map(|d| serde_json::from_str::<Value>(d).unwrap()["id"].clone()).collect();
    assert_eq!(ids_answered, [json!(2), json!(3)], "the reply to request 2 arrives on request 3's stream");
}

#[tokio::test]
async fn resume_refused_answers_every_resume_with_404_or_405() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    for (id, status) in [(2, 404u16), (3, 405)] {
        let (_, _, cut) = post_sse(&server, &sid, &call(id, "resume_refused", json!({"status": status}), None)).await;
        let priming = ids(&cut)[0].clone();
        for attempt in 0..3 {
            let (got, _, body) = resume(&server, &sid, &[&priming]).await;
            assert_eq!(got, status, "every resume is refused (attempt {attempt}): {body}");
            assert_eq!(result_events(&body), 0);
        }
    }
}

#[tokio::test]
async fn stream_lost_breaks_a_2026_07_28_response_stream_after_a_progress_event_before_the_result() {
    let server = HttpServer::start().await;
    let mut meta = modern_meta();
    meta["progressToken"] = json!("lost");
    let request = server
        .post(&call(1, "stream_lost", json!({}), Some(meta)), None)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "stream_lost");
    let response = within("a response", request.send()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream", "a stream: its head and first event go out");
    assert!(response.headers().get("mcp-session-id").is_none(), "2026-07-28: no session, nothing to resume");
    let mut events = EventReader::new(response);
    let progress = events.next().await.unwrap().unwrap();
    assert_eq!(progress.method(), Some("notifications/progress"));
    assert!(events.next().await.unwrap().is_err(), "then the stream breaks, before any result");
    let (status, _, body) = exchange(server.post_modern_call(2, "ping", json!({}))).await;
    assert_eq!(status, 200, "the server goes on: a re-issued request (new id) is answered");
    assert!(String::from_utf8_lossy(&body.unwrap()).contains(r#""id":2"#));
}

#[tokio::test]
async fn a_stream_the_server_broke_cannot_be_resumed() {
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    let response =
        within("a response", server.post(&call_with_progress(2, "stream_lost", json!({})), Some(&sid)).send())
            .await
            .unwrap();
    let mut events = EventReader::new(response);
    assert_eq!(events.next().await.unwrap().unwrap().method(), Some("notifications/progress"));
    assert!(events.next().await.unwrap().is_err(), "the stream breaks before the result");
    for id in ["0-0", "0-1"] {
        let (status, _, body) = resume(&server, &sid, &[id]).await;
        assert_eq!(status, 404, "{id}: a broken stream's reply will never come: {body}");
    }
}

#[tokio::test]
async fn a_stream_broken_before_any_message_breaks_before_its_head_as_without_resumption() {
    // Found by the interop matrix: with the priming event sent at once, `disconnect` in a session became a
    // primed stream that broke, and the SDK clients waited to resume it instead of failing at once.
    let server = HttpServer::start().await;
    let sid = server.open_session().await;
    for tool in ["disconnect", "session_loss"] {
        let args = if tool == "session_loss" { json!({"activation": "during_request"}) } else { json!({}) };
        let (status, _, body) = exchange(server.post(&call(2, tool, args, None), Some(&sid))).await;
        assert_eq!(status, 0, "{tool}: the connection breaks before the response head");
        assert!(body.is_err());
    }
}
