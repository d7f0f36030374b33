//! `ask_back`: during a call the server asks the client (elicitation, sampling or roots, as `ask` says) and
//! misbehaves while asking, as `variant` says.
//!
//! **What it does on the wire.** `faultlab serve`'s `ask_client` tool sends, inside a 2025-11-25 `tools/call`, a
//! real JSON-RPC request to the client (stdio: a line; an HTTP session: an event on the call's response stream):
//! `elicitation/create` in form mode (`ask: elicitation_form`, a boolean `confirm`) or URL mode
//! (`elicitation_url`), `sampling/createMessage` (`sampling`) or `roots/list` (`roots`), waits for the answer, and
//! commits the fault by `variant`: `repeated`: the same request twice (two ids, the same params), both awaited;
//! `undeclared`: the request although the client did not declare the capability (over Streamable HTTP without a
//! session, no POST can carry the answer back: sampling with no stream to answer on); `never_finish`: the
//! client's answer arrives and the call is never finished (until the client cancels it); `completion_missing`
//! (URL mode): accepted, the call finishes, `notifications/elicitation/complete` never comes;
//! `completion_unknown_id` (URL mode): the completion names an elicitation id the client never saw;
//! `odd_schema` (form mode): a `requestedSchema` with a nested object, an array of objects and a `$ref` (the spec
//! allows only flat primitive properties). A request after the call ended is `request_after_result`. Only
//! `faultlab serve` commits it: a proxy cannot make another server ask, so its rules refuse it.
//!
//! **What a robust client should do.** Answer each request it gets (both of a repeated one, or decline the
//! second); answer `Method not found` (-32601) at once for a feature it did not declare, never hang; keep its own
//! deadline on the outer call while it is asked, and cancel a call that never finishes; not wait for ever for a
//! URL-mode completion, and ignore one for an id it does not know; decline, or fill what it can, on an odd schema,
//! never crash.
//!
//! **Example.** `{"type": "ask_back", "ask": "elicitation_form", "variant": "repeated"}`
//!
//! **How it is graded.** The reference client (`faultlab run`) answers as a scenario's `answers` script it and
//! counts the requests per call (`anomalies: {serverRequests, declinedServerRequests,
//! unansweredServerRequests}`); the call's outcome and duration show whether its timeout kept counting while it
//! was asked (examples/scenarios/ask-*.yaml, docs/ask-back.md). What a robust client sees depends on the
//! variant: the call's result, except an error for `undeclared` (its own -32601 fails the ask, so the call) and a
//! timeout for `never_finish`.

use super::{Category, Effect};

/// What the server asks the client during the call.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Ask {
    /// `elicitation/create`, form mode: a boolean `confirm`.
    ElicitationForm,
    /// `elicitation/create`, URL mode, then `notifications/elicitation/complete` once accepted.
    ElicitationUrl,
    /// `sampling/createMessage` with one user message.
    Sampling,
    /// `roots/list`.
    Roots,
}

impl Ask {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The JSON-RPC method on the wire.
    pub fn method(self) -> &'static str {
        match self {
            Self::ElicitationForm | Self::ElicitationUrl => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    /// The client capability that allows it: its key in `capabilities`, and for elicitation the mode's key.
    pub fn capability(self) -> (&'static str, Option<&'static str>) {
        match self {
            Self::ElicitationForm => ("elicitation", Some("form")),
            Self::ElicitationUrl => ("elicitation", Some("url")),
            Self::Sampling => ("sampling", None),
            Self::Roots => ("roots", None),
        }
    }
}

/// How the server misbehaves while asking.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AskVariant {
    /// The same request twice (two ids, the same params), both awaited.
    Repeated,
    /// Asked although the client did not declare the capability: it must answer an error, not hang.
    Undeclared,
    /// The client's answer arrives and the call is never finished (until the client cancels it).
    NeverFinish,
    /// URL mode: accepted, the call finishes, but `notifications/elicitation/complete` is never sent.
    CompletionMissing,
    /// URL mode: the completion names an elicitation id the client never saw.
    CompletionUnknownId,
    /// Form mode: a `requestedSchema` the spec does not allow (a nested object, an array of objects, a `$ref`).
    OddSchema,
}

