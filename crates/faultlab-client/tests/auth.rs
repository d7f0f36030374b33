//! The auth mode against the lab's authorization server and protected resource on a real loopback listener: the
//! headless flow, refresh, re-authorization, step-up and its bound, no secret in anything the client records, and
//! every request of a session (POST, the `GET` resuming a cut stream, the closing `DELETE`) sent with the token.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use faultlab_auth::{Auth, AuthConfig, AuthFault};
use faultlab_client::{Answers, AuthEventKind, AuthOptions, AuthRecord, Connection, Era, Outcome, Target};
use faultlab_http::guard::AllowedHosts;
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt as _;

const DEADLINE: Duration = Duration::from_secs(20);

/// What the MCP endpoint behind the authorization does.
#[derive(Clone, Copy)]
enum Endpoint {
    /// Answers every request with a text result.
    Healthy,
    /// Refuses every request with `403 insufficient_scope`, asking for one more scope each time.
    EscalatingScope,
    /// A 2025-11-25 server with sessions whose `tools/call` answer is a primed SSE stream (`id: s-0`, `retry: 0`)
    /// cut before the reply; a `GET` with `Last-Event-ID: s-0` has the reply (`id: s-1`). `DELETE` is answered 200.
    CutStream,
}

struct Lab {
    url: String,
    /// Every `Authorization` header value that reached the listener: the secrets to look for in the outputs.
    seen_tokens: Arc<Mutex<Vec<String>>>,
    /// Every MCP endpoint request: its method, whether it carried a bearer token, and the status it was answered.
    requests: Arc<Mutex<Vec<(String, bool, u16)>>>,
}

async fn lab(fault: Option<&str>, endpoint: Endpoint) -> Lab {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let config = AuthConfig { fault: fault.map(|f| AuthFault::parse(f).unwrap()), ..AuthConfig::default() };
    let auth = Auth::new(config, &origin, "/mcp", AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST))).unwrap();
    let refusals = Arc::new(AtomicU32::new(0));
    let call = Arc::new(Mutex::new(None));
    let inner = axum::Router::new().fallback(move |request: Request| {
        let (refusals, call) = (refusals.clone(), call.clone());
        async move { mcp(request, endpoint, &refusals, &call).await }
    });
    let app = auth.wrap(inner);
    let seen_tokens = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (seen, logged) = (seen_tokens.clone(), requests.clone());
    let outer = axum::Router::new().fallback(move |request: Request| {
        let token = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        if let Some(value) = token {
            seen.lock().unwrap().push(value.trim_start_matches("Bearer ").to_owned());
        }
        let to_endpoint = request.uri().path() == "/mcp";
        let (method, bearer) = (request.method().to_string(), token.is_some_and(|t| t.starts_with("Bearer ")));
        let (app, logged) = (app.clone(), logged.clone());
        async move {
            let response = app.oneshot(request).await.unwrap();
            if to_endpoint {
                logged.lock().unwrap().push((method, bearer, response.status().as_u16()));
            }
            response
        }
    });
    tokio::spawn(async move { axum::serve(listener, outer).await });
    Lab { url: format!("{origin}/mcp"), seen_tokens, requests }
}

