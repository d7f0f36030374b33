//! The stream faults and the session-lifecycle faults on the proxy's HTTP front, over an in-process upstream that
//! cannot resume (it answers a call with progress as an SSE stream without ids, any other call as JSON, and has no
//! GET stream): the bytes and headers the client reads, event ids, `retry:`, where the stream is cut, what a
//! `Last-Event-ID` resume replays, refused resumes, the statuses of sessions the faults made unknown, and the
//! trajectory's `delivery` of a faulted stream's reply (on which resume, on the POST's response, or never).

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use faultlab_engine::recorder::{DeliveredOn, Delivery, Direction, FrameEvent, ResumeAnswer};
use faultlab_engine::{Event, Recorder};
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

use crate::harness;

/// The upstream's reply to call `id`, as it writes it.
fn reply(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok {id}"}}]}}}}"#)
}

fn progress(token: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":0}}}}"#
    )
}

static SESSIONS: AtomicU64 = AtomicU64::new(0);

async fn upstream(headers: HeaderMap, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(id) = request["id"].as_u64() else { return StatusCode::ACCEPTED.into_response() };
    if request["method"] == "initialize" {
        let session = format!("upstream-session-{}", SESSIONS.fetch_add(1, Ordering::SeqCst));
        let init = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-11-25"}}}}"#);
        return (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::HeaderName::from_static("mcp-session-id"), session.as_str()),
            ],
            init,
        )
            .into_response();
    }
    let _ = headers;
    match request["params"]["_meta"].get("progressToken") {
        Some(token) => {
            let body = format!("event: message\ndata: {}\n\nevent: message\ndata: {}\n\n", progress(token), reply(id));
            ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
        }
        None => ([(header::CONTENT_TYPE, "application/json")], reply(id)).into_response(),
    }
}

struct Lab {
    url: String,
    client: reqwest::Client,
    stop: CancellationToken,
    /// Taken when [`Lab::deliveries`] waits for it.
    proxy: Option<tokio::task::JoinHandle<()>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    recorder: Recorder,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop.cancel();
        self.proxy.iter().for_each(tokio::task::JoinHandle::abort);
        self.server.abort();
    }
}

/// The proxy's HTTP front with one rule: calls of the tool `faulted` get `fault`.
async fn start_lab(fault: Value) -> Lab {
    start_lab_matching(json!({"tool": "faulted"}), fault).await
}

/// The proxy's HTTP front with one rule: the requests `matcher` matches get `fault`.
async fn start_lab_matching(matcher: Value, fault: Value) -> Lab {
    start_lab_rules(json!([{"name": "r", "match": matcher, "fault": fault}])).await
}

/// The proxy's HTTP front with these rules.
async fn start_lab_rules(rules: Value) -> Lab {
    let route = axum::routing::post(upstream).get(|| async { StatusCode::METHOD_NOT_ALLOWED });
    let (upstream_url, server) = crate::harness::upstream_at(route).await;
    let file = json!({"seed": 1, "rules": rules});
    for rule in file["rules"].as_array().unwrap() {
        serde_json::from_value::<faultlab_proxy::rules::Rule>(rule.clone()).unwrap().check().unwrap();
    }
    let rules = RuleSet::new(serde_json::from_value::<RulesFile>(file).unwrap()).shared();
    let backend = faultlab_proxy::front::http::Backend::url(upstream_url.parse().unwrap()).unwrap();
    let stop = CancellationToken::new();
    let recorder = Recorder::memory();
    let trajectory = Arc::new(Trajectory::new(recorder.clone()));
    let (url, proxy) = harness::http_front(backend, rules, trajectory, stop.clone()).await;
    let proxy = tokio::spawn(async move {
        let _ = proxy.await;
    });
    let client = faultlab_client::tls::client_builder().build().unwrap();
    Lab { url, client, stop, proxy: Some(proxy), server, recorder }
}

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn answer(response: reqwest::Response) -> Answer {
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    Answer { status, headers, body: response.text().await.unwrap() }
}

