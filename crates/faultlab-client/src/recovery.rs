//! What the client did to recover a call: resumed response streams (2025-11-25 "Resumability and Redelivery"),
//! re-initialised sessions the server had lost, and protocol versions retried after `-32022`. Every call's
//! [`Recovery`] is in its [`crate::Observation`], so a scenario can check it and a reader can see it.

use serde::{Deserialize, Serialize};

/// Most resuming `GET`s for one response stream: a server that keeps closing the stream before the reply is not
/// waited on for ever.
pub const MAX_RECONNECTS: u32 = 3;
/// The wait before a resume when the stream sent no `retry:`, in ms.
pub const DEFAULT_RETRY_MS: u64 = 1_000;
/// The longest `retry:` the client honours, in ms: a larger one (a day, say) is cut to this, so a resume never
/// outlives any deadline a person would set. `retry: 0` is honoured as is: bounded by [`MAX_RECONNECTS`].
pub const MAX_RETRY_WAIT_MS: u64 = 10_000;
/// Most `initialize` attempts after the server answered 404 for the session (a server that refuses every
/// re-initialisation is not asked for ever).
pub const MAX_REINITIALIZE_ATTEMPTS: u32 = 3;

/// One resuming `GET` of a response stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reconnect {
    /// The `Last-Event-ID` header the `GET` carried (the last non-empty event id the stream had sent).
    pub last_event_id: String,
    /// How long the client waited before it, in ms: the stream's last `retry:` (capped at 10000), else 1000.
    pub waited_ms: u64,
    /// The HTTP status that answered it; absent when the request itself failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// What the client did to recover one call, beyond sending it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recovery {
    /// Every resume of the call's response stream, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reconnects: Vec<Reconnect>,
    /// Events whose id the stream had already delivered (a replay of seen events): dropped, counted here.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicate_events: u32,
    /// 1 when the call's response never arrived: its stream (and every resume) ended without it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_responses: u32,
    /// New sessions the client opened after the server answered the call 404 for its session.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reinitializations: u32,
    /// `initialize` attempts after a 404 that the server refused too (at most [`MAX_REINITIALIZE_ATTEMPTS`] per loss).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_reinitializations: u32,
    /// The protocol version the call was sent again with after `-32022` listed it in `data.supported`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_retry: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Recovery {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
