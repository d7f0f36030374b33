//! The fault catalogue: every fault the lab can put on the wire, one file each.
//!
//! Every fault file documents the same four things: *What it does on the wire*, *What a robust client should
//! do*, *Example* (how to arm it) and *How it is graded*. A fault is a pure transformation of one reply (plus the
//! request it answers) into [`WireAction`]s; matching, probability and timing of *when* it applies belong to the
//! [`Engine`](crate::Engine), and turning actions into bytes belongs to [`render`](crate::render).

use bytes::Bytes;
use faultlab_wire::Frame;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

mod auth_expired;
mod contradictory;
mod disconnect;
mod duplicate;
mod empty;
mod forbidden;
mod framing;
mod http_status;
mod invalid_result;
mod invalid_schema;
pub mod late_response;
mod latency;
mod list_changed_storm;
mod malformed;
mod missing_field;
mod missing_id;
mod non_json_line;
pub mod out_of_order;
mod oversized;
mod partial_result;
mod progress_after_result;
mod rate_limit;
mod replayed;
mod split_write;
mod stale;
mod timeout;
mod truncated;
mod unavailable;
mod wrong_id;
mod wrong_value;

/// Largest padding the `oversized` fault adds, in bytes (64 MiB: four times the usual 16 MiB line limit, enough
/// to trip any client's limit without exhausting the machine).
pub const MAX_OVERSIZED_BYTES: usize = 64 * 1024 * 1024;
// The lab's own stdio fronts carry its largest fault by default: the frame limit leaves at least 64 KiB for the
// rest of the reply around the padding.
const _: () = assert!(faultlab_wire::MAX_LINE_BYTES >= MAX_OVERSIZED_BYTES + 64 * 1024);
/// Most notifications one `list_changed_storm` sends.
pub const MAX_STORM_COUNT: u32 = 10_000;
/// Most pieces one `split_write` cuts a reply into.
pub const MAX_SPLIT_PARTS: u8 = 64;
/// Most consecutive failures of one `burst_failure`.
pub const MAX_BURST: u32 = 10_000;
/// Longest `server_outage`, in ms (10 minutes).
pub const MAX_OUTAGE_MS: u64 = 600_000;
/// Longest `latency`, in ms (the same 30 s ceiling as the `delay` tool).
pub const MAX_LATENCY_MS: u64 = 30_000;
/// Longest `retry_after_sec` of `rate_limit`, in seconds (one day, as for the server's `http_status` tool).
pub const MAX_RETRY_AFTER_SEC: u32 = 86_400;
/// Where `missing_field` removes a member when no pointer is given.
pub const DEFAULT_MISSING_POINTER: &str = "/result/content";