async fn mcp(request: Request, endpoint: Endpoint, refusals: &AtomicU32, call: &Mutex<Option<Value>>) -> Response {
    if let Endpoint::CutStream = endpoint {
        return cut_stream(request, call).await;
    }
    if let Endpoint::EscalatingScope = endpoint {
        let scope = ["mcp:read mcp:write", "mcp:read mcp:write mcp:admin"]
            [(refusals.fetch_add(1, Ordering::SeqCst) as usize).min(1)];
        let mut response = (StatusCode::FORBIDDEN, "{}").into_response();
        let challenge = format!(r#"Bearer error="insufficient_scope", scope="{scope}""#);
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_str(&challenge).unwrap());
        return response;
    }
    let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
    let message: Value = serde_json::from_slice(&body).unwrap();
    match message.get("id") {
        Some(id) => {
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}});
            ([(header::CONTENT_TYPE, "application/json")], answer.to_string()).into_response()
        }
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// [`Endpoint::CutStream`]; `call` holds the id of the `tools/call` whose stream was cut.
async fn cut_stream(request: Request, call: &Mutex<Option<Value>>) -> Response {
    let sse = |body: String| ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    match request.method().as_str() {
        "GET" if request.headers().get("last-event-id").is_some_and(|v| v == "s-0") => {
            let id = call.lock().unwrap().clone();
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}});
            return sse(format!("id: s-1\ndata: {reply}\n\n"));
        }
        "GET" => return StatusCode::METHOD_NOT_ALLOWED.into_response(),
        "DELETE" => return StatusCode::OK.into_response(),
        _ => {}
    }
    let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
    let message: Value = serde_json::from_slice(&body).unwrap();
    let Some(id) = message.get("id") else { return StatusCode::ACCEPTED.into_response() };
    match message["method"].as_str() {
        Some("initialize") => {
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "cut-stream", "version": "1"}});
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
            (
                [(header::CONTENT_TYPE, "application/json"), (header::HeaderName::from_static("mcp-session-id"), "s")],
                answer.to_string(),
            )
                .into_response()
        }
        _ => {
            *call.lock().unwrap() = Some(id.clone());
            sse("id: s-0\nretry: 0\ndata: \n\n".to_owned())
        }
    }
}

async fn connect(lab: &Lab, options: AuthOptions) -> Connection {
    let target = Target::Http { url: lab.url.clone(), headers: Default::default() };
    Connection::open_with(&target, Era::Modern, DEADLINE, Answers::default(), Some(options)).await.unwrap()
}

/// Calls `ping` `n` times; the outcomes and the auth record after each.
async fn calls(connection: &Connection, n: usize) -> Vec<(Outcome, Option<u16>, AuthRecord)> {
    let mut out = Vec::new();
    let mut before = connection.auth_record().unwrap();
    for _ in 0..n {
        let obs = connection.call_tool("ping", json!({}), DEADLINE).await;
        let now = connection.auth_record().unwrap();
        out.push((obs.outcome, obs.http_status, now.since(&before)));
        before = now;
    }
    out
}

fn kinds(record: &AuthRecord) -> Vec<AuthEventKind> {
    record.events.iter().map(|e| e.kind).collect()
}

/// No token the listener saw appears in what the client recorded.
fn assert_no_secret(lab: &Lab, connection: &Connection) {
    let recorded = serde_json::to_string(&connection.auth_record()).unwrap();
    let tokens = lab.seen_tokens.lock().unwrap().clone();
    assert!(!tokens.is_empty(), "the client sent bearer tokens");
    for token in tokens {
        assert!(!recorded.contains(&token), "a token is in the auth record: {recorded}");
    }
}

/// `n` calls on a connection with the default auth options to the healthy endpoint behind `fault`, each of which
/// must succeed: the lab, the connection and what each call saw.
async fn all_succeed(fault: &str, n: usize) -> (Lab, Connection, Vec<(Outcome, Option<u16>, AuthRecord)>) {
    let lab = lab(Some(fault), Endpoint::Healthy).await;
    let connection = connect(&lab, AuthOptions::default()).await;
    let seen = calls(&connection, n).await;
    assert!(seen.iter().all(|(o, _, _)| *o == Outcome::Success), "{seen:?}");
    (lab, connection, seen)
}

