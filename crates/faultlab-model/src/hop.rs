//! Catalogue faults on the model hop: what each one the rules may name does to a model answer. The rules file is
//! the proxy's (same matching, counters, seeded probability and windows); a fault with no meaning between a
//! framework and its model (a wrong JSON-RPC id, a list-changed storm, …) is refused when the file is loaded.

use crate::api::{Api, Call, Content, Output};
use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::{
    HttpStatus, Latency, RateLimit, SlowDrip, TokenQuota, context_length_exceeded::CONTEXT_TOKENS,
    refusal::REFUSAL_TEXT, tool_arguments_invalid,
};
use faultlab_proxy::rules::{RulesError, RulesFile};
use serde_json::{Value, json};
use std::time::Duration;

/// What a fault does to one model answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HopFault {
    /// Nothing is written for this long; then the answer goes out unchanged.
    Latency(Duration),
    /// An HTTP error status with the API's error body (and `Retry-After` when set) instead of the answer.
    Status { status: u16, retry_after_sec: Option<u32> },
    /// The answer's JSON is broken (streaming: the first event's).
    Malformed,
    /// The answer stops halfway (streaming: after half its events) and the connection is closed.
    Cut,
    /// The connection is closed before anything is written.
    Disconnect,
    /// Nothing is ever written; the connection stays open until the client gives up.
    Hang,
    /// The answer itself is changed ([`Shape`]), in the API's own shapes.
    Shape(Shape),
    /// The provider is overloaded: a stream breaks with its `error` event; otherwise 529 / 503.
    Overloaded { before_stream: bool },
    /// `400` context length exceeded, in the provider's body.
    ContextLength,
    /// A one-minute quota of requests and tokens; the endpoint keeps its window per rule.
    Quota(TokenQuota),
    /// Each event (each of 8 slices of a JSON body) this long after the one before.
    Drip(Duration),
}

/// What a fault changes in the answer itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// `tool_call_cut`: the arguments (or text) cut halfway, ended as out of tokens.
    CutAtLimit,
    /// `tool_arguments_invalid`: the arguments not valid JSON.
    InvalidArguments,
    /// `unknown_tool_call`: a call naming this tool.
    UnknownTool(String),
    /// `duplicate_call_id`: the call twice, one id.
    DuplicateId,
    /// `refusal`.
    Refusal,
}

impl Shape {
    /// The answer under this fault, or why this answer in this API's shape cannot carry it (it then goes out
    /// unchanged and the recording says so).
    /// (`call_id`: the id a call made from a text answer gets.)
    pub fn apply(&self, api: Api, stream: bool, out: Output, call_id: String) -> Result<Output, String> {
        let Output { content, cut } = out;
        let content = match (self, content) {
            (Self::CutAtLimit, Content::Calls(calls)) => {
                let calls = calls.into_iter().map(|c| Call { arguments: half(&c.arguments).to_owned(), ..c });
                return Ok(Output { content: Content::Calls(calls.collect()), cut: true });
            }
            (Self::CutAtLimit, Content::Text(text)) => {
                return Ok(Output { content: Content::Text(half(&text).to_owned()), cut: true });
            }
            (Self::InvalidArguments, Content::Calls(_)) if api == Api::Messages && !stream => {
                return Err("an Anthropic JSON answer carries a tool call's input as an object, never invalid".into());
            }
            (Self::InvalidArguments, Content::Calls(_)) if api == Api::Gemini => {
                return Err("a Gemini functionCall carries its args as an object, never invalid".into());
            }
            (Self::InvalidArguments, Content::Calls(calls)) => Content::Calls(
                calls
                    .into_iter()
                    .map(|c| Call { arguments: tool_arguments_invalid::broken(&c.arguments), ..c })
                    .collect(),
            ),
            (Self::UnknownTool(name), Content::Calls(calls)) => {
                Content::Calls(calls.into_iter().map(|c| Call { name: name.clone(), ..c }).collect())
            }
            (Self::UnknownTool(name), Content::Text(_)) => {
                Content::Calls(vec![Call { id: call_id, name: name.clone(), arguments: "{}".into() }])
            }
            (Self::DuplicateId, Content::Calls(calls)) => {
                Content::Calls(calls.iter().chain(calls.iter()).cloned().collect())
            }
            (Self::Refusal, _) => Content::Refusal(REFUSAL_TEXT.to_owned()),
            (Self::InvalidArguments | Self::DuplicateId, _) => {
                return Err("the scripted turn is a text answer: there is no tool call to change".into());
            }
            (_, content) => content,
        };
        Ok(Output { content, cut })
    }
}