impl AskVariant {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

fault! {
    /// The server asks the client during a call and misbehaves while asking (faultlab serve's ask_client only).
    #[derive(Copy)]
    pub struct AskBack {
        /// What is asked: `elicitation_form`, `elicitation_url`, `sampling` or `roots`.
        pub ask: Ask,
        pub variant: AskVariant,
    }
    category: Protocol,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("ask_client")),
    examples: [
        r#"{"type": "ask_back", "ask": "elicitation_form", "variant": "repeated"}"#,
        r#"{"type": "ask_back", "ask": "sampling", "variant": "undeclared"}"#,
        r#"{"type": "ask_back", "ask": "roots", "variant": "never_finish"}"#,
        r#"{"type": "ask_back", "ask": "elicitation_url", "variant": "completion_missing"}"#,
        r#"{"type": "ask_back", "ask": "elicitation_url", "variant": "completion_unknown_id"}"#,
        r#"{"type": "ask_back", "ask": "elicitation_form", "variant": "odd_schema"}"#,
    ],
    serve_only: SERVE_ONLY,
    category_of: |fault| match fault.variant {
        AskVariant::NeverFinish | AskVariant::CompletionMissing => Category::Temporal,
        _ => Category::Protocol,
    },
    // What a robust client sees: it answers -32601 to an undeclared request, so the call fails; a call never
    // finished gets no reply; every other variant ends in the call's result.
    effect_of: |fault| match fault.variant {
        AskVariant::Undeclared => Effect::Error,
        AskVariant::NeverFinish => Effect::Timeout,
        _ => Effect::Result,
    },
    validate: |fault| fault.misfit().map_or(Ok(()), |why| Err(format!("variant {why}"))),
    apply: |_, reply, _| super::Applied::skipped(reply, SERVE_ONLY.into()),
}

/// Why the proxy refuses it (and why the engine would pass the reply unchanged).
const SERVE_ONLY: &str = "ask_back is committed by faultlab serve's ask_client tool (the server's own requests \
                          during the call); a proxy cannot make another server ask its client";

impl AskBack {
    /// A variant that makes no sense for the ask, in words starting with the variant (`odd_schema needs ask
    /// elicitation_form`): the completion variants need URL mode, `odd_schema` form mode.
    pub fn misfit(&self) -> Option<String> {
        let needs = match self.variant {
            AskVariant::CompletionMissing | AskVariant::CompletionUnknownId => Ask::ElicitationUrl,
            AskVariant::OddSchema => Ask::ElicitationForm,
            _ => return None,
        };
        (self.ask != needs).then(|| format!("{} needs ask {}", self.variant.as_str(), needs.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::FaultKind;

    #[test]
    fn a_variant_that_does_not_fit_the_ask_is_refused_and_the_proxy_refuses_them_all() {
        let odd: FaultKind =
            serde_json::from_str(r#"{"type": "ask_back", "ask": "roots", "variant": "odd_schema"}"#).unwrap();
        assert_eq!(odd.validate(), Err("variant odd_schema needs ask elicitation_form".to_owned()));
        let missing = AskBack { ask: Ask::Sampling, variant: AskVariant::CompletionMissing };
        assert_eq!(missing.misfit().as_deref(), Some("completion_missing needs ask elicitation_url"));
        let never = FaultKind::from(AskBack { ask: Ask::Roots, variant: AskVariant::NeverFinish });
        assert_eq!((never.effect(), never.category()), (Effect::Timeout, Category::Temporal));
        assert!(never.serve_only().is_some_and(|why| why.contains("ask_client")));
        let reply = frame(RESULT);
        let applied = never.apply_checked(Reply { frame: &reply, request: None }, &Default::default());
        assert_eq!(applied.actions, unchanged(Reply { frame: &reply, request: None }));
        assert!(applied.skipped.is_some());
    }
}
