//! Streamable HTTP: every client message is a POST; answers come back as a JSON body or an SSE stream.

use super::{Incoming, IncomingTx, is_loopback_http};
use crate::auth::{AuthOptions, AuthRecord, AuthSession};
use crate::recovery::{DEFAULT_RETRY_MS, MAX_RECONNECTS, MAX_RETRY_WAIT_MS, Reconnect, Recovery};
use bytes::{Bytes, BytesMut};
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, Kind, MessageId, SseDecoder};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::task::AbortHandle;
use tokio_util::codec::Decoder;

pub struct HttpTransport {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    /// `Mcp-Session-Id` once a legacy `initialize` has minted one; set by the reader of that answer.
    session: Arc<Mutex<Option<String>>>,
    /// The `MCP-Protocol-Version` header to send.
    protocol: Mutex<Option<String>>,
    incoming: IncomingTx,
    /// The answer readers of requests in flight, so a modern cancel can drop the stream.
    readers: Mutex<HashMap<MessageId, AbortHandle>>,
    /// Whether the server was ever reached (see [`HttpTransport::unreachable`]).
    reach: Arc<Mutex<Reach>>,
    /// The auth mode, when on: it sends every request (POSTs, the `GET`s resuming a stream, the closing `DELETE`)
    /// with its bearer token and answers the challenges.
    auth: Option<Arc<AuthSession>>,
    /// Whether a response stream closed before its reply is resumed (the reference client's; a proxy's upstream
    /// passes the stream on as it came).
    resumes: bool,
    /// Resumes and duplicate events of each request's response stream.
    streams: Arc<Mutex<HashMap<MessageId, Recovery>>>,
}