/// `s`'s first half, at a character boundary.
fn half(s: &str) -> &str {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    &s[..mid]
}

/// The catalogue's faults and presets this hop carries, in catalogue order: the wire's, then the model hop's own
/// (`model_fault!` entries). A name is carried when one of its examples has an effect here; a name some of whose
/// examples do not (`server_outage` with `restart`) is marked. The one list the rules' errors, `faultlab model
/// --help` and docs/model.md (a test holds it to that) name.
pub fn carried() -> (Vec<String>, Vec<String>) {
    let (mut wire, mut own) = (Vec::new(), Vec::new());
    for (name, examples) in FaultKind::examples() {
        let kinds: Vec<FaultKind> = examples.iter().filter_map(|e| serde_json::from_str(e).ok()).collect();
        let here = kinds.iter().filter(|kind| HopFault::of(kind).is_some()).count();
        if here == 0 {
            continue;
        }
        let shown = if here < kinds.len() { format!("{name} (some forms)") } else { name.to_owned() };
        if kinds.iter().any(FaultKind::model_only) { own.push(shown) } else { wire.push(shown) }
    }
    (wire, own)
}

/// [`carried`] in words.
pub fn supported() -> String {
    let (wire, own) = carried();
    format!("{}, and the model hop's own: {}", wire.join(", "), own.join(", "))
}

impl HopFault {
    /// The fault's effect on this hop; `None` for a fault that has none here.
    pub fn of(fault: &FaultKind) -> Option<Self> {
        Some(match fault {
            FaultKind::Latency(Latency { delay_ms }) => Self::Latency(Duration::from_millis(*delay_ms)),
            // An outage that restarts has nothing to restart here.
            FaultKind::HttpStatus(HttpStatus { schedule: Some(schedule), .. }) if schedule.restarts() => return None,
            // The schedule presets are a 503 on a schedule the rule set runs.
            FaultKind::HttpStatus(HttpStatus { status, retry_after_sec, .. }) => {
                Self::Status { status: *status, retry_after_sec: *retry_after_sec }
            }
            FaultKind::RateLimit(RateLimit { retry_after_sec }) => {
                Self::Status { status: 429, retry_after_sec: *retry_after_sec }
            }
            FaultKind::Malformed(_) => Self::Malformed,
            FaultKind::Truncated(_) => Self::Cut,
            FaultKind::Disconnect(_) => Self::Disconnect,
            FaultKind::Timeout(_) => Self::Hang,
            FaultKind::ToolCallCut(_) => Self::Shape(Shape::CutAtLimit),
            FaultKind::ToolArgumentsInvalid(_) => Self::Shape(Shape::InvalidArguments),
            FaultKind::UnknownToolCall(fault) => Self::Shape(Shape::UnknownTool(fault.tool().to_owned())),
            FaultKind::DuplicateCallId(_) => Self::Shape(Shape::DuplicateId),
            FaultKind::Refusal(_) => Self::Shape(Shape::Refusal),
            FaultKind::Overloaded(fault) => Self::Overloaded { before_stream: fault.before_stream },
            FaultKind::ContextLengthExceeded(_) => Self::ContextLength,
            FaultKind::TokenQuota(fault) => Self::Quota(fault.clone()),
            FaultKind::SlowDrip(SlowDrip { token_ms }) => Self::Drip(Duration::from_millis(*token_ms)),
            _ => return None,
        })
    }
}

/// Refuses a rule this hop cannot carry out, naming the rule: a fault it cannot carry, or a condition on an MCP
/// tool call (a model request has none).
pub fn check(file: &RulesFile) -> Result<(), RulesError> {
    for rule in &file.rules {
        if HopFault::of(&rule.fault).is_none() {
            return Err(RulesError::Unsupported(format!(
                "rule {:?}: fault {} does not apply on the model hop; the model endpoint carries {}",
                rule.name,
                rule.fault.name(),
                supported()
            )));
        }
        if rule.matcher.tool.is_some() || rule.matcher.argument.is_some() {
            return Err(RulesError::Unsupported(format!(
                "rule {:?}: match.tool and match.argument select MCP tool calls; on the model hop match by method \
                 (chat.completions, responses, messages or generate_content), nth, after, every, probability and window",
                rule.name
            )));
        }
    }
    Ok(())
}

