//! `faultlab model`: a loopback model endpoint that speaks the OpenAI Chat Completions and Responses APIs and the
//! Anthropic Messages API (streaming and not), answering from a [`script`] instead of a language model, so an
//! agent framework can be run against MCP faults offline and deterministically.
//!
//! - [`script`]: the tool calls to ask for and what to do with a failed result; the turn is a pure function of
//!   the tool results a request carries back.
//! - [`api`]: the three API shapes (reading requests, writing bodies and errors); [`stream`]: their SSE events.
//! - [`hop`]: catalogue faults on this hop, chosen by the proxy's rule set.
//! - [`models`]: `GET /v1/models`, naming the model the script serves.
//! - [`limits`]: what one request may cost (bytes, and JSON values counted before parsing).
//!
//! Every request is written to the recording (JSON lines) before it is answered: what the framework passed back
//! to the model after each fault is the evidence.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod api;
pub mod chain;
pub mod hop;
pub mod limits;
pub mod models;
pub mod quota;
pub mod recorded;
pub mod script;
pub mod stream;

use api::{Api, Ctx, Output};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use faultlab_http::guard::AllowedHosts;
use faultlab_http::server::Limits;
use faultlab_proxy::rules::{Fired, RuleSet, RulesError, RulesFile};
use faultlab_wire::Frame;
use faultlab_wire::sync::lock;
use futures::StreamExt as _;
use hop::HopFault;
use http::{HeaderValue, StatusCode, header};
use script::{Script, ToolResult, Turn};
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use limits::{MAX_JSON_VALUES, MAX_REQUEST_BYTES, REQUEST_MEMORY_BUDGET};

/// Everything one endpoint needs.
pub struct Options {
    pub script: Script,
    /// The rules (already checked by [`rules`]).
    pub rules: RuleSet,
    /// Where each request is written as one JSON line.
    pub record: Option<Box<dyn std::io::Write + Send>>,
    pub allowed: AllowedHosts,
    pub limits: Limits,
    /// Largest request body in bytes ([`MAX_REQUEST_BYTES`] by default); a longer one gets 413.
    pub max_request_bytes: usize,
    /// What the requests being read and parsed may hold at once, in bytes ([`REQUEST_MEMORY_BUDGET`] by default);
    /// beyond it a request gets 503.
    pub request_budget: usize,
    /// `--record-from`: answer from this real endpoint instead of the script, recording its answers.
    pub upstream: Option<recorded::Upstream>,
    /// `--script recording.jsonl`: answer from a recording's answers instead of the script.
    pub replay: Option<recorded::Replay>,
}

/// The rule set for this hop: the proxy's, refusing faults the hop cannot carry and restarts it has nothing to
/// restart for.
pub fn rules(file: RulesFile) -> Result<RuleSet, RulesError> {
    hop::check(&file)?;
    RuleSet::for_model(file, false)
}

/// Serves the endpoint on `listener` until `shutdown` is cancelled.
pub async fn serve(listener: TcpListener, options: Options, shutdown: CancellationToken) -> std::io::Result<()> {
    let limits = options.limits;
    faultlab_http::server::serve(listener, router(options), limits, shutdown).await
}

/// The endpoint as an axum router (every path: unknown ones get 404 in the OpenAI error shape).
pub fn router(options: Options) -> axum::Router {
    let model = Arc::new(Model {
        script: options.script,
        rules: Mutex::new(options.rules),
        record: options.record.map(Mutex::new),
        allowed: options.allowed,
        max_request_bytes: options.max_request_bytes,
        budget: limits::Budget::new(options.request_budget),
        started: Instant::now(),
        seq: AtomicU64::new(0),
        quotas: Mutex::new(quota::Windows::default()),
        chain: Mutex::new(chain::Chain::default()),
        upstream: options.upstream,
        replay: options.replay,
    });
    axum::Router::new().fallback(move |request: axum::extract::Request| {
        let model = model.clone();
        async move { model.answer(request).await }
    })
}

struct Model {
    script: Script,
    rules: Mutex<RuleSet>,
    record: Option<Mutex<Box<dyn std::io::Write + Send>>>,
    allowed: AllowedHosts,
    max_request_bytes: usize,
    budget: limits::Budget,
    started: Instant,
    seq: AtomicU64,
    /// `token_quota`'s windows, one per rule.
    quotas: Mutex<quota::Windows>,
    /// The Responses conversations this run answered, for `previous_response_id`.
    chain: Mutex<chain::Chain>,
    upstream: Option<recorded::Upstream>,
    replay: Option<recorded::Replay>,
}

