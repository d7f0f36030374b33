//! `stream_cut`: the response stream closes after N events, before the reply (Streamable HTTP, 2025-11-25).
//!
//! **What it does on the wire.** HTTP: the request's response is an SSE stream (a JSON answer is turned into one)
//! whose events carry ids `<stream>-<index>`, opened by a priming event (an id, `retry:` `retry_ms`, default 3000,
//! and empty data); after the priming event and `after_events` messages (0 to 16, notifications such as progress)
//! the body ends cleanly, always before the reply. The reply stays in the stream's log: a `GET` with
//! `Last-Event-ID` replays what the client missed, the reply included. With `ids: false` no event carries an id
//! and there is no priming event, so the stream cannot be resumed. stdio has no response stream: the reply passes
//! unchanged and the trajectory says the fault was skipped.
//!
//! **What a robust client should do.** With ids: reconnect after `retry:` with a `GET` carrying the last event id
//! it saw, and take the reply from the resumed stream. Without ids: report the request as lost (or re-issue it if it
//! is safe to), never wait for it forever (typescript-sdk #731).
//!
//! **Example.** `{"type": "stream_cut", "after_events": 1}`
//!
//! **How it is graded.** The faulted response ends without the reply (a lost stream); a resuming client gets the
//! reply on its `GET`, once.

use super::{Applied, Reply, within};

/// Longest `retry:` a stream fault may ask for, in milliseconds (24 h: "very large" without overflowing any
/// client's timer).
pub const MAX_RETRY_MS: u64 = 86_400_000;
/// Most messages a stream fault lets through before its cut.
pub const MAX_EVENTS_BEFORE_CUT: u64 = 16;

fault! {
    /// Close the response stream after its priming event and `after_events` messages, before the reply.
    pub struct StreamCut {
        #[serde(default, skip_serializing_if = "is_zero")]
        pub after_events: u64,
        /// `false`: no event ids and no priming event (the stream cannot be resumed).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        pub ids: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_ms: Option<u64>,
    }
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::sessions("stream_cut")),
    examples: [
        r#"{"type": "stream_cut", "after_events": 1}"#,
        r#"{"type": "stream_cut", "ids": false}"#,
        r#"{"type": "stream_cut", "retry_ms": 0}"#,
    ],
    validate: |fault| {
        within("after_events", fault.after_events, 0, MAX_EVENTS_BEFORE_CUT)?;
        check_retry(fault.retry_ms)
    },
    apply: |_, reply, _| on_stream_only(reply),
}

/// A `retry_ms` within 0..=[`MAX_RETRY_MS`], if set.
pub(crate) fn check_retry(retry_ms: Option<u64>) -> Result<(), String> {
    retry_ms.map_or(Ok(()), |ms| within("retry_ms", ms, 0, MAX_RETRY_MS))
}

/// What a stream fault does to a reply outside a Streamable HTTP front (stdio): nothing, said so.
pub(crate) fn on_stream_only(reply: Reply<'_>) -> Applied {
    Applied::skipped(reply, "a fault of a Streamable HTTP response stream; this transport has none".into())
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_true(value: &bool) -> bool {
    *value
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::{Fault as _, FaultKind};

    #[test]
    fn defaults_limits_and_no_effect_off_a_stream() {
        let fault: FaultKind = serde_json::from_str(r#"{"type": "stream_cut"}"#).unwrap();
        assert_eq!(fault, FaultKind::StreamCut(StreamCut { after_events: 0, ids: true, retry_ms: None }));
        assert!(fault.on_stream());
        let over = StreamCut { after_events: 17, ids: true, retry_ms: None };
        assert!(over.validate().unwrap_err().contains("after_events"));
        let over = StreamCut { after_events: 0, ids: true, retry_ms: Some(MAX_RETRY_MS + 1) };
        assert!(over.validate().unwrap_err().contains("retry_ms"));
        let reply = frame(RESULT);
        let applied = fault.apply_checked(Reply { frame: &reply, request: None }, &Default::default());
        assert_eq!(applied.actions, unchanged(Reply { frame: &reply, request: None }));
        assert!(applied.skipped.unwrap().contains("Streamable HTTP"));
    }
}
