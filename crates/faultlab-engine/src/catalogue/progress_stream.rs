//! `progress_stream`: a long call that sends `count` progress notifications, one every `every_ms`, before its
//! result, shaped as `shape` says.
//!
//! **What it does on the wire.** `faultlab serve`'s `progress_stream` tool sleeps `every_ms` (1 to 30000 ms), sends
//! one `notifications/progress`, `count` times (1 to 1000), then the result; so the call lasts `count x every_ms`,
//! which a scenario sets past the client's base timeout. `shape`: `steady`: values 1, 2, ... of `total: count`
//! for the request's `progressToken` (nothing is sent without one, but the call still lasts as long);
//! `backwards`: count, count - 1, ... 1 (the spec says progress must increase); `unknown_token`: steady values for
//! `"faultlab-unknown-progress-token"`, which no request carried (sent even when the request had none). Progress
//! after the result is `progress_after_result`. Only `faultlab serve` commits it: a proxy cannot make another
//! server's work last longer and report progress, so its rules refuse it.
//!
//! **What a robust client should do.** Either keep its base timeout (the call ends there) or reset it on
//! progress as the spec allows, but always within a hard maximum of its own: progress must never keep a call
//! alive for ever. Ignore (or log) values that go backwards and progress for a token it never sent; never attach
//! it to another call, never crash.
//!
//! **Example.** `{"type": "progress_stream", "shape": "steady", "every_ms": 200, "count": 10}`
//!
//! **How it is graded.** The call's outcome and duration against the scenario's `timeoutMs` and
//! `maxDurationMs` (the hard maximum): examples/scenarios/progress-stream.yaml (the reference client does not
//! reset its clock on progress and ends the call at its 1 s deadline) and progress-resets-timeout.yaml.

use super::{Category, within};

/// Longest interval between two notifications, in ms.
pub const MAX_EVERY_MS: u64 = 30_000;
/// Most notifications one call sends.
pub const MAX_PROGRESS_COUNT: u64 = 1_000;
/// The token `unknown_token` uses, which no request carried.
pub const UNKNOWN_PROGRESS_TOKEN: &str = "faultlab-unknown-progress-token";

/// How the progress is shaped.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ProgressShape {
    /// 1, 2, ... count, of `total: count`, with the request's token.
    #[default]
    Steady,
    /// count, count - 1, ... 1: the value goes backwards (the spec says it must increase).
    Backwards,
    /// Steady values for a token no request carried.
    UnknownToken,
}

fault! {
    /// Progress every every_ms for count notifications before the result, shaped as shape says (faultlab serve's
    /// progress_stream only).
    #[derive(Copy)]
    pub struct ProgressStream {
        #[serde(default)]
        pub shape: ProgressShape,
        /// Interval between notifications, in ms (1 to 30000); the first comes after one interval.
        pub every_ms: u64,
        /// How many notifications before the result (1 to 1000).
        pub count: u64,
    }
    category: Temporal,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("progress_stream")),
    examples: [
        r#"{"type": "progress_stream", "shape": "steady", "every_ms": 200, "count": 10}"#,
        r#"{"type": "progress_stream", "shape": "backwards", "every_ms": 10, "count": 3}"#,
        r#"{"type": "progress_stream", "shape": "unknown_token", "every_ms": 10, "count": 3}"#,
    ],
    serve_only: SERVE_ONLY,
    category_of: |fault| match fault.shape {
        ProgressShape::Steady => Category::Temporal,
        _ => Category::Protocol,
    },
    validate: |fault| {
        within("every_ms", fault.every_ms, 1, MAX_EVERY_MS)?;
        within("count", fault.count, 1, MAX_PROGRESS_COUNT)
    },
    apply: |_, reply, _| super::Applied::skipped(reply, SERVE_ONLY.into()),
}

/// Why the proxy refuses it (and why the engine would pass the reply unchanged).
const SERVE_ONLY: &str = "progress_stream is committed by faultlab serve's progress_stream tool (the server's own \
                          long work and its progress); a proxy cannot make another server's work report progress";

impl ProgressShape {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl ProgressStream {
    /// The value of the `step`th notification (1-based), as the shape has it.
    pub fn value(&self, step: u64) -> u64 {
        match self.shape {
            ProgressShape::Backwards => self.count + 1 - step,
            _ => step,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::FaultKind;

    #[test]
    fn the_shapes_read_as_the_server_sends_them_and_the_limits_hold() {
        let read = |json: &str| serde_json::from_str::<FaultKind>(json).unwrap();
        let backwards = ProgressStream { shape: ProgressShape::Backwards, every_ms: 10, count: 3 };
        assert_eq!((1..=3).map(|s| backwards.value(s)).collect::<Vec<_>>(), [3, 2, 1]);
        let steady = read(r#"{"type": "progress_stream", "every_ms": 10, "count": 3}"#);
        assert_eq!(steady, FaultKind::from(ProgressStream { shape: ProgressShape::Steady, ..backwards }));
        let slow = read(r#"{"type": "progress_stream", "every_ms": 30001, "count": 3}"#);
        assert_eq!(slow.validate(), Err("every_ms must be between 1 and 30000".to_owned()));
        let many = read(r#"{"type": "progress_stream", "every_ms": 1, "count": 0}"#);
        assert_eq!(many.validate(), Err("count must be between 1 and 1000".to_owned()));
        assert!(steady.serve_only().is_some_and(|why| why.contains("progress_stream tool")));
        let reply = frame(RESULT);
        let applied = steady.apply_checked(Reply { frame: &reply, request: None }, &Default::default());
        assert_eq!(applied.actions, unchanged(Reply { frame: &reply, request: None }));
        assert!(applied.skipped.is_some());
    }
}
