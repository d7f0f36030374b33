//! `stream_replay`: the stream is cut, and its resume replays the wrong events.
//!
//! **What it does on the wire.** HTTP: a primed stream cut before the reply (after one message if the server
//! sends one, for `duplicate`; after the priming event for `foreign`). The first `GET` resuming it with
//! `Last-Event-ID`: `duplicate` sends the messages the client already saw again, with their ids, before the
//! missed ones and the reply; `foreign` first sends the last message of another stream of the same session, with
//! that stream's id (the spec forbids it), then the missed events. Later resumes replay correctly. stdio: the reply
//! passes unchanged (skipped: no response stream). `faultlab serve` arms `duplicate` with its tool
//! `replay_duplicate` and `foreign` with `replay_foreign`.
//!
//! **What a robust client should do.** Deliver each event id once (drop the duplicates), and never take another
//! stream's message as part of this one (an old reply with another request's id is not this request's answer).
//!
//! **Example.** `{"type": "stream_replay", "variant": "duplicate"}`
//!
//! **How it is graded.** The faulted response ends without the reply; the resumed stream carries it, and the
//! client's record shows whether the replayed events were delivered twice.

use super::stream_cut::{check_retry, on_stream_only};

/// What the first resume replays wrongly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplayVariant {
    /// The events already seen, again.
    Duplicate,
    /// Another stream's last message first.
    Foreign,
}

fault! {
    /// Cut the stream; its first resume replays events already seen (`duplicate`) or another stream's (`foreign`).
    pub struct StreamReplay {
        pub variant: ReplayVariant,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_ms: Option<u64>,
    }
    category: Transport,
    effect: TransportLoss,
    serve_tool: Some(ServeTool::sessions("replay_duplicate")),
    examples: [
        r#"{"type": "stream_replay", "variant": "duplicate"}"#,
        r#"{"type": "stream_replay", "variant": "foreign"}"#,
    ],
    validate: |fault| check_retry(fault.retry_ms),
    apply: |_, reply, _| on_stream_only(reply),
}