/// One line of the recording.
#[derive(Serialize)]
struct Record<'a> {
    seq: u64,
    /// Since the endpoint started.
    at_ms: u64,
    api: &'static str,
    stream: bool,
    /// The tool results the request carried back, each with whether the script counted it failed.
    tool_results: Vec<Recorded<'a>>,
    /// The scripted turn (absent when the request could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<&'a Turn>,
    /// The rule that fired, its mode and fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    fault: Option<Value>,
    /// Why the fault that fired could not change this answer (its shape cannot carry it); it went out unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<&'a str>,
    /// `requests` or `tokens`: the `token_quota` this request was over (answered 429).
    #[serde(skip_serializing_if = "Option::is_none")]
    over_quota: Option<&'static str>,
    /// The answer the real endpoint gave (`--record-from`) or the recording's answer replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a recorded::Answer>,
    /// Why the request was refused (400, 408, 413).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    /// The request body as received (a string when it is not JSON).
    request: &'a Value,
}

#[derive(Serialize)]
struct Recorded<'a> {
    #[serde(flatten)]
    result: &'a ToolResult,
    failed: bool,
}

impl Model {
    async fn answer(&self, request: axum::extract::Request) -> Response {
        if let Some(refused) = faultlab_http::check_origin(&request, &self.allowed) {
            return refused;
        }
        let path = request.uri().path();
        if models::is_models_path(path) {
            return models::answer(request.method(), path, request.headers(), self.script.model.as_deref());
        }
        let Some(api) = Api::from_path(path) else {
            let message = format!(
                "no such endpoint {path}: faultlab model serves POST /v1/chat/completions, /v1/responses, \
                 /v1/messages and /v1beta/models/MODEL:generateContent (and :streamGenerateContent?alt=sse), and GET \
                 /v1/models"
            );
            return error(Api::ChatCompletions, StatusCode::NOT_FOUND, &message);
        };
        // Gemini names the model and the stream in its path; its stream is SSE only with `alt=sse` (without, the
        // API streams one JSON array, which no SDK asks for).
        let gemini = api::gemini_call(path);
        let sse = request.uri().query().is_some_and(|q| q.split('&').any(|pair| pair == "alt=sse"));
        if gemini.as_ref().is_some_and(|call| call.stream && !sse) {
            let message = "streamGenerateContent: faultlab model streams as server-sent events only; add ?alt=sse";
            return error(api, StatusCode::BAD_REQUEST, message);
        }
        if request.method() != http::Method::POST {
            let mut refused = error(api, StatusCode::METHOD_NOT_ALLOWED, "only POST is served here");
            refused.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
            return refused;
        }
        let (parts, body) = request.into_parts();
        // The body's bytes are taken from the budget before it is read (all the limit allows when its length is
        // not declared), what parsing it costs once its values are counted; all given back before the answer
        // goes out, so a latency or a hang holds none of it.
        let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let at_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut held = match self.budget.take(declared.unwrap_or(usize::MAX).min(self.max_request_bytes)) {
            Some(held) => held,
            None => return self.busy(seq, at_ms, api),
        };
        let read_body = faultlab_http::read_body(&parts.headers, body, self.max_request_bytes).await;
        let bytes = match read_body {
            Ok(bytes) => bytes,
            Err(refused) => {
                let status = refused.status();
                let message = limits::unread(status, self.max_request_bytes);
                let mut response = self.refuse(seq, at_ms, api, status, &message, &Value::Null);
                if let Some(close) = refused.headers().get(header::CONNECTION) {
                    response.headers_mut().insert(header::CONNECTION, close.clone());
                }
                return response;
            }
        };
        // Counted on the bytes before anything is built: a wide body is refused at the cost of its size.
        let Some(values) = limits::values(&bytes, MAX_JSON_VALUES) else {
            let message = format!(
                "the request body holds more than {MAX_JSON_VALUES} JSON values, the most faultlab model parses"
            );
            let text = Value::String(String::from_utf8_lossy(&bytes).into_owned());
            return self.refuse(seq, at_ms, api, StatusCode::PAYLOAD_TOO_LARGE, &message, &text);
        };
        // The parsed values, and the strings' text twice: in the parsed body and in the recording's line.
        if !held.grow(values.saturating_mul(limits::VALUE_BYTES).saturating_add(bytes.len().saturating_mul(2))) {
            return self.busy(seq, at_ms, api);
        }
        let body: Result<Value, String> =
            serde_json::from_slice(&bytes).map_err(|e| format!("the body is not JSON: {e}"));
        // A Responses request naming an earlier response continues that conversation: read as the whole of it.
        let expanded = match (&body, api) {
            (Ok(b), Api::Responses) => lock(&self.chain).expand(b),
            _ => Ok(None),
        };
        let read = match &expanded {
            Ok(Some(whole)) => api::parse(api, whole),
            Ok(None) => body.as_ref().map_err(Clone::clone).and_then(|b| api::parse(api, b)),
            Err(message) => Err(message.clone()),
        };
        let request_value = body.unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        let api::Request { model, stream, include_usage, tools, results } = match read {
            Ok(read) => read,
            Err(message) => return self.refuse(seq, at_ms, api, StatusCode::BAD_REQUEST, &message, &request_value),
        };
        let (model, stream) = match gemini {
            Some(call) => (call.model, call.stream),
            None => (model, stream),
        };
        let walk = self.script.walk(&results);
        let turn = walk.turn;
        let fired = self.decide(api, seq);
        let fault = fired.as_ref().and_then(|f| HopFault::of(&f.fault));
        let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let ctx = Ctx { seq, model: self.script.model.clone().unwrap_or(model), created };
        let mut output = match &turn {
            Turn::Call { tool, arguments, .. } => Output::call(
                ctx.call_id(api),
                script::resolve(tool, &tools).to_owned(),
                Value::Object(arguments.clone()).to_string(),
            ),
            Turn::Answer { text, .. } => Output::text(text.clone()),
        };
        // A real endpoint's answer (`--record-from`) or a recording's, instead of the script's.
        let recorded = if let Some(upstream) = &self.upstream {
            let target = parts.uri.path_and_query().map_or(parts.uri.path(), |p| p.as_str()).to_owned();
            let limit = recorded::MAX_ANSWER_BYTES;
            Some(upstream.forward(api, &target, &parts.headers, bytes.clone(), limit).await)
        } else {
            self.replay.as_ref().map(|replay| {
                replay.answer(api, stream, results.len()).ok_or_else(|| {
                    format!(
                        "the recording has no answer for this turn (a {} request, stream {stream}, {} tool results \
                         carried back)",
                        api.name(),
                        results.len()
                    )
                })
            })
        };
        let recorded = match recorded {
            None => None,
            Some(Ok(answer)) => Some(answer),
            Some(Err(message)) => {
                return self.refuse(seq, at_ms, api, StatusCode::BAD_GATEWAY, &message, &request_value);
            }
        };
        // A fault that changes the answer itself; one this answer's shape cannot carry is skipped, and recorded so.
        let mut skipped = None;
        if let (Some(HopFault::Shape(_)), Some(_)) = (&fault, &recorded) {
            skipped = Some("a recorded answer is sent as it was recorded".to_owned());
        } else if let Some(HopFault::Shape(shape)) = &fault {
            match shape.apply(api, stream, output.clone(), ctx.call_id(api)) {
                Ok(changed) => output = changed,
                Err(why) => skipped = Some(why),
            }
        }
        let quota = match (&fault, &fired) {
            (Some(HopFault::Quota(quota)), Some(fired)) => {
                let now = self.started.elapsed();
                Some(lock(&self.quotas).count(&fired.rule, quota, now, quota::tokens(bytes.len())))
            }
            _ => None,
        };
        let record = Record {
            seq,
            at_ms,
            api: api.name(),
            stream,
            tool_results: results.iter().zip(walk.failed).map(|(result, failed)| Recorded { result, failed }).collect(),
            turn: if recorded.is_some() { None } else { Some(&turn) },
            fault: fired.as_ref().map(|f| json!({"rule": f.rule, "mode": f.mode, "fault": f.fault})),
            skipped: skipped.as_deref(),
            over_quota: quota.as_ref().and_then(|q| q.refused),
            answer: recorded.as_ref(),
            error: None,
            request: &request_value,
        };
        if let Err(e) = self.write(&record) {
            return unrecorded(e);
        }
        if api == Api::Responses {
            let sent = match &expanded {
                Ok(Some(whole)) => whole.get("input"),
                _ => request_value.get("input"),
            };
            let output = api::items(&ctx, &output, true);
            lock(&self.chain).keep(format!("resp_fl{seq}"), sent.unwrap_or(&Value::Null), output);
        }
        drop(expanded);
        // The request is answered from here on: what it cost goes back to the budget before any fault waits.
        drop(record);
        drop((request_value, results, bytes, held));
        let rendered = match recorded {
            Some(answer) => Rendered::Recorded(answer),
            None => Rendered::Scripted { output: &output, include_usage },
        };
        respond(api, &ctx, rendered, stream, fault, quota).await
    }