/// What happens to one reply on the wire. Closed on purpose: a new fault is a new variant and a new file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultKind {
    /// Hold the reply for `delay_ms` before writing it. Also accepted as `delayed` (MCP-Faultline's name).
    #[serde(alias = "delayed")]
    #[schemars(transform = latency::accept_delayed_alias)]
    Latency { delay_ms: u64 },
    /// Close the connection (stdio) or abort the response stream (HTTP) instead of replying.
    Disconnect,
    /// Valid JSON, invalid JSON-RPC. Also accepted as `malformed_response` (MCP-Faultline's name).
    #[serde(alias = "malformed_response")]
    #[schemars(transform = malformed::accept_faultline_alias)]
    Malformed {
        #[serde(default)]
        variant: MalformedVariant,
    },
    /// The same reply, twice.
    Duplicate,
    /// The reply carries an id no request had.
    WrongId,
    /// The reply carries no id at all.
    MissingId,
    /// Only the first half of the reply's bytes, then the frame ends.
    Truncated,
    /// A line that is not JSON, then the reply.
    NonJsonLine,
    /// The reply with unusual framing: CRLF line endings or a byte-order mark.
    Framing { style: FramingStyle },
    /// The reply padded with `bytes` of extra text content.
    Oversized { bytes: usize },
    /// The reply written in `parts` separate writes.
    SplitWrite { parts: u8 },
    /// A progress notification for the request, sent after its result.
    ProgressAfterResult,
    /// `count` `notifications/tools/list_changed` before the reply.
    ListChangedStorm { count: u32 },
    /// An HTTP error status instead of the reply (stdio: a JSON-RPC error naming the status).
    HttpStatus {
        status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_sec: Option<u32>,
    },
    /// Swallow the framework's reply; when the client cancels, answer anyway, late.
    LateResponse,
    /// The result's text content blocks carry a number instead of a string.
    InvalidResult,
    /// The reply is never sent: the request stays open until the client gives up.
    Timeout,
    /// Rate limited: HTTP 429 with `Retry-After` (stdio: the JSON-RPC error, code -32029, `data.retryAfterSec`).
    RateLimit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_sec: Option<u32>,
    },
    /// Credentials expired: HTTP 401 with `WWW-Authenticate` (stdio: the JSON-RPC error, code -32001).
    AuthExpired,
    /// Access denied: HTTP 403 (stdio: the JSON-RPC error, code -32003).
    Forbidden,
    /// The tool result's `content` is an object (keyed "0", "1", ...) where the schema requires an array.
    InvalidSchema,
    /// One member of the reply is removed, at a JSON pointer into the whole message.
    MissingField {
        #[serde(default = "default_missing_pointer")]
        pointer: String,
    },
    /// A valid tool result with nothing in it: `content` is `[]`, `structuredContent` (if any) is `{}`.
    Empty,
    /// Only the first half of the content blocks (of a single text block: the first half of its text).
    PartialResult,
    /// `value` is written at `pointer`, a JSON pointer inside the reply's `result`. Inside `structuredContent`,
    /// only if the result stays valid against the tool's output schema (else the reply is sent unchanged).
    WrongValue { pointer: String, value: serde_json::Value },
    /// The result plus one more text block that states something else (a changed value, chosen to stay valid
    /// against the tool's output schema when it has one).
    Contradictory,
    /// The last earlier reply of the same tool, with this request's id, instead of this reply.
    Stale,
    /// This reply, then the last earlier tool reply again, with its original id.
    Replayed,
    /// 503 for this and the next `count - 1` requests matching the same rule.
    BurstFailure { count: u32 },
    /// 503 for every request, whatever its tool, for `duration_ms` from this one on. With `restart` (default
    /// false; only the stdio proxy with a child upstream can), the upstream is killed when the window starts and a
    /// fresh one is started and re-initialised when it ends.
    ServerOutage {
        duration_ms: u64,
        // Skipped when false, so a fault written before the field existed serialises as it did.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        restart: bool,
    },
    /// 503 for this request, and the failure spreads: the next `spread` requests fail too, whatever their tool.
    CascadingFailure { spread: u32 },
    /// The reply is held until the next reply on the connection has been written (at most `max_hold_ms`).
    OutOfOrder {
        #[serde(default = "out_of_order::default_max_hold_ms")]
        max_hold_ms: u64,
    },
}

fn default_missing_pointer() -> String {
    DEFAULT_MISSING_POINTER.into()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MalformedVariant {
    /// The `jsonrpc` member is removed (the default).
    #[default]
    MissingJsonrpc,
    /// `jsonrpc` is `"1.0"`.
    InvalidJsonrpcVersion,
    /// A result and an error in one response.
    ResultWithError,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FramingStyle {
    /// The line (stdio) or the SSE event lines (HTTP) end in `\r\n`.
    Crlf,
    /// A UTF-8 byte-order mark before the message.
    Bom,
}

/// One step of what the wire does instead of (or around) writing a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireAction {
    /// One frame in the transport's normal framing (a line; an SSE `message` event; a JSON body). The bytes need
    /// not be valid JSON: truncated and non-JSON frames are sent this way.
    Send(Bytes),
    /// One frame with altered framing.
    SendFramed { bytes: Bytes, framing: Framing },
    /// Wait before the next action. Only this reply's actions wait; other messages keep flowing.
    Pause(Duration),
    /// Close the connection (stdio) or abort the response stream (HTTP). Nothing after it is sent.
    Close,
    /// Answer with an HTTP status instead (HTTP); stdio writes `body`, a JSON-RPC error, as a line.
    HttpStatus { status: u16, retry_after_sec: Option<u32>, body: Bytes },
    /// Hold the rest of this reply until `release` is signalled, or `max` has passed (other messages keep flowing).
    AwaitRelease { release: out_of_order::Release, max: Duration },
    /// Signal `release` once everything before this action has been written.
    Release(out_of_order::Release),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Crlf,
    Bom,
    /// Written in this many separate writes (at least 2).
    Split {
        parts: u8,
    },
}

/// What a fault sees: the reply it acts on and, when the engine saw it, the request that reply answers.
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a> {
    pub frame: &'a Frame,
    pub request: Option<&'a Frame>,
}

/// What the [`Engine`](crate::Engine) learnt from earlier replies on the same connection scope: the replies
/// themselves, for the faults that resend them (`stale`, `replayed`; only replies to `tools/call` that no fault
/// fired on are remembered), and the called tool's output schema from a `tools/list` reply, for the faults that
/// must keep a result valid against it (`wrong_value`, `contradictory`).
#[derive(Debug, Clone, Default)]
pub struct Earlier {
    /// The last such reply to a call of the same tool as the request this reply answers.
    pub same_tool: Option<Bytes>,
    /// The last such reply to a call of any tool.
    pub any_tool: Option<Bytes>,
    /// The `outputSchema` the server listed for the tool this reply answers a call of, if it listed one.
    pub output_schema: Option<OutputSchema>,
}

/// A tool's `outputSchema`, as the engine saw it in a `tools/list` reply.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputSchema {
    /// The schema as listed.
    Listed(Arc<serde_json::Value>),
    /// The tool lists a schema too large to keep (the engine bounds its memory). Kept as a marker rather than
    /// forgotten: a fault that must keep the result valid then skips instead of guessing.
    TooLarge,
}