/// Whether the server has answered anything, and the first connection it refused before it had.
#[derive(Default)]
struct Reach {
    answered: bool,
    refused: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum HttpTargetError {
    #[error("HTTP targets must be plain http:// URLs on a loopback host (localhost, 127.x.y.z, [::1]); got {0}")]
    NotLoopback(String),
    #[error("header {0:?} is not a valid HTTP header")]
    BadHeader(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

impl HttpTransport {
    pub fn new(url: &str, headers: &BTreeMap<String, String>, incoming: IncomingTx) -> Result<Self, HttpTargetError> {
        let parsed = reqwest::Url::parse(url).map_err(|_| HttpTargetError::NotLoopback(url.into()))?;
        if !is_loopback_http(&parsed) {
            return Err(HttpTargetError::NotLoopback(url.into()));
        }
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let bad = || HttpTargetError::BadHeader(name.clone());
            let name_ = HeaderName::try_from(name.as_str()).map_err(|_| bad())?;
            map.insert(name_, HeaderValue::try_from(value).map_err(|_| bad())?);
        }
        // Redirects are errors: a test target that redirects is not the target that was named.
        let client = crate::tls::client_builder().redirect(reqwest::redirect::Policy::none()).build()?;
        Ok(Self { resumes: true, ..Self::with_client(url, map, client, incoming) })
    }

    /// A transport on a client the caller built and a URL it checked (the proxy's upstream may be https:// on
    /// any host; its client carries the TLS trust). `headers` go with every request.
    pub fn with_client(url: &str, headers: HeaderMap, client: reqwest::Client, incoming: IncomingTx) -> Self {
        Self {
            client,
            url: url.to_owned(),
            headers,
            session: Arc::default(),
            protocol: Mutex::default(),
            incoming,
            readers: Mutex::default(),
            reach: Arc::default(),
            auth: None,
            resumes: false,
            streams: Arc::default(),
        }
    }

    /// Turns the auth mode on (see [`crate::auth`]): its own requests go through this transport's client.
    pub fn set_auth(&mut self, options: AuthOptions) {
        self.auth = Some(Arc::new(AuthSession::new(self.client.clone(), &self.url, options)));
    }

    /// What the auth mode did so far (`None` when it is off).
    pub fn auth_record(&self) -> Option<AuthRecord> {
        self.auth.as_ref().map(|a| a.record())
    }

    /// What the client did on request `id`'s response stream: its resumes and the duplicate events it dropped.
    pub fn stream_recovery(&self, id: &MessageId) -> Recovery {
        lock(&self.streams).get(id).cloned().unwrap_or_default()
    }

    /// Nothing listens at the URL: every connection so far was refused and no response ever came, in words (`None`
    /// once anything answered, or when the connection broke after it was made: that is the server's doing, e.g. a
    /// `disconnect` fault, and a verdict on the client).
    pub fn unreachable(&self) -> Option<String> {
        let reach = lock(&self.reach);
        let refused = reach.refused.as_ref().filter(|_| !reach.answered)?;
        Some(format!(
            "could not connect to {} before it answered anything ({refused}): is the server listening?",
            self.url
        ))
    }

    pub fn set_protocol(&self, version: &str) {
        *lock(&self.protocol) = Some(version.to_owned());
    }

    pub fn session(&self) -> Option<String> {
        lock(&self.session).clone()
    }

    /// Forgets the session id (the server lost the session): the next `initialize` is sent without one.
    pub fn clear_session(&self) {
        *lock(&self.session) = None;
    }

    /// POSTs one message. Whatever answers it (frames, an error status, a broken stream) arrives on the incoming
    /// channel, tagged with the request id when the message was a request. The returned task ends when the answer
    /// has been read (dropping the handle does not stop it).
    pub fn post(&self, frame: &Frame) -> tokio::task::JoinHandle<()> {
        let protocol = lock(&self.protocol).clone();
        let mut request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(frame.bytes().clone());
        if let Some(session) = self.session() {
            request = request.header("mcp-session-id", session);
        }
        // A 2026-07-28 request names its version itself; a legacy request uses the one its session negotiated.
        let own = frame
            .value()
            .and_then(|v| v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion"))
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        let version = own.or(protocol);
        if let Some(version) = &version {
            request = request.header("mcp-protocol-version", version);
            // 2026-07-28 mirrors the method, and the name, uri or task id it acts on, in headers.
            if version.as_str() >= "2026-07-28"
                && let Some(method) = frame.method()
            {
                request = request.header("mcp-method", method);
                if let Some(name) = frame.mcp_name() {
                    request = request.header("mcp-name", name);
                }
            }
        }
        let id = frame.method().and(frame.id().cloned());
        let resume = Resume {
            client: self.client.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            protocol: version,
            enabled: self.resumes,
            streams: self.streams.clone(),
        };
        let (incoming, session, reach) = (self.incoming.clone(), self.session.clone(), self.reach.clone());
        let task = tokio::spawn(read_answer(request, resume, id.clone(), incoming, session, reach, self.auth.clone()));
        if let Some(id) = id {
            lock(&self.readers).insert(id, task.abort_handle());
        }
        task
    }

    /// Drops the answer stream of request `id` (how 2026-07-28 cancels over HTTP).
    pub fn drop_stream(&self, id: &MessageId) {
        if let Some(reader) = lock(&self.readers).remove(id) {
            reader.abort();
        }
    }

    /// Ends a legacy session with DELETE (a server may answer 405: nothing to end).
    pub async fn end_session(&self) {
        let Some(session) = self.session() else { return };
        let mut request = self.client.delete(&self.url).headers(self.headers.clone()).header("mcp-session-id", session);
        if let Some(version) = lock(&self.protocol).clone() {
            request = request.header("mcp-protocol-version", version);
        }
        let _ = crate::auth::send(self.auth.as_deref(), request).await;
    }
}

/// What a resuming `GET` needs: the transport's client, URL and headers, and the version the POST carried.
struct Resume {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    protocol: Option<String>,
    enabled: bool,
    streams: Arc<Mutex<HashMap<MessageId, Recovery>>>,
}

impl Resume {
    fn note(&self, id: &MessageId, note: impl FnOnce(&mut Recovery)) {
        note(lock(&self.streams).entry(id.clone()).or_default());
    }
}

/// A response stream as the client follows it across resumes.
#[derive(Default)]
struct StreamState {
    /// The last non-empty event id (an empty `id:` clears it, as WHATWG SSE says): the resume token.
    last_event_id: Option<String>,
    /// The last `retry:`, in ms.
    retry_ms: Option<u64>,
    /// Every event id delivered so far, to drop a replay of seen events.
    seen: HashSet<String>,
    /// A response (or an unreadable message in its place) arrived: the stream has given its reply, right or
    /// wrong, and is not resumed.
    replied: bool,
}

/// How a response body ended.
enum BodyEnd {
    /// The body ended cleanly.
    Closed,
    /// The body broke off (a reset, an abort).
    Broke(String),
}

async fn read_answer(
    request: reqwest::RequestBuilder,
    resume: Resume,
    id: Option<MessageId>,
    incoming: IncomingTx,
    session: Arc<Mutex<Option<String>>>,
    reach: Arc<Mutex<Reach>>,
    auth: Option<Arc<AuthSession>>,
) {
    read_answer_body(request, &resume, id.clone(), &incoming, session, &reach, auth.as_deref()).await;
    // The answer is over, however it ended. If it did not answer the request (a wrong id, say), nothing else will:
    // over HTTP a request's answer only ever comes on its own response.
    if let Some(id) = id {
        let _ = incoming.send(Incoming::Ended { id });
    }
}

async fn read_answer_body(
    request: reqwest::RequestBuilder,
    resume: &Resume,
    id: Option<MessageId>,
    incoming: &IncomingTx,
    session: Arc<Mutex<Option<String>>>,
    reach: &Mutex<Reach>,
    auth: Option<&AuthSession>,
) {
    // Only a request can be lost; a notification's failed POST has nothing waiting on it.
    let lost = |detail: String| {
        if let Some(id) = &id {
            let _ = incoming.send(Incoming::Lost { id: Some(id.clone()), detail });
        }
    };
    let response = match crate::auth::send(auth, request).await {
        Ok(response) => response,
        Err(e) => {
            // Without the URL: the caller knows it, and its query may carry a key.
            let e = e.without_url();
            if e.is_connect() {
                lock(reach).refused.get_or_insert_with(|| describe(&e));
            }
            lost(format!("HTTP request failed: {}", describe(&e)));
            return;
        }
    };
    lock(reach).answered = true;
    if let Some(minted) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
        *lock(&session) = Some(minted.to_owned());
    }
    let status = response.status().as_u16();
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    if !(200..300).contains(&status) {
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = response.bytes().await.unwrap_or_default();
        if let Some(id) = id {
            let _ = incoming.send(Incoming::HttpStatus { id, status, retry_after, body });
        }
        return;
    }
    if !content_type.starts_with("text/event-stream") {
        match response.bytes().await {
            Ok(body) if body.is_empty() => {}
            Ok(body) => {
                let frame = Frame::parse(body);
                let message = !matches!(frame.kind(), Kind::Other | Kind::Unparsable);
                let _ = incoming.send(match id {
                    Some(id) if !message => Incoming::Answer { id, frame },
                    _ => Incoming::Frame(frame),
                });
            }
            Err(e) => lost(format!("the response body broke off: {e}")),
        }
        return;
    }
    let mut state = StreamState::default();
    let mut end = read_events(response, id.as_ref(), resume, &mut state, incoming).await;
    // Only a request's stream is resumed: a notification's carries nothing the client waits for.
    let Some(id) = id.clone() else { return };
    if !resume.enabled {
        if let BodyEnd::Broke(e) = end {
            lost(format!("the response stream broke off: {e}"));
        }
        return;
    }
    let mut reconnects = 0;
    loop {
        if state.replied {
            return;
        }
        let why = match &end {
            BodyEnd::Closed => "the response stream ended before the reply".to_owned(),
            BodyEnd::Broke(e) => format!("the response stream broke off before the reply: {e}"),
        };
        let Some(last_event_id) = state.last_event_id.clone() else {
            lost(format!("{why}, and it carried no event id to resume from"));
            return;
        };
        if reconnects == MAX_RECONNECTS {
            lost(format!("{why}; {MAX_RECONNECTS} resumes did not bring it"));
            return;
        }
        reconnects += 1;
        let waited_ms = state.retry_ms.unwrap_or(DEFAULT_RETRY_MS).min(MAX_RETRY_WAIT_MS);
        tokio::time::sleep(std::time::Duration::from_millis(waited_ms)).await;
        let mut get = resume
            .client
            .get(&resume.url)
            .headers(resume.headers.clone())
            .header("accept", "text/event-stream")
            .header("last-event-id", &last_event_id);
        let in_session = lock(&session).clone();
        if let Some(session) = &in_session {
            get = get.header("mcp-session-id", session);
        }
        if let Some(version) = &resume.protocol {
            get = get.header("mcp-protocol-version", version);
        }
        // Through the auth mode as the POST went: the resume carries the token, and a 401 on it gets the same
        // refresh (or re-authorization) and one more try.
        let answer = crate::auth::send(auth, get).await;
        let status = answer.as_ref().ok().map(|r| r.status().as_u16());
        resume.note(&id, |r| r.reconnects.push(Reconnect { last_event_id, waited_ms, status }));
        let response = match answer {
            Ok(response) if response.status().is_success() => response,
            // A 404 (or a 400 naming the session: `session_gone`) to a request that carried the session's id says
            // the session is gone, a resume's as a POST's: the client MUST start a new session (2025-11-25, Session
            // Management). Passed on as the request's status, so the connection opens a new one as after a POST's;
            // the call stays failed (never sent again blindly). Taken for a lost call alone, the next request met
            // the forgotten session too.
            Ok(response) if matches!(response.status().as_u16(), 400 | 404) && in_session.is_some() => {
                let status = response.status().as_u16();
                let body = response.bytes().await.unwrap_or_default();
                let error: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
                if !crate::connection::session_gone(status, error.as_ref()) {
                    lost(format!("{why}, and resuming it was answered HTTP {status}"));
                    return;
                }
                // The response is lost all the same: the stream broke before the reply and will not be resumed.
                resume.note(&id, |r| r.lost_responses = 1);
                let _ = incoming.send(Incoming::HttpStatus { id, status, retry_after: None, body });
                return;
            }
            Ok(response) => {
                lost(format!("{why}, and resuming it was answered HTTP {}", response.status().as_u16()));
                return;
            }
            Err(e) => {
                lost(format!("{why}, and resuming it failed: {}", describe(&e.without_url())));
                return;
            }
        };
        end = read_events(response, Some(&id), resume, &mut state, incoming).await;
    }
}

/// Reads one SSE body to its end, passing each event's data on as a frame and following its ids and `retry:`.
async fn read_events(
    response: reqwest::Response,
    id: Option<&MessageId>,
    resume: &Resume,
    state: &mut StreamState,
    incoming: &IncomingTx,
) -> BodyEnd {
    let mut stream = response.bytes_stream();
    let mut decoder = SseDecoder::default();
    let mut buf = BytesMut::new();
    loop {
        let chunk = stream.next().await;
        let at_end = !matches!(chunk, Some(Ok(_)));
        let mut broke = None;
        match chunk {
            Some(Ok(bytes)) => buf.extend_from_slice(&bytes),
            Some(Err(e)) => broke = Some(e.without_url().to_string()),
            None => {}
        }
        loop {
            let event = if at_end { decoder.decode_eof(&mut buf) } else { decoder.decode(&mut buf) };
            let Ok(Some(event)) = event else { break };
            if let Some(retry) = event.retry {
                state.retry_ms = Some(retry);
            }
            match event.id {
                // An explicit empty `id:` resets the last event id: there is nothing to resume from any more.
                Some(event_id) if event_id.is_empty() => state.last_event_id = None,
                Some(event_id) => {
                    if !state.seen.insert(event_id.clone()) {
                        if let Some(id) = id {
                            resume.note(id, |r| r.duplicate_events += 1);
                        }
                        continue;
                    }
                    state.last_event_id = Some(event_id);
                }
                None => {}
            }
            if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                let frame = Frame::parse(Bytes::from(data));
                if !matches!(frame.kind(), Kind::Request { .. } | Kind::Notification { .. }) {
                    state.replied = true;
                }
                let _ = incoming.send(Incoming::Frame(frame));
            }
        }
        if let Some(e) = broke {
            return BodyEnd::Broke(e);
        }
        if at_end {
            return BodyEnd::Closed;
        }
    }
}

/// An error and its causes, each once (reqwest's own text names only the URL): `error sending request for url
/// (…): client error (Connect): invalid peer certificate: UnknownIssuer`.
pub fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        // A wrapper often repeats its cause's text, or its cause repeats the wrapper's.
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.retain(|p| !text.contains(p.as_str()));
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}