impl Lab {
    async fn post(&self, message: Value, session: Option<&str>) -> Answer {
        let mut request = harness::post(&self.client, &self.url, message.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        answer(request.send().await.unwrap()).await
    }

    /// Calls `tool` as request `id`, with a progress token (so the upstream streams a progress event first).
    async fn call(&self, id: u64, tool: &str, session: Option<&str>) -> Answer {
        let params = json!({"name": tool, "arguments": {}, "_meta": {"progressToken": id}});
        self.post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}), session).await
    }

    async fn get(&self, session: Option<&str>, last_event_id: Option<&str>) -> Answer {
        let mut request = self.client.get(&self.url).header("accept", "text/event-stream");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        answer(request.send().await.unwrap()).await
    }

    /// Ends the proxy (and waits for it) and returns the `delivery` of each reply event in its trajectory, by
    /// request id.
    async fn deliveries(mut self) -> Vec<(u64, Option<Delivery>)> {
        self.stop.cancel();
        self.proxy.take().expect("the proxy is waited for once").await.unwrap();
        let replies = self.recorder.records().into_iter().filter_map(|record| match record.event {
            Event::Frame(FrameEvent { direction: Direction::ServerToClient, id: Some(id), delivery, .. }) => {
                Some((id.as_u64()?, delivery))
            }
            _ => None,
        });
        replies.collect()
    }

    async fn initialize(&self) -> Answer {
        self.post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}), None).await
    }
}

fn event(id: Option<&str>, data: &str) -> String {
    match id {
        Some(id) => format!("event: message\n{id}\ndata: {data}\n\n"),
        None => format!("event: message\ndata: {data}\n\n"),
    }
}

#[tokio::test]
async fn a_cut_stream_carries_ids_and_retry_and_its_resume_replays_the_reply_once() {
    let lab = start_lab(json!({"type": "stream_cut", "after_events": 1})).await;
    let cut = lab.call(1, "faulted", None).await;
    assert_eq!((cut.status, cut.header("content-type")), (200, Some("text/event-stream")));
    let primed = "id: 0-0\nretry: 3000\ndata: \n\n";
    assert_eq!(cut.body, format!("{primed}{}", event(Some("id: 0-1"), &progress(&json!(1)))), "cut before the reply");
    let resumed = lab.get(None, Some("0-1")).await;
    assert_eq!((resumed.status, resumed.header("content-type")), (200, Some("text/event-stream")));
    assert_eq!(resumed.body, event(Some("id: 0-2"), &reply(1)), "only the missed event: the reply");
    let again = lab.get(None, Some("0-0")).await;
    assert_eq!(
        again.body,
        format!("{}{}", event(Some("id: 0-1"), &progress(&json!(1))), event(Some("id: 0-2"), &reply(1)))
    );
    assert_eq!(lab.get(None, Some("0-7")).await.status, 404, "an index not sent is no resume");
    assert_eq!(lab.get(None, Some("9-1")).await.status, 405, "a stream number never given out: the upstream's");
    let upstream = lab.get(None, Some("upstream-event-3")).await;
    assert_eq!(upstream.status, 405, "an id in another form is the upstream's: forwarded");
    let untouched = lab.call(2, "other", None).await;
    assert_eq!(untouched.body, format!("{}{}", event(None, &progress(&json!(2))), event(None, &reply(2))));
}

#[tokio::test]
async fn a_json_answer_becomes_a_stream_to_cut_and_without_ids_nothing_can_resume() {
    let lab = start_lab(json!({"type": "stream_cut", "ids": false})).await;
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "faulted"}});
    let cut = lab.post(call, None).await;
    assert_eq!((cut.status, cut.header("content-type"), cut.body.as_str()), (200, Some("text/event-stream"), ""));
    let lab = start_lab(json!({"type": "stream_cut"})).await;
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "faulted"}});
    assert_eq!(lab.post(call, None).await.body, "id: 0-0\nretry: 3000\ndata: \n\n");
    assert_eq!(lab.get(None, Some("0-0")).await.body, event(Some("id: 0-1"), &reply(5)), "the JSON reply, as an event");
}

#[tokio::test]
async fn retry_is_absent_zero_or_very_large_as_the_fault_says() {
    for (fault, priming) in [
        (json!({"type": "stream_retry"}), "id: 0-0\ndata: \n\n"),
        (json!({"type": "stream_retry", "retry_ms": 0}), "id: 0-0\nretry: 0\ndata: \n\n"),
        (json!({"type": "stream_retry", "retry_ms": 86_400_000}), "id: 0-0\nretry: 86400000\ndata: \n\n"),
    ] {
        let lab = start_lab(fault.clone()).await;
        assert_eq!(lab.call(1, "faulted", None).await.body, priming, "{fault}");
    }
}