    /// Over the request memory budget: 503 with `Retry-After`, recorded. The connection is not kept: the body
    /// may still be on its way.
    fn busy(&self, seq: u64, at_ms: u64, api: Api) -> Response {
        let message = format!(
            "faultlab model is busy reading and parsing other requests ({} of its {} bytes held); retry",
            self.budget.held(),
            self.budget.limit()
        );
        let mut response = self.refuse(seq, at_ms, api, StatusCode::SERVICE_UNAVAILABLE, &message, &Value::Null);
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }

    /// The rule that fires for this request: the proxy's rule set sees it as a request whose method is the API's
    /// name (rules naming a tool or its arguments were refused when loaded).
    fn decide(&self, api: Api, seq: u64) -> Option<Fired> {
        let frame = Frame::from_value(json!({"jsonrpc": "2.0", "id": seq, "method": api.name()}));
        let mut rules = lock(&self.rules);
        rules.decide(&frame, self.started.elapsed())
    }

    /// A refused request: recorded with why (`request` is the body, as text when it was not parsed, null when it
    /// was not read), then answered with `status` in the API's error shape.
    fn refuse(&self, seq: u64, at_ms: u64, api: Api, status: StatusCode, message: &str, request: &Value) -> Response {
        let record = Record {
            seq,
            at_ms,
            api: api.name(),
            stream: false,
            tool_results: Vec::new(),
            turn: None,
            fault: None,
            skipped: None,
            over_quota: None,
            answer: None,
            error: Some(message),
            request,
        };
        if let Err(e) = self.write(&record) {
            return unrecorded(e);
        }
        error(api, status, message)
    }

