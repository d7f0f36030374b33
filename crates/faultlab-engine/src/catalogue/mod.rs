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
use std::time::Duration;

mod disconnect;
mod duplicate;
mod framing;
mod http_status;
mod invalid_result;
pub mod late_response;
mod latency;
mod list_changed_storm;
mod malformed;
mod missing_id;
mod non_json_line;
mod oversized;
mod progress_after_result;
mod split_write;
mod timeout;
mod truncated;
mod wrong_id;

/// Largest padding the `oversized` fault adds, in bytes (64 MiB: four times the usual 16 MiB line limit, enough
/// to trip any client's limit without exhausting the machine).
pub const MAX_OVERSIZED_BYTES: usize = 64 * 1024 * 1024;
/// Most notifications one `list_changed_storm` sends.
pub const MAX_STORM_COUNT: u32 = 10_000;
/// Most pieces one `split_write` cuts a reply into.
pub const MAX_SPLIT_PARTS: u8 = 64;
/// Longest `latency`, in ms (the same 30 s ceiling as the `delay` tool).
pub const MAX_LATENCY_MS: u64 = 30_000;

/// What happens to one reply on the wire. Closed on purpose: a new fault is a new variant and a new file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultKind {
    /// Hold the reply for `delay_ms` before writing it.
    Latency { delay_ms: u64 },
    /// Close the connection (stdio) or abort the response stream (HTTP) instead of replying.
    Disconnect,
    /// Valid JSON, invalid JSON-RPC.
    Malformed { variant: MalformedVariant },
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MalformedVariant {
    /// The `jsonrpc` member is removed.
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
            _ => Ok(()),
        }
    }

    /// What the wire does with `reply` under this fault.
    pub fn apply(&self, reply: Reply<'_>) -> Vec<WireAction> {
        match *self {
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
        }
    }
}

/// Re-serialises a changed copy of the reply's JSON; `None` when the reply is not a JSON object.
fn edit(reply: Reply<'_>, change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) -> Option<Bytes> {
    let mut value = reply.frame.value()?.clone();
    change(value.as_object_mut()?);
    serde_json::to_vec(&value).ok().map(Bytes::from)
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
        ];
        for fault in all {
            let json = serde_json::to_value(&fault).unwrap();
            assert_eq!(json["type"], fault.name());
            assert_eq!(serde_json::from_value::<FaultKind>(json).unwrap(), fault);
            assert!(fault.validate().is_ok(), "{fault:?}");
        }
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = serde_json::from_str::<FaultKind>(r#"{"type":"latency","delay_ms":1,"jitter":2}"#).unwrap_err();
        assert!(err.to_string().contains("jitter"), "{err}");
    }

    #[test]
    fn out_of_range_parameters_name_the_parameter() {
        assert!(FaultKind::Latency { delay_ms: 30_001 }.validate().unwrap_err().contains("delay_ms"));
        assert!(FaultKind::SplitWrite { parts: 1 }.validate().unwrap_err().contains("parts"));
        assert!(
            FaultKind::HttpStatus { status: 200, retry_after_sec: None }.validate().unwrap_err().contains("status")
        );
    }
}