#[tokio::test]
async fn an_empty_id_line_goes_on_the_last_event_before_the_cut() {
    let lab = start_lab(json!({"type": "empty_event_id"})).await;
    let cut = lab.call(1, "faulted", None).await;
    assert_eq!(cut.body, format!("id: 0-0\nretry: 3000\ndata: \n\n{}", event(Some("id:"), &progress(&json!(1)))));
}

#[tokio::test]
async fn replays_send_seen_events_again_or_another_streams_event_first() {
    let lab = start_lab(json!({"type": "stream_replay", "variant": "duplicate"})).await;
    lab.call(1, "faulted", None).await;
    let replayed = lab.get(None, Some("0-1")).await;
    let seen = event(Some("id: 0-1"), &progress(&json!(1)));
    assert_eq!(
        replayed.body,
        format!("{seen}{}", event(Some("id: 0-2"), &reply(1))),
        "the seen event again, then the reply"
    );
    assert_eq!(lab.get(None, Some("0-1")).await.body, event(Some("id: 0-2"), &reply(1)), "the next resume is right");

    let lab = start_lab(json!({"type": "stream_replay", "variant": "foreign"})).await;
    lab.call(1, "faulted", None).await;
    lab.get(None, Some("0-0")).await;
    lab.call(2, "faulted", None).await;
    let replayed = lab.get(None, Some("1-0")).await;
    let foreign = event(Some("id: 0-2"), &reply(1));
    let own = format!("{}{}", event(Some("id: 1-1"), &progress(&json!(2))), event(Some("id: 1-2"), &reply(2)));
    assert_eq!(replayed.body, format!("{foreign}{own}"), "stream 0's last message first, with its id");
}

#[tokio::test]
async fn a_resume_cut_again_then_answered_and_refused_resumes_404_or_405() {
    let lab = start_lab(json!({"type": "stream_cut_again"})).await;
    assert_eq!(lab.call(1, "faulted", None).await.body, "id: 0-0\nretry: 3000\ndata: \n\n");
    let again = lab.get(None, Some("0-0")).await;
    assert_eq!((again.status, again.header("content-type"), again.body.as_str()), (200, Some("text/event-stream"), ""));
    let second = lab.get(None, Some("0-0")).await;
    assert!(second.body.ends_with(&event(Some("id: 0-2"), &reply(1))), "{}", second.body);

    for status in [404, 405] {
        let lab = start_lab(json!({"type": "resume_refused", "status": status})).await;
        lab.call(1, "faulted", None).await;
        for _ in 0..2 {
            let refused = lab.get(None, Some("0-0")).await;
            assert_eq!(refused.status, status, "every resume is refused");
            if status == 405 {
                assert_eq!(refused.header("allow"), Some("POST, DELETE"));
            } else {
                assert!(refused.body.contains("-32001"), "{}", refused.body);
            }
        }
    }
}

fn session_of(answer: &Answer) -> String {
    answer.header("mcp-session-id").expect("the upstream gave a session").to_owned()
}

#[tokio::test]
async fn lifecycle_variants_answer_for_the_upstreams_sessions() {
    let lab = start_lab(json!({"type": "session_lifecycle", "variant": "unknown_400"})).await;
    let session = session_of(&lab.initialize().await);
    let faulted = lab.call(1, "faulted", Some(&session)).await;
    assert!(faulted.body.contains(&reply(1)), "the faulted call gets its result: {}", faulted.body);
    let after = lab.call(2, "other", Some(&session)).await;
    assert_eq!(after.status, 400);
    assert_eq!(
        after.body,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Bad Request: No valid session ID provided"}}"#
    );

    let lab = start_lab(json!({"type": "session_lifecycle", "variant": "get_404"})).await;
    let session = session_of(&lab.initialize().await);
    lab.call(1, "faulted", Some(&session)).await;
    assert_eq!(lab.get(Some(&session), None).await.status, 404, "the GET stream is refused");
    assert_eq!(lab.call(2, "other", Some(&session)).await.status, 200, "POSTs still served");

    let lab = start_lab(json!({"type": "session_lifecycle", "variant": "restart"})).await;
    let (one, two) = (session_of(&lab.initialize().await), session_of(&lab.initialize().await));
    lab.call(1, "faulted", Some(&one)).await;
    for session in [&one, &two] {
        let after = lab.call(2, "other", Some(session)).await;
        assert_eq!(after.status, 404, "every session is gone");
        assert!(after.body.contains("-32001"), "{}", after.body);
    }
    assert_eq!(lab.initialize().await.status, 200, "a new session after the restart");

    let lab = start_lab(json!({"type": "session_lifecycle", "variant": "reinit_404"})).await;
    let session = session_of(&lab.initialize().await);
    lab.call(1, "faulted", Some(&session)).await;
    assert_eq!(lab.call(2, "other", Some(&session)).await.status, 404);
    let statuses: Vec<u16> =
        futures::future::join_all((0..4).map(|_| lab.initialize())).await.iter().map(|a| a.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 404).count(), 3, "three initializes refused: {statuses:?}");

    let lab = start_lab(json!({"type": "session_expired_in_flight"})).await;
    let session = session_of(&lab.initialize().await);
    let started = tokio::time::Instant::now();
    // Without progress the upstream answers JSON, whose status the proxy can still replace (after a first event
    // the 404 could only be an error event).
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "faulted"}});
    let expired = lab.post(call, Some(&session)).await;
    assert!(started.elapsed() >= std::time::Duration::from_millis(200), "held in flight first");
    assert_eq!(expired.status, 404);
    assert_eq!(serde_json::from_str::<Value>(&expired.body).unwrap()["error"]["code"], -32001, "{}", expired.body);
    assert_eq!(lab.call(2, "other", Some(&session)).await.status, 404, "and the session is gone");
}

