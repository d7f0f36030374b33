//! Recording a real model once and replaying it offline: `--record-from URL` forwards each request to a real
//! endpoint (OpenAI-compatible, Anthropic or Gemini; the key read from the environment by the caller, sent only
//! upstream, never written) and the recording's line for it carries the answer (`answer`: status, content type,
//! body); `--script recording.jsonl` answers from those lines instead of a script, with the rules' faults on top.
//! A replayed request is matched by its API, whether it streams, and how many tool results it carries back (the
//! conversation's turn); the same turn asked again gets the next recorded answer for it, then the last again.

use crate::api::Api;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// One answer as the real endpoint gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    /// The body as text (a stream's whole SSE text).
    pub body: String,
}

/// The keys for the real endpoint, by API. Never written: not in the recording, not in errors, not in `Debug`.
#[derive(Clone, Default)]
pub struct Keys {
    pub openai: Option<String>,
    pub anthropic: Option<String>,
    pub gemini: Option<String>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |k: &Option<String>| if k.is_some() { "set" } else { "unset" };
        write!(
            f,
            "Keys {{ openai: {}, anthropic: {}, gemini: {} }}",
            set(&self.openai),
            set(&self.anthropic),
            set(&self.gemini)
        )
    }
}

/// A real model endpoint the requests are forwarded to.
pub struct Upstream {
    /// Its base URL, as an OpenAI client takes it (`https://api.openai.com/v1`); a request's path after `/v1` (or
    /// Gemini's after `/v1beta`) is appended.
    pub base: String,
    pub keys: Keys,
    pub client: reqwest::Client,
}

/// Largest real answer kept, in bytes (16 MiB).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// Longest a real answer may take, whole (5 minutes: a long streamed answer).
const UPSTREAM_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);

impl Upstream {
    /// Forwards one request (its body and the headers an API reads: `anthropic-version`, `anthropic-beta`) and
    /// reads the whole answer, at most `max_bytes` of it. The error never holds the key.
    pub async fn forward(
        &self,
        api: Api,
        path_and_query: &str,
        headers: &http::HeaderMap,
        body: bytes::Bytes,
        max_bytes: usize,
    ) -> Result<Answer, String> {
        let rest = path_and_query
            .strip_prefix("/v1beta")
            .or_else(|| path_and_query.strip_prefix("/v1"))
            .unwrap_or(path_and_query);
        let url = format!("{}{rest}", self.base.trim_end_matches('/'));
        let mut request = self.client.post(&url).timeout(UPSTREAM_DEADLINE).body(body);
        request = request.header(http::header::CONTENT_TYPE, "application/json");
        for name in ["anthropic-version", "anthropic-beta"] {
            if let Some(value) = headers.get(name) {
                request = request.header(name, value);
            }
        }
        request = match api {
            Api::Messages => match &self.keys.anthropic {
                Some(key) => request.header("x-api-key", key),
                None => request,
            },
            Api::Gemini => match &self.keys.gemini {
                Some(key) => request.header("x-goog-api-key", key),
                None => request,
            },
            Api::ChatCompletions | Api::Responses => match &self.keys.openai {
                Some(key) => request.bearer_auth(key),
                None => request,
            },
        };
        // reqwest's errors name the URL, never a header.
        let mut response = request.send().await.map_err(|e| format!("the real endpoint {url}: {e}"))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_owned();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("the real endpoint {url}: {e}"))? {
            if body.len() + chunk.len() > max_bytes {
                return Err(format!("the real endpoint {url} answered more than {max_bytes} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status, content_type, body: String::from_utf8_lossy(&body).into_owned() })
    }
}

/// A recording's answers, replayed.
#[derive(Debug)]
pub struct Replay {
    answers: HashMap<(String, bool, usize), Vec<Answer>>,
    asked: Mutex<HashMap<(String, bool, usize), usize>>,
}

#[derive(Deserialize)]
struct Line {
    api: String,
    stream: bool,
    #[serde(default)]
    tool_results: Vec<serde_json::Value>,
    answer: Option<Answer>,
}

/// Largest recording read (64 MiB).
const MAX_RECORDING_BYTES: u64 = 64 * 1024 * 1024;

impl Replay {
    /// Reads a recording made with `--record-from`; the error names the file and line.
    pub fn load(path: &Path) -> Result<Self, String> {
        let at = path.display();
        let size = std::fs::metadata(path).map_err(|e| format!("{at}: {e}"))?.len();
        if size > MAX_RECORDING_BYTES {
            return Err(format!("{at}: {size} bytes, more than the {MAX_RECORDING_BYTES} a recording may hold"));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: {e}"))?;
        let mut answers: HashMap<_, Vec<Answer>> = HashMap::new();
        for (i, raw) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            faultlab_wire::nesting::check(raw, faultlab_wire::nesting::Syntax::Json)
                .map_err(|e| format!("{at} line {}: {e}", i + 1))?;
            let line: Line = serde_json::from_str(raw).map_err(|e| format!("{at} line {}: {e}", i + 1))?;
            if let Some(answer) = line.answer {
                answers.entry((line.api, line.stream, line.tool_results.len())).or_default().push(answer);
            }
        }
        if answers.is_empty() {
            return Err(format!(
                "{at}: no recorded answers (record one with faultlab model --record-from URL --record FILE)"
            ));
        }
        Ok(Self { answers, asked: Mutex::new(HashMap::new()) })
    }

    /// The recorded answer for this turn, or `None` when the recording has none.
    pub fn answer(&self, api: Api, stream: bool, results: usize) -> Option<Answer> {
        let key = (api.name().to_owned(), stream, results);
        let recorded = self.answers.get(&key)?;
        let mut asked = faultlab_wire::sync::lock(&self.asked);
        let n = asked.entry(key).or_insert(0);
        let answer = recorded.get(*n).or_else(|| recorded.last()).cloned();
        *n += 1;
        answer
    }
}