/// The status line's reason for an error body.
pub fn message(status: u16) -> String {
    let text = match status {
        401 => "Unauthorized: authentication expired",
        403 => "Forbidden",
        404 => "Not found",
        429 => "Too many requests",
        503 => "Service unavailable",
        _ => "Internal server error",
    };
    format!("HTTP {status}: {text} (faultlab fault)")
}

/// The overloaded status and body: Anthropic's `529 overloaded_error`, OpenAI's `503`.
pub fn overloaded(api: Api) -> (u16, Value) {
    match api {
        Api::Messages => {
            (529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
        }
        Api::Gemini => (503, crate::api::gemini_error(503, "The model is overloaded. Please try again later.")),
        _ => (
            503,
            json!({"error": {"message": "The server is overloaded or not ready yet.", "type": "server_error",
            "param": null, "code": null}}),
        ),
    }
}

/// The provider's error event that breaks a started stream (`sequence` numbers a Responses event).
pub fn overloaded_event(api: Api, sequence: usize) -> crate::stream::Event {
    let (name, data) = match api {
        Api::Messages => (Some("error"), overloaded(api).1),
        Api::Responses => (
            Some("error"),
            json!({"type": "error", "code": "server_is_overloaded",
                "message": "The server is overloaded or not ready yet.", "param": null, "sequence_number": sequence}),
        ),
        Api::ChatCompletions | Api::Gemini => (None, overloaded(api).1),
    };
    crate::stream::Event { name, data: data.to_string() }
}

/// `400` context length exceeded, in the provider's body.
pub fn context_length(api: Api) -> Value {
    let over = CONTEXT_TOKENS + 1;
    match api {
        Api::Gemini => crate::api::gemini_error(
            400,
            &format!("The input token count ({over}) exceeds the maximum number of tokens allowed ({CONTEXT_TOKENS})."),
        ),
        Api::Messages => json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": format!("prompt is too long: {over} tokens > {CONTEXT_TOKENS} maximum")}}),
        _ => json!({"error": {"message": format!("This model's maximum context length is {CONTEXT_TOKENS} tokens. \
                However, your messages resulted in {over} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": if api == Api::Responses { "input" } else { "messages" },
            "code": "context_length_exceeded"}}),
    }
}

#[cfg(test)]
mod carried_tests {
    use super::carried;
    use faultlab_engine::FaultKind;
    use std::collections::BTreeSet;

    /// docs/model.md names the faults the hop carries, as [`carried`] lists them: the wire's in its bullet (each
    /// catalogue name in backquotes), the hop's own as the rows of its table. A fault added to the hop, or taken
    /// from it, fails here until the page says so.
    #[test]
    fn docs_model_md_names_exactly_the_faults_the_hop_carries() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/model.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let catalogue: BTreeSet<&str> = FaultKind::examples().into_iter().map(|(name, _)| name).collect();
        let names = |text: &str| -> BTreeSet<String> {
            text.split('`').skip(1).step_by(2).filter(|w| catalogue.contains(w)).map(str::to_owned).collect()
        };
        let bullet = text.split("- **The wire's faults**").nth(1).unwrap().split("- **The model hop's own").next();
        let rows: String = text
            .lines()
            .skip_while(|line| !line.starts_with("| fault | what the framework gets"))
            .take_while(|line| line.starts_with('|'))
            .filter_map(|line| line.split('|').nth(1))
            .collect();
        let plain = |list: Vec<String>| -> BTreeSet<String> {
            list.into_iter().map(|name| name.split(' ').next().unwrap().to_owned()).collect()
        };
        let (wire, own) = carried();
        assert_eq!(names(bullet.unwrap()), plain(wire), "docs/model.md's list of the wire's faults");
        assert_eq!(names(&rows), plain(own), "docs/model.md's table of the model hop's own faults");
    }
}