#[tokio::test]
async fn the_trajectory_says_which_resume_carried_a_cut_streams_reply_or_that_none_did() {
    // Cut again once: the first resume brings nothing, the second the reply; the third call's stream is never
    // resumed; the second call is not faulted.
    let lab = start_lab(json!({"type": "stream_cut_again"})).await;
    lab.call(1, "faulted", None).await;
    assert_eq!(lab.get(None, Some("0-0")).await.body, "", "the first resume is cut before any event");
    assert!(lab.get(None, Some("0-0")).await.body.contains(&reply(1)));
    lab.call(2, "other", None).await;
    lab.call(3, "faulted", None).await;
    let deliveries = lab.deliveries().await;
    assert_eq!(
        deliveries,
        [
            (1, Some(Delivery::resume(2, "0-0"))),
            (2, None),
            (3, Some(Delivery { on: DeliveredOn::Undelivered, resume: None, last_event_id: None })),
        ],
        "the reply of call 2 came on its own response with no fault to say anything about"
    );

    // A resume from the first message: the reply on resume 1, named by its Last-Event-ID; a client that takes
    // JSON only gets the reply on the POST's response, which the stream fault could not cut.
    let lab = start_lab(json!({"type": "stream_cut", "after_events": 1})).await;
    lab.call(1, "faulted", None).await;
    assert!(lab.get(None, Some("0-1")).await.body.contains(&reply(1)));
    assert!(lab.get(None, Some("0-0")).await.body.contains(&reply(1)), "a second resume carries it again");
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "faulted"}});
    let json_only = lab
        .client
        .post(&lab.url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(json_only.text().await.unwrap(), reply(4));
    assert_eq!(
        lab.deliveries().await,
        [(1, Some(Delivery::resume(1, "0-1"))), (4, Some(Delivery::response()))],
        "the first delivery counts"
    );
}