#[tokio::test]
async fn the_headless_flow_authorizes_once_and_an_expired_token_is_refreshed() {
    let (lab, connection, seen) = all_succeed(r#"{"type": "token_expired", "after": 2}"#, 3).await;
    assert_eq!(kinds(&seen[0].2), [AuthEventKind::Authorized]);
    assert_eq!(seen[0].2.events[0].scope.as_deref(), Some("mcp:read"));
    assert_eq!((seen[0].2.registrations, seen[0].2.token_requests), (1, 1));
    assert!(kinds(&seen[1].2).is_empty());
    // The third request meets the expired token: one refresh grant, no new authorization.
    assert_eq!(kinds(&seen[2].2), [AuthEventKind::Refreshed]);
    assert_eq!((seen[2].2.token_requests, seen[2].2.authorization_requests), (1, 0));
    assert_no_secret(&lab, &connection);
}

#[tokio::test]
async fn invalid_grant_on_refresh_drops_the_tokens_and_authorizes_again_once() {
    let (lab, connection, seen) = all_succeed(r#"{"type": "refresh_invalid_grant", "times": 1}"#, 3).await;
    assert_eq!(kinds(&seen[1].2), [AuthEventKind::RefreshRefused, AuthEventKind::Reauthorized]);
    assert!(seen[1].2.events[0].detail.as_deref().unwrap().contains("invalid_grant"), "{:?}", seen[1].2);
    // The refused refresh token is never sent again: the next expiry refreshes the new grant's token.
    assert_eq!(kinds(&seen[2].2), [AuthEventKind::Refreshed]);
    assert_no_secret(&lab, &connection);
}

#[tokio::test]
async fn a_busy_authorization_server_keeps_the_tokens() {
    let (_lab, _connection, seen) =
        all_succeed(r#"{"type": "refresh_unavailable", "status": 503, "times": 1}"#, 2).await;
    assert_eq!(kinds(&seen[1].2), [AuthEventKind::RefreshDeferred, AuthEventKind::Refreshed]);
    assert_eq!(seen[1].2.authorization_requests, 0, "no new authorization after a 503");
}

#[tokio::test]
async fn insufficient_scope_steps_up_with_the_union_of_scopes() {
    let (_lab, _connection, seen) = all_succeed(r#"{"type": "insufficient_scope", "after": 1}"#, 3).await;
    assert_eq!(kinds(&seen[1].2), [AuthEventKind::StepUp]);
    assert_eq!(seen[1].2.events[0].scope.as_deref(), Some("mcp:read mcp:write"));
    assert!(kinds(&seen[2].2).is_empty(), "one step-up is enough");
}

#[tokio::test]
async fn step_ups_are_bounded_when_the_resource_keeps_asking() {
    let lab = lab(None, Endpoint::EscalatingScope).await;
    let options = AuthOptions { max_step_ups: 1, ..AuthOptions::default() };
    let connection = connect(&lab, options).await;
    let seen = calls(&connection, 2).await;
    // The 403 is passed on: the authorization, one step-up (to read + write), then the limit.
    assert_eq!((seen[0].0, seen[0].1), (Outcome::Error, Some(403)));
    let expected = [AuthEventKind::Authorized, AuthEventKind::StepUp, AuthEventKind::Failed];
    assert_eq!(kinds(&seen[0].2), expected, "{:?}", seen[0].2);
    assert_eq!(seen[0].2.events[1].scope.as_deref(), Some("mcp:read mcp:write"));
    assert!(seen[0].2.events[2].detail.as_deref().unwrap().contains("limit"));
    // The next call does not start over: still no second step-up.
    assert_eq!((seen[1].0, kinds(&seen[1].2)), (Outcome::Error, vec![AuthEventKind::Failed]));
    assert_eq!(seen.iter().map(|s| s.2.token_requests).sum::<u32>(), 2, "{seen:?}");
}

#[tokio::test]
async fn wrong_metadata_is_refused_before_any_credential_is_sent() {
    for (fault, says) in [
        ("issuer_mismatch", "issuer"),
        ("resource_mismatch", "resource"),
        (r#"{"type": "metadata_missing", "document": "protected_resource"}"#, "404"),
        (r#"{"type": "metadata_missing", "document": "authorization_server"}"#, "no authorization server metadata"),
        ("registration_refused", "registration was refused"),
    ] {
        let lab = lab(Some(fault), Endpoint::Healthy).await;
        let connection = connect(&lab, AuthOptions::default()).await;
        let seen = calls(&connection, 1).await;
        let (outcome, status, record) = &seen[0];
        assert_eq!((*outcome, *status), (Outcome::Error, Some(401)), "{fault}");
        assert_eq!(kinds(record), [AuthEventKind::Failed], "{fault}");
        assert!(record.events[0].detail.as_deref().unwrap().contains(says), "{fault}: {record:?}");
        assert_eq!((record.token_requests, record.authorization_requests), (0, 0), "{fault}");
    }
}

#[tokio::test]
async fn a_denied_authorization_is_reported_and_the_next_call_asks_again() {
    let lab = lab(Some(r#"{"type": "access_denied", "times": 1}"#), Endpoint::Healthy).await;
    let connection = connect(&lab, AuthOptions::default()).await;
    let seen = calls(&connection, 2).await;
    assert_eq!((seen[0].0, seen[0].1), (Outcome::Error, Some(401)));
    assert!(seen[0].2.events[0].detail.as_deref().unwrap().contains("access_denied"), "{:?}", seen[0].2);
    assert_eq!(seen[0].2.token_requests, 0, "no code to exchange");
    assert_eq!((seen[1].0, kinds(&seen[1].2)), (Outcome::Success, vec![AuthEventKind::Authorized]));
}

#[tokio::test]
async fn a_token_that_is_never_valid_ends_in_a_bounded_number_of_token_requests() {
    let lab = lab(Some(r#"{"type": "clock_skew", "seconds": 300}"#), Endpoint::Healthy).await;
    let connection = connect(&lab, AuthOptions::default()).await;
    let seen = calls(&connection, 2).await;
    for (outcome, status, record) in &seen {
        assert_eq!((*outcome, *status), (Outcome::Error, Some(401)), "{record:?}");
        assert!(record.token_requests <= faultlab_client::auth::MAX_ROUNDS_PER_REQUEST, "{record:?}");
    }
}

/// The `(method, carried a bearer token, status)` of the requests to the MCP endpoint with this method.
fn requests(lab: &Lab, method: &str) -> Vec<(bool, u16)> {
    lab.requests.lock().unwrap().iter().filter(|(m, _, _)| m == method).map(|(_, t, s)| (*t, *s)).collect()
}

async fn legacy(lab: &Lab) -> Connection {
    let target = Target::Http { url: lab.url.clone(), headers: Default::default() };
    Connection::open_with(&target, Era::Legacy, DEADLINE, Answers::default(), Some(AuthOptions::default()))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_resumed_stream_and_the_session_end_carry_the_token() {
    let lab = lab(None, Endpoint::CutStream).await;
    let connection = legacy(&lab).await;
    let obs = connection.call_tool("ping", json!({}), DEADLINE).await;
    connection.close().await;
    assert_eq!(obs.outcome, Outcome::Success, "{obs:?}");
    let resumed: Vec<_> = obs.recovery.reconnects.iter().map(|r| (r.last_event_id.as_str(), r.status)).collect();
    assert_eq!(resumed, [("s-0", Some(200))]);
    // Only the first POST went out before there was a token.
    assert_eq!(requests(&lab, "POST").first(), Some(&(false, 401)));
    assert!(requests(&lab, "POST")[1..].iter().all(|r| *r == (true, 200) || *r == (true, 202)), "{:?}", lab.requests);
    assert_eq!(requests(&lab, "GET"), [(true, 200)], "the resume carries the token");
    assert_eq!(requests(&lab, "DELETE"), [(true, 200)], "the session's end carries the token");
    assert_no_secret(&lab, &connection);
}

#[tokio::test]
async fn a_401_on_a_resume_is_refreshed_like_a_post() {
    // The token authorizes initialize, its notification and the call; the resume meets it expired.
    let lab = lab(Some(r#"{"type": "token_expired", "after": 3}"#), Endpoint::CutStream).await;
    let connection = legacy(&lab).await;
    let before = connection.auth_record().unwrap();
    let obs = connection.call_tool("ping", json!({}), DEADLINE).await;
    let during = connection.auth_record().unwrap().since(&before);
    assert_eq!(obs.outcome, Outcome::Success, "{obs:?}");
    assert_eq!(requests(&lab, "GET"), [(true, 401), (true, 200)], "refused with the dead token, then sent again");
    assert_eq!(kinds(&during), [AuthEventKind::Refreshed], "{during:?}");
    assert_eq!((during.token_requests, during.authorization_requests), (1, 0));
    // One resume as the stream's record has it: the refresh is the auth mode's, not another reconnect.
    let statuses: Vec<_> = obs.recovery.reconnects.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(200)]);
    assert_no_secret(&lab, &connection);
}