    /// Writes one line of the recording before the answer goes out.
    fn write(&self, record: &Record<'_>) -> std::io::Result<()> {
        let Some(file) = &self.record else { return Ok(()) };
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = lock(file);
        file.write_all(&line).and_then(|()| file.flush())
    }
}

/// A recording that cannot be written fails the request (500) rather than leaving a gap no one sees.
fn unrecorded(e: std::io::Error) -> Response {
    let message = format!("faultlab model cannot write its recording: {e}");
    error(Api::ChatCompletions, StatusCode::INTERNAL_SERVER_ERROR, &message)
}

/// What an answer is made from: the script's turn, or a recorded answer as it was given.
enum Rendered<'a> {
    Scripted { output: &'a Output, include_usage: bool },
    Recorded(recorded::Answer),
}

/// A recorded body as it goes out: a stream event by event (each ending in its blank line), a JSON body whole.
fn recorded_chunks(body: &str, stream: bool) -> Vec<Bytes> {
    if !stream {
        return vec![Bytes::from(body.to_owned())];
    }
    body.split_inclusive("\n\n").map(|event| Bytes::from(event.to_owned())).collect()
}

/// The answer on the wire, with the fault the rules chose (`quota`: what `token_quota` said about it).
async fn respond(
    api: Api,
    ctx: &Ctx,
    rendered: Rendered<'_>,
    stream: bool,
    fault: Option<HopFault>,
    quota: Option<quota::Verdict>,
) -> Response {
    let (chunks, status, content_type): (Vec<Bytes>, StatusCode, String) = match &rendered {
        Rendered::Scripted { output, include_usage } if stream => (
            stream::events(api, ctx, output, *include_usage).iter().map(stream::Event::bytes).collect(),
            StatusCode::OK,
            "text/event-stream".into(),
        ),
        Rendered::Scripted { output, .. } => {
            (vec![Bytes::from(api::body(api, ctx, output).to_string())], StatusCode::OK, "application/json".into())
        }
        Rendered::Recorded(answer) => (
            recorded_chunks(&answer.body, stream && answer.status == 200),
            StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY),
            answer.content_type.clone(),
        ),
    };
    let mut pace = None;
    let (chunks, cut) = match fault {
        None | Some(HopFault::Shape(_)) => (chunks, false),
        Some(HopFault::Latency(delay)) => {
            tokio::time::sleep(delay).await;
            (chunks, false)
        }
        Some(HopFault::Status { status, retry_after_sec }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = error(api, status, &hop::message(status.as_u16()));
            if let Some(secs) = retry_after_sec {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            return response;
        }
        Some(HopFault::Overloaded { before_stream }) if before_stream || !stream => {
            let (status, body) = hop::overloaded(api);
            return json_error(StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE), &body);
        }
        Some(HopFault::Overloaded { .. }) => {
            // The stream starts, then breaks with the provider's error event, and ends.
            let mut chunks = chunks;
            let keep = (chunks.len() / 2).max(1);
            chunks.truncate(keep);
            chunks.push(hop::overloaded_event(api, keep).bytes());
            (chunks, false)
        }
        Some(HopFault::ContextLength) => return json_error(StatusCode::BAD_REQUEST, &hop::context_length(api)),
        Some(HopFault::Quota(_)) => match &quota {
            Some(verdict) if verdict.refused.is_some() => {
                let mut response = json_error(StatusCode::TOO_MANY_REQUESTS, &verdict.body(api, &ctx.model));
                response.headers_mut().extend(verdict.headers(api));
                return response;
            }
            _ => (chunks, false),
        },
        Some(HopFault::Drip(every)) => {
            pace = Some(every);
            if stream {
                (chunks, false)
            } else {
                let whole = &chunks[0];
                let size = whole.len().div_ceil(faultlab_engine::catalogue::slow_drip::JSON_SLICES).max(1);
                (
                    (0..whole.len()).step_by(size).map(|at| whole.slice(at..(at + size).min(whole.len()))).collect(),
                    false,
                )
            }
        }
        Some(HopFault::Malformed) => {
            let mut chunks = chunks;
            chunks[0] = malformed(&chunks[0]);
            (chunks, false)
        }
        Some(HopFault::Cut) if stream => {
            let keep = (chunks.len() / 2).max(1);
            (chunks.into_iter().take(keep).collect(), true)
        }
        Some(HopFault::Cut) => {
            let whole = &chunks[0];
            (vec![whole.slice(..whole.len() / 2)], true)
        }
        Some(HopFault::Disconnect) => return disconnect(),
        Some(HopFault::Hang) => return std::future::pending::<Response>().await,
    };
    let mut body = match pace {
        // Each piece `every` after the one before; the first at once, with the headers.
        Some(every) => futures::stream::iter(chunks.into_iter().enumerate())
            .then(move |(i, chunk)| async move {
                if i > 0 {
                    tokio::time::sleep(every).await;
                }
                Ok::<_, std::io::Error>(chunk)
            })
            .boxed(),
        None => futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>)).boxed(),
    };
    if cut {
        // A body that fails makes hyper close the connection without ending the response: the client sees the
        // connection drop mid-answer, as it would if the model's server went away. The yield first lets hyper
        // flush what came before (it writes buffered bytes when the body is not ready), so the cut is mid-answer.
        let broken = futures::stream::once(async {
            tokio::task::yield_now().await;
            Err(std::io::Error::other("faultlab: the answer was cut"))
        });
        body = body.chain(broken).boxed();
    }
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    let content_type = HeaderValue::try_from(content_type).unwrap_or(HeaderValue::from_static("application/json"));
    response.headers_mut().insert(header::CONTENT_TYPE, content_type);
    if stream {
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    if let Some(verdict) = &quota {
        response.headers_mut().extend(verdict.headers(api));
    }
    response
}

/// A response that closes its connection with nothing written, not even a status line. Its body fails on its first
/// poll, which hyper makes in the same turn as it buffers the head: the error drops the connection before the head
/// is flushed. (A body that yields first lets the head out: `200 OK` and then a close is not a disconnect.)
fn disconnect() -> Response {
    let broken = futures::stream::once(async { Err::<Bytes, _>(std::io::Error::other("faultlab: disconnect")) });
    Response::new(Body::from_stream(broken))
}

/// The chunk with its JSON broken: the last `}` of its data becomes `,` (a stream's `[DONE]` is left alone).
fn malformed(chunk: &Bytes) -> Bytes {
    let mut bytes = chunk.to_vec();
    if let Some(at) = bytes.iter().rposition(|&b| b == b'}') {
        bytes[at] = b',';
    }
    Bytes::from(bytes)
}

/// An error answer with the provider's own body.
fn json_error(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(api: Api, status: StatusCode, message: &str) -> Response {
    let mut response = (status, api::error_body(api, status.as_u16(), message).to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