/// What a fault did with one reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub actions: Vec<WireAction>,
    /// Why the fault could not apply, when it could not; the actions then send the reply unchanged.
    pub skipped: Option<String>,
}

impl Applied {
    fn done(actions: Vec<WireAction>) -> Self {
        Self { actions, skipped: None }
    }

    fn skipped(reply: Reply<'_>, reason: String) -> Self {
        Self { actions: unchanged(reply), skipped: Some(reason) }
    }
}

impl FaultKind {
    /// The fault's name as written in rules and diagnostics (`latency`, `http_status`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Latency { .. } => "latency",
            Self::Disconnect => "disconnect",
            Self::Malformed { .. } => "malformed",
            Self::Duplicate => "duplicate",
            Self::WrongId => "wrong_id",
            Self::MissingId => "missing_id",
            Self::Truncated => "truncated",
            Self::NonJsonLine => "non_json_line",
            Self::Framing { .. } => "framing",
            Self::Oversized { .. } => "oversized",
            Self::SplitWrite { .. } => "split_write",
            Self::ProgressAfterResult => "progress_after_result",
            Self::ListChangedStorm { .. } => "list_changed_storm",
            Self::HttpStatus { .. } => "http_status",
            Self::LateResponse => "late_response",
            Self::InvalidResult => "invalid_result",
            Self::Timeout => "timeout",
            Self::RateLimit { .. } => "rate_limit",
            Self::AuthExpired => "auth_expired",
            Self::Forbidden => "forbidden",
            Self::InvalidSchema => "invalid_schema",
            Self::MissingField { .. } => "missing_field",
            Self::Empty => "empty",
            Self::PartialResult => "partial_result",
            Self::WrongValue { .. } => "wrong_value",
            Self::Contradictory => "contradictory",
            Self::Stale => "stale",
            Self::Replayed => "replayed",
            Self::BurstFailure { .. } => "burst_failure",
            Self::ServerOutage { .. } => "server_outage",
            Self::CascadingFailure { .. } => "cascading_failure",
            Self::OutOfOrder { .. } => "out_of_order",
        }
    }

    /// Checks the fault's parameters; the message names the parameter and its allowed range.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Self::Latency { delay_ms } if delay_ms > MAX_LATENCY_MS => {
                Err(format!("delay_ms must be between 0 and {MAX_LATENCY_MS}"))
            }
            Self::Oversized { bytes } if bytes == 0 || bytes > MAX_OVERSIZED_BYTES => {
                Err(format!("bytes must be between 1 and {MAX_OVERSIZED_BYTES}"))
            }
            Self::SplitWrite { parts } if !(2..=MAX_SPLIT_PARTS).contains(&parts) => {
                Err(format!("parts must be between 2 and {MAX_SPLIT_PARTS}"))
            }
            Self::ListChangedStorm { count } if count == 0 || count > MAX_STORM_COUNT => {
                Err(format!("count must be between 1 and {MAX_STORM_COUNT}"))
            }
            Self::HttpStatus { status, .. } if !http_status::ALLOWED.contains(&status) => {
                Err(format!("status must be one of {:?}", http_status::ALLOWED))
            }
            Self::RateLimit { retry_after_sec: Some(secs) } if secs > MAX_RETRY_AFTER_SEC => {
                Err(format!("retry_after_sec must be between 0 and {MAX_RETRY_AFTER_SEC}"))
            }
            // An empty pointer names the whole message (or result), which cannot be removed or replaced in place.
            Self::MissingField { ref pointer } | Self::WrongValue { ref pointer, .. } if !pointer.starts_with('/') => {
                Err(format!("pointer must be a JSON pointer starting with '/', not {pointer:?}"))
            }
            Self::BurstFailure { count } if count == 0 || count > MAX_BURST => {
                Err(format!("count must be between 1 and {MAX_BURST}"))
            }
            Self::OutOfOrder { max_hold_ms } if max_hold_ms == 0 || max_hold_ms > MAX_LATENCY_MS => {
                Err(format!("max_hold_ms must be between 1 and {MAX_LATENCY_MS}"))
            }
            Self::CascadingFailure { spread } if spread > MAX_BURST => {
                Err(format!("spread must be between 0 and {MAX_BURST}"))
            }
            Self::ServerOutage { duration_ms, .. } if duration_ms == 0 || duration_ms > MAX_OUTAGE_MS => {
                Err(format!("duration_ms must be between 1 and {MAX_OUTAGE_MS}"))
            }
            _ => Ok(()),
        }
    }

    /// What the wire does with `reply` under this fault, with no earlier replies known (`stale` and `replayed`
    /// then send the reply unchanged).
    pub fn apply(&self, reply: Reply<'_>) -> Vec<WireAction> {
        self.apply_with(reply, &Earlier::default())
    }

    /// What the wire does with `reply` under this fault, given the connection's earlier replies.
    pub fn apply_with(&self, reply: Reply<'_>, earlier: &Earlier) -> Vec<WireAction> {
        self.apply_checked(reply, earlier).actions
    }

    /// As [`FaultKind::apply_with`], also saying when the fault could not apply: `wrong_value` and
    /// `contradictory` send the reply unchanged rather than a result invalid against the tool's output schema.
    pub fn apply_checked(&self, reply: Reply<'_>, earlier: &Earlier) -> Applied {
        let schema = earlier.output_schema.as_ref();
        let actions = match *self {
            Self::Latency { delay_ms } => latency::apply(reply, delay_ms),
            Self::Disconnect => disconnect::apply(reply),
            Self::Malformed { variant } => malformed::apply(reply, variant),
            Self::Duplicate => duplicate::apply(reply),
            Self::WrongId => wrong_id::apply(reply),
            Self::MissingId => missing_id::apply(reply),
            Self::Truncated => truncated::apply(reply),
            Self::NonJsonLine => non_json_line::apply(reply),
            Self::Framing { style } => framing::apply(reply, style),
            Self::Oversized { bytes } => oversized::apply(reply, bytes),
            Self::SplitWrite { parts } => split_write::apply(reply, parts),
            Self::ProgressAfterResult => progress_after_result::apply(reply),
            Self::ListChangedStorm { count } => list_changed_storm::apply(reply, count),
            Self::HttpStatus { status, retry_after_sec } => http_status::apply(reply, status, retry_after_sec),
            Self::LateResponse => late_response::apply(reply),
            Self::InvalidResult => invalid_result::apply(reply),
            Self::Timeout => timeout::apply(reply),
            Self::RateLimit { retry_after_sec } => rate_limit::apply(reply, retry_after_sec),
            Self::AuthExpired => auth_expired::apply(reply),
            Self::Forbidden => forbidden::apply(reply),
            Self::InvalidSchema => invalid_schema::apply(reply),
            Self::MissingField { ref pointer } => missing_field::apply(reply, pointer),
            Self::Empty => empty::apply(reply),
            Self::PartialResult => partial_result::apply(reply),
            Self::WrongValue { ref pointer, ref value } => return wrong_value::apply(reply, pointer, value, schema),
            Self::Contradictory => return contradictory::apply(reply, schema),
            Self::Stale => stale::apply(reply, earlier.same_tool.as_ref()),
            Self::Replayed => replayed::apply(reply, earlier.any_tool.as_ref()),
            Self::BurstFailure { .. } | Self::ServerOutage { .. } | Self::CascadingFailure { .. } => {
                unavailable::apply(reply, self.name())
            }
            // Alone (no engine to release it early) the reply is simply held for its longest time.
            Self::OutOfOrder { max_hold_ms } => {
                out_of_order::hold(reply, max_hold_ms, &out_of_order::Release::default())
            }
        };
        Applied::done(actions)
    }
}