/// `faultlab explore` faults the protocol's own requests by method (`match: {method: M, nth: n}`): the stream and
/// session faults act on them as on a tool call, on the wire.
#[tokio::test]
async fn the_handshake_and_the_tool_list_are_faulted_by_method_a_stream_cut_resumed_and_a_session_lost() {
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
    // The initialize's stream is cut before its reply: the session id came with the headers, and a resume with
    // it brings the reply.
    let lab = start_lab_matching(json!({"method": "initialize", "nth": 1}), json!({"type": "stream_cut"})).await;
    let cut = lab.initialize().await;
    assert_eq!((cut.status, cut.body.as_str()), (200, "id: 0-0\nretry: 3000\ndata: \n\n"), "cut before the reply");
    let session = session_of(&cut);
    let resumed = lab.get(Some(&session), Some("0-0")).await;
    assert!(resumed.body.contains(r#""protocolVersion":"2025-11-25""#), "{}", resumed.body);
    assert!(lab.initialize().await.body.contains("protocolVersion"), "the second initialize is not cut");

    // The tool list's stream, lost where its reply would be: nothing to resume; the next list is whole.
    let lab = start_lab_matching(json!({"method": "tools/list"}), json!({"type": "stream_lost"})).await;
    let session = session_of(&lab.initialize().await);
    let request = harness::post(&lab.client, &lab.url, list(1).to_string()).header("mcp-session-id", &session);
    let reply = match request.send().await {
        Ok(response) => response.text().await.ok(),
        Err(_) => None,
    };
    assert_eq!(reply, None, "the connection is reset where the reply would be");
    assert_eq!(lab.get(Some(&session), Some("0-0")).await.status, 404, "a broken stream has nothing to resume");

    // A session lost between initialize and the first call: the handshake gets its reply, the next request on
    // the session is refused (400), and a new session can start.
    let fault = json!({"type": "session_lifecycle", "variant": "unknown_400"});
    let lab = start_lab_matching(json!({"method": "initialize", "nth": 1}), fault).await;
    let first = lab.initialize().await;
    assert!(first.body.contains("protocolVersion"), "{}", first.body);
    let session = session_of(&first);
    assert_eq!(lab.call(1, "read_file", Some(&session)).await.status, 400, "the first call finds no session");
    let again = lab.initialize().await;
    assert_eq!(lab.call(2, "read_file", Some(&session_of(&again))).await.status, 200, "a new session works");

    // The session expires while the tool list is in flight: its reply is a 404, 200 ms late.
    let lab = start_lab_matching(json!({"method": "tools/list"}), json!({"type": "session_expired_in_flight"})).await;
    let session = session_of(&lab.initialize().await);
    let expired = lab.post(list(3), Some(&session)).await;
    assert_eq!(expired.status, 404);
    assert_eq!(serde_json::from_str::<Value>(&expired.body).unwrap()["error"]["code"], -32001, "{}", expired.body);
}

/// The cut of call `faulted` (after its progress event), and `fault` at that stream's first resume.
async fn cut_then_at_resume(fault: Value) -> Lab {
    start_lab_rules(json!([
        {"name": "at-resume", "match": {"tool": "faulted", "nth": 1, "at": "resume"}, "fault": fault},
        {"name": "cut", "match": {"tool": "faulted"}, "fault": {"type": "stream_cut", "after_events": 1}},
    ]))
    .await
}

/// The `resume_faulted` events of the lab's trajectory: (rule, fault, request id, tool, Last-Event-ID, answer).
fn resumes_faulted(recorder: &Recorder) -> Vec<(String, String, Value, Option<String>, String, ResumeAnswer)> {
    let faulted = recorder.records().into_iter().filter_map(|record| match record.event {
        Event::ResumeFaulted { rule, fault, request_id, tool, last_event_id, answer, .. } => {
            Some((rule, fault, request_id, tool, last_event_id, answer))
        }
        _ => None,
    });
    faulted.collect()
}

#[tokio::test]
async fn a_rule_at_a_resume_answers_the_first_resume_503_and_the_next_one_replays() {
    let lab = cut_then_at_resume(json!({"type": "http_status", "status": 503, "retry_after_sec": 2})).await;
    let cut = lab.call(1, "faulted", None).await;
    let primed = "id: 0-0\nretry: 3000\ndata: \n\n";
    let expected = format!("{primed}{}", event(Some("id: 0-1"), &progress(&json!(1))));
    assert_eq!(cut.body, expected, "the POST is the cut's alone: the resume rule leaves it alone");
    let refused = lab.get(None, Some("0-1")).await;
    assert_eq!((refused.status, refused.header("retry-after")), (503, Some("2")));
    let error: Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(error["error"]["data"]["httpStatus"], 503, "{error}");
    let resumed = lab.get(None, Some("0-1")).await;
    assert_eq!((resumed.status, resumed.body), (200, event(Some("id: 0-2"), &reply(1))), "acts once");
    assert_eq!(
        resumes_faulted(&lab.recorder),
        [(
            "at-resume".into(),
            "http_status".into(),
            json!(1),
            Some("faulted".into()),
            "0-1".into(),
            ResumeAnswer::Status { status: 503, session_lost: false }
        )]
    );
    let deliveries = lab.deliveries().await;
    assert_eq!(
        deliveries,
        [(1, Some(Delivery::resume(2, "0-1")))],
        "the refused resume counts: the reply came on the 2nd"
    );
}

#[tokio::test]
async fn a_disconnect_at_a_resume_closes_the_connection_before_a_byte() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let lab = cut_then_at_resume(json!({"type": "disconnect"})).await;
    lab.call(1, "faulted", None).await;
    let authority = lab.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut raw = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let request =
        format!("GET /mcp HTTP/1.1\r\nhost: {authority}\r\naccept: text/event-stream\r\nlast-event-id: 0-1\r\n\r\n");
    raw.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got).await;
    assert_eq!(String::from_utf8_lossy(&got), "", "not a byte of an answer: the connection is closed");
    assert_eq!(lab.get(None, Some("0-1")).await.body, event(Some("id: 0-2"), &reply(1)), "the next resume replays");
    let faulted = resumes_faulted(&lab.recorder);
    assert_eq!(faulted.len(), 1, "{faulted:?}");
    assert_eq!((faulted[0].1.as_str(), &faulted[0].5), ("disconnect", &ResumeAnswer::Reset));
}

