//! Catalogue faults on the model hop: what each one the rules may name does to a model answer. The rules file is
//! the proxy's (same matching, counters, seeded probability and windows); a fault with no meaning between a
//! framework and its model (a wrong JSON-RPC id, a list-changed storm, …) is refused when the file is loaded.

use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::{HttpStatus, Latency, RateLimit};
use faultlab_proxy::rules::{RulesError, RulesFile};
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
}

/// The faults this hop carries, as the docs and errors name them.
pub const SUPPORTED: &str = "latency, http_status (and auth_expired, forbidden), rate_limit, malformed, truncated, \
                             disconnect, timeout, burst_failure, server_outage (without restart), cascading_failure";

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
                "rule {:?}: fault {} does not apply on the model hop; the model endpoint carries {SUPPORTED}",
                rule.name,
                rule.fault.name()
            )));
        }
        if rule.matcher.tool.is_some() || rule.matcher.argument.is_some() {
            return Err(RulesError::Unsupported(format!(
                "rule {:?}: match.tool and match.argument select MCP tool calls; on the model hop match by method \
                 (chat.completions, responses or messages), nth, after, every, probability and window",
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