/// A validator for a tool's output schema (and the schema), or why the schema cannot be used to check a result.
fn output_validator(schema: &OutputSchema) -> Result<(jsonschema::Validator, &serde_json::Value), String> {
    let OutputSchema::Listed(schema) = schema else {
        return Err("the tool's outputSchema is too large to keep, so a changed result cannot be checked".into());
    };
    // The draft follows the schema's `$schema` (2020-12 without one, as MCP says). External `$ref`s are refused
    // whatever features other crates turn on: the proxy never fetches a URL or reads a file an upstream names.
    jsonschema::options()
        .with_retriever(NoRetrieval)
        .build(schema)
        .map(|validator| (validator, schema.as_ref()))
        .map_err(|e| format!("the tool's outputSchema cannot be used to check a changed result: {e}"))
}

/// Why `instance` is invalid against `validator` (the first error and where), or `Ok`.
fn check(validator: &jsonschema::Validator, instance: &serde_json::Value) -> Result<(), String> {
    validator.validate(instance).map_err(|e| {
        let at = e.instance_path().to_string();
        if at.is_empty() { e.to_string() } else { format!("at {at}: {e}") }
    })
}

/// A `$ref` retriever that retrieves nothing: only references inside the schema itself resolve.
struct NoRetrieval;

impl jsonschema::Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {uri} is not fetched").into())
    }
}