#[tokio::test]
async fn a_session_lost_at_a_resume_answers_it_and_every_later_request_404() {
    let lab = cut_then_at_resume(json!({"type": "session_expired_in_flight"})).await;
    let session = session_of(&lab.initialize().await);
    lab.call(1, "faulted", Some(&session)).await;
    let lost = lab.get(Some(&session), Some("0-1")).await;
    assert_eq!(lost.status, 404);
    assert!(lost.body.contains("-32001"), "{}", lost.body);
    assert_eq!(lab.get(Some(&session), Some("0-1")).await.status, 404, "the resume again: the session is gone");
    let after = lab.call(2, "other", Some(&session)).await;
    assert_eq!(after.status, 404, "every later request of the session: {}", after.body);
    assert_eq!(lab.initialize().await.status, 200, "a new session is served");
    let faulted = resumes_faulted(&lab.recorder);
    assert_eq!(faulted.len(), 1, "{faulted:?}");
    assert_eq!(faulted[0].5, ResumeAnswer::Status { status: 404, session_lost: true });
    let deliveries = lab.deliveries().await;
    assert_eq!(
        deliveries,
        [(0, None), (2, None), (0, None), (1, Some(Delivery::undelivered()))],
        "the 404 is call 2's"
    );
}

#[tokio::test]
async fn latency_at_a_resume_delays_its_replay_and_timeout_holds_it_unanswered() {
    let lab = cut_then_at_resume(json!({"type": "latency", "delay_ms": 150})).await;
    lab.call(1, "faulted", None).await;
    let start = std::time::Instant::now();
    let resumed = lab.get(None, Some("0-1")).await;
    assert!(start.elapsed() >= std::time::Duration::from_millis(150), "{:?}", start.elapsed());
    assert_eq!((resumed.status, resumed.body), (200, event(Some("id: 0-2"), &reply(1))));
    assert_eq!(resumes_faulted(&lab.recorder)[0].5, ResumeAnswer::Delayed { delay_ms: 150 });
    assert_eq!(lab.deliveries().await, [(1, Some(Delivery::resume(1, "0-1")))]);

    let lab = cut_then_at_resume(json!({"type": "timeout"})).await;
    lab.call(1, "faulted", None).await;
    let held = lab
        .client
        .get(&lab.url)
        .header("accept", "text/event-stream")
        .header("last-event-id", "0-1")
        .timeout(std::time::Duration::from_millis(300))
        .send()
        .await;
    assert!(held.as_ref().is_err_and(reqwest::Error::is_timeout), "no head within 300 ms: {held:?}");
    assert_eq!(resumes_faulted(&lab.recorder)[0].5, ResumeAnswer::Held);
    assert_eq!(lab.get(None, Some("0-1")).await.body, event(Some("id: 0-2"), &reply(1)), "the next resume replays");
}

#[tokio::test]
async fn a_rule_at_a_resume_without_a_cut_of_that_stream_never_fires() {
    let lab = start_lab_rules(json!([
        {"name": "at-resume", "match": {"tool": "faulted", "at": "resume"}, "fault": {"type": "http_status", "status": 500}},
        {"name": "cut", "match": {"tool": "other"}, "fault": {"type": "stream_cut", "after_events": 1}},
    ]))
    .await;
    let untouched = lab.call(1, "faulted", None).await;
    assert_eq!(untouched.body, format!("{}{}", event(None, &progress(&json!(1))), event(None, &reply(1))));
    lab.call(2, "other", None).await;
    assert_eq!(lab.get(None, Some("0-1")).await.status, 200, "another request's stream: not the rule's");
    assert!(resumes_faulted(&lab.recorder).is_empty());
}
