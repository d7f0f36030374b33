//! Streamable HTTP: every client message is a POST; answers come back as a JSON body or an SSE stream.

use super::{Incoming, IncomingTx, is_loopback_http};
use crate::auth::{AuthOptions, AuthRecord, AuthSession};
use bytes::{Bytes, BytesMut};
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, MessageId, SseDecoder};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::collections::{BTreeMap, HashMap};
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
    /// The auth mode, when on: it sends every POST with its bearer token and answers the challenges.
    auth: Option<Arc<AuthSession>>,
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
        Ok(Self::with_client(url, map, client, incoming))
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
        if let Some(version) = own.or(protocol) {
            let version = &version;
            request = request.header("mcp-protocol-version", version);
            // 2026-07-28 mirrors the method and the tool name in headers.
            if version.as_str() >= "2026-07-28"
                && let Some(method) = frame.method()
            {
                request = request.header("mcp-method", method);
                if let Some(name) = frame.tool_name() {
                    request = request.header("mcp-name", name);
                }
            }
        }
        let id = frame.method().and(frame.id().cloned());
        let (incoming, session, reach) = (self.incoming.clone(), self.session.clone(), self.reach.clone());
        let task = tokio::spawn(read_answer(request, id.clone(), incoming, session, reach, self.auth.clone()));
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

async fn read_answer(
    request: reqwest::RequestBuilder,
    id: Option<MessageId>,
    incoming: IncomingTx,
    session: Arc<Mutex<Option<String>>>,
    reach: Arc<Mutex<Reach>>,
    auth: Option<Arc<AuthSession>>,
) {
    read_answer_body(request, id.clone(), &incoming, session, &reach, auth.as_deref()).await;
    // The answer is over, however it ended. If it did not answer the request (a wrong id, say), nothing else will:
    // over HTTP a request's answer only ever comes on its own response.
    if let Some(id) = id {
        let _ = incoming.send(Incoming::Ended { id });
    }
}

async fn read_answer_body(
    request: reqwest::RequestBuilder,
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
    if content_type.starts_with("text/event-stream") {
        let mut stream = response.bytes_stream();
        let mut decoder = SseDecoder::default();
        let mut buf = BytesMut::new();
        loop {
            let chunk = stream.next().await;
            let at_end = !matches!(chunk, Some(Ok(_)));
            match chunk {
                Some(Ok(bytes)) => buf.extend_from_slice(&bytes),
                Some(Err(e)) => {
                    lost(format!("the response stream broke off: {e}"));
                    return;
                }
                None => {}
            }
            loop {
                let event = if at_end { decoder.decode_eof(&mut buf) } else { decoder.decode(&mut buf) };
                let Ok(Some(event)) = event else { break };
                if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                    let _ = incoming.send(Incoming::Frame(Frame::parse(Bytes::from(data))));
                }
            }
            if at_end {
                break;
            }
        }
    } else {
        match response.bytes().await {
            Ok(body) if body.is_empty() => {}
            Ok(body) => {
                let _ = incoming.send(Incoming::Frame(Frame::parse(body)));
            }
            Err(e) => lost(format!("the response body broke off: {e}")),
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