/// Re-serialises a changed copy of the reply's JSON; `None` when the reply is not a JSON object.
fn edit(reply: Reply<'_>, change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) -> Option<Bytes> {
    let mut value = reply.frame.value()?.clone();
    change(value.as_object_mut()?);
    serde_json::to_vec(&value).ok().map(Bytes::from)
}

/// The reply with `change` applied to its JSON value, re-serialised; byte for byte unchanged when `change`
/// returns false (nothing to change) or the reply is not JSON.
fn rewrite(reply: Reply<'_>, change: impl FnOnce(&mut serde_json::Value) -> bool) -> Vec<WireAction> {
    let Some(mut value) = reply.frame.value().cloned() else {
        return unchanged(reply);
    };
    if !change(&mut value) {
        return unchanged(reply);
    }
    match serde_json::to_vec(&value) {
        Ok(bytes) => vec![WireAction::Send(Bytes::from(bytes))],
        Err(_) => unchanged(reply),
    }
}

/// A JSON pointer split into its parent's pointer and its last reference token (unescaped: `~1` is `/`, `~0` is
/// `~`). `None` for the empty pointer, which has no parent.
fn split_pointer(pointer: &str) -> Option<(&str, String)> {
    let (parent, last) = pointer.rsplit_once('/')?;
    Some((parent, last.replace("~1", "/").replace("~0", "~")))
}

