//! `input_required`: a multi-round-trip `tools/call` (2026-07-28, SEP-2322) whose rounds misbehave, as `variant`
//! says.
//!
//! **What it does on the wire.** `faultlab serve`'s `input_rounds` tool answers a 2026-07-28 `tools/call` with
//! `resultType: "input_required"`, one form-mode `elicitation/create` in `inputRequests` (key `confirm`, a
//! boolean) and an opaque `requestState`; the client retries the same call with `inputResponses` and the
//! `requestState` it was given. The rounds then misbehave by `variant`, for real: `endless`: every retry is
//! answered `input_required` again, with a new `requestState` each time, however the client answers;
//! `tampered_state`: the server issues a `requestState`, then refuses the faithful echo as tampered with JSON-RPC
//! error -32602 naming `requestState` (as a server whose integrity key rotated, or a replica that never saw the
//! state, would: the client did nothing wrong); `unknown_result_type`: the first answer is a result whose
//! `resultType` is `faultlab_unknown`, a value no version of MCP defines. Only `faultlab serve` commits it: a
//! proxy cannot make another server's rounds misbehave, so its rules refuse it.
//!
//! **What a robust client should do.** Bound the rounds it drives (and say it gave up, naming the request); treat
//! an error on a retry as the call's error, without resending the same state in a loop; treat an unknown
//! `resultType` as an error it reports (not as `complete`, not by guessing).
//!
//! **Example.** `{"type": "input_required", "variant": "endless"}`
//!
//! **How it is graded.** The reference client records the rounds it retried (`inputRounds`, at most 8) and ends
//! the call with an error when it gives up; a scenario's `expect.inputRounds` checks the count
//! (examples/scenarios/input-rounds.yaml).

use super::{Applied, Category};

/// The `resultType` the `unknown_result_type` variant answers with: no MCP version defines it.
pub const UNKNOWN_RESULT_TYPE: &str = "faultlab_unknown";

/// How the rounds misbehave.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum InputVariant {
    /// Every retry is answered `input_required` again, with a new `requestState`.
    Endless,
    /// The `requestState` the server issued is refused as tampered when the client echoes it (-32602).
    TamperedState,
    /// A result whose `resultType` is a value MCP does not define.
    UnknownResultType,
}

impl InputVariant {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

fault! {
    /// A multi-round-trip call whose rounds misbehave as `variant` says (faultlab serve's input_rounds only).
    #[derive(Copy)]
    pub struct InputRequired {
        pub variant: InputVariant,
    }
    category: Protocol,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("input_rounds")),
    examples: [
        r#"{"type": "input_required", "variant": "endless"}"#,
        r#"{"type": "input_required", "variant": "tampered_state"}"#,
        r#"{"type": "input_required", "variant": "unknown_result_type"}"#,
    ],
    serve_only: SERVE_ONLY,
    category_of: |fault| match fault.variant {
        InputVariant::Endless => Category::Temporal,
        _ => Category::Protocol,
    },
    apply: |_, reply, _| Applied::skipped(reply, SERVE_ONLY.into()),
}

/// Why the proxy refuses it (and why the engine would pass the reply unchanged).
const SERVE_ONLY: &str = "input_required is committed by faultlab serve's input_rounds tool (the server's own \
                          rounds and requestState); a proxy cannot make another server's rounds misbehave";

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::FaultKind;

    #[test]
    fn the_proxy_refuses_it_and_the_engine_passes_the_reply_unchanged() {
        for variant in ["endless", "tampered_state", "unknown_result_type"] {
            let fault = InputRequired { variant: serde_json::from_value(variant.into()).unwrap() };
            assert_eq!(fault.variant.as_str(), variant);
            let fault = FaultKind::from(fault);
            assert!(fault.serve_only().is_some_and(|why| why.contains("input_rounds")));
            let reply = frame(RESULT);
            let applied = fault.apply_checked(Reply { frame: &reply, request: None }, &Default::default());
            assert_eq!(applied.actions, unchanged(Reply { frame: &reply, request: None }));
            assert!(applied.skipped.is_some());
        }
    }
}