/// The reply unchanged, as a one-action list.
fn unchanged(reply: Reply<'_>) -> Vec<WireAction> {
    vec![WireAction::Send(reply.frame.bytes().clone())]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn frame(json: &str) -> Frame {
        Frame::parse(Bytes::copy_from_slice(json.as_bytes()))
    }

    pub(crate) const RESULT: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}"#;

    pub(crate) fn sent(actions: &[WireAction]) -> Vec<Frame> {
        actions
            .iter()
            .filter_map(|a| match a {
                WireAction::Send(b) | WireAction::SendFramed { bytes: b, .. } => Some(Frame::parse(b.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn serde_names_match_fault_names() {
        let all = [
            FaultKind::Latency { delay_ms: 1 },
            FaultKind::Disconnect,
            FaultKind::Malformed { variant: MalformedVariant::MissingJsonrpc },
            FaultKind::Duplicate,
            FaultKind::WrongId,
            FaultKind::MissingId,
            FaultKind::Truncated,
            FaultKind::NonJsonLine,
            FaultKind::Framing { style: FramingStyle::Bom },
            FaultKind::Oversized { bytes: 1 },
            FaultKind::SplitWrite { parts: 2 },
            FaultKind::ProgressAfterResult,
            FaultKind::ListChangedStorm { count: 1 },
            FaultKind::HttpStatus { status: 429, retry_after_sec: Some(1) },
            FaultKind::LateResponse,
            FaultKind::InvalidResult,
            FaultKind::Timeout,
            FaultKind::BurstFailure { count: 3 },
            FaultKind::ServerOutage { duration_ms: 1000, restart: false },
            FaultKind::ServerOutage { duration_ms: 300, restart: true },
            FaultKind::CascadingFailure { spread: 2 },
            FaultKind::OutOfOrder { max_hold_ms: 500 },
            FaultKind::RateLimit { retry_after_sec: Some(3) },
            FaultKind::AuthExpired,
            FaultKind::Forbidden,
            FaultKind::InvalidSchema,
            FaultKind::MissingField { pointer: "/result/isError".into() },
            FaultKind::Empty,
            FaultKind::PartialResult,
            FaultKind::WrongValue { pointer: "/content/0/text".into(), value: serde_json::json!({"n": 1.5}) },
            FaultKind::Contradictory,
            FaultKind::Stale,
            FaultKind::Replayed,
        ];
        for fault in all {
            let json = serde_json::to_value(&fault).unwrap();
            assert_eq!(json["type"], fault.name());
            assert_eq!(serde_json::from_value::<FaultKind>(json).unwrap(), fault);
            assert!(fault.validate().is_ok(), "{fault:?}");
        }
    }

    #[test]
    fn defaults_and_the_delayed_alias() {
        let delayed: FaultKind = serde_json::from_str(r#"{"type":"delayed","delay_ms":5}"#).unwrap();
        assert_eq!(delayed, FaultKind::Latency { delay_ms: 5 });
        let missing: FaultKind = serde_json::from_str(r#"{"type":"missing_field"}"#).unwrap();
        assert_eq!(missing, FaultKind::MissingField { pointer: DEFAULT_MISSING_POINTER.into() });
        let outage: FaultKind = serde_json::from_str(r#"{"type":"server_outage","duration_ms":5}"#).unwrap();
        assert_eq!(outage, FaultKind::ServerOutage { duration_ms: 5, restart: false });
        assert_eq!(serde_json::to_string(&outage).unwrap(), r#"{"type":"server_outage","duration_ms":5}"#);
        let limit: FaultKind = serde_json::from_str(r#"{"type":"rate_limit"}"#).unwrap();
        assert_eq!(limit, FaultKind::RateLimit { retry_after_sec: None });
        let schema = serde_json::to_string(&schemars::schema_for!(FaultKind)).unwrap();
        assert!(schema.contains(r#"["latency","delayed"]"#), "the schema accepts what serde accepts");
    }

    #[test]
    fn pointers_split_and_unescape() {
        assert_eq!(split_pointer("/result/content"), Some(("/result", "content".into())));
        assert_eq!(split_pointer("/a~1b/c~0d"), Some(("/a~1b", "c~d".into())));
        assert_eq!(split_pointer("/x"), Some(("", "x".into())));
        assert_eq!(split_pointer(""), None);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = serde_json::from_str::<FaultKind>(r#"{"type":"latency","delay_ms":1,"jitter":2}"#).unwrap_err();
        assert!(err.to_string().contains("jitter"), "{err}");
        let json = r#"{"type":"server_outage","duration_ms":5,"restarts":true}"#;
        let err = serde_json::from_str::<FaultKind>(json).unwrap_err();
        assert!(err.to_string().contains("restarts"), "{err}");
    }

    #[test]
    fn out_of_range_parameters_name_the_parameter() {
        assert!(FaultKind::Latency { delay_ms: 30_001 }.validate().unwrap_err().contains("delay_ms"));
        assert!(FaultKind::SplitWrite { parts: 1 }.validate().unwrap_err().contains("parts"));
        assert!(
            FaultKind::HttpStatus { status: 200, retry_after_sec: None }.validate().unwrap_err().contains("status")
        );
        let limit = FaultKind::RateLimit { retry_after_sec: Some(MAX_RETRY_AFTER_SEC + 1) };
        assert!(limit.validate().unwrap_err().contains("retry_after_sec"));
        assert!(FaultKind::MissingField { pointer: "result".into() }.validate().unwrap_err().contains("pointer"));
        let wrong = FaultKind::WrongValue { pointer: String::new(), value: serde_json::Value::Null };
        assert!(wrong.validate().unwrap_err().contains("pointer"));
    }
}
