//! `elicitation_complete_unknown`: a URL-mode elicitation's completion for an elicitation the client never saw.
//!
//! **What it does on the wire.** Before the reply, one `notifications/elicitation/complete` whose `elicitationId`
//! (`"faultlab-unknown-elicitation"`) no `elicitation/create` ever carried; then the reply, unchanged. The spec
//! lets a client ignore a completion for an id it does not know.
//!
//! **What a robust client should do.** Ignore it (perhaps log it): no prompt closed, no retry started, no crash;
//! the call's result is used as usual.
//!
//! **Example.** `{"type": "elicitation_complete_unknown"}`
//!
//! **How it is graded.** The call succeeds; the client counts one `notifications/elicitation/complete`; the
//! following call on the connection succeeds too.

use super::WireAction;
use bytes::Bytes;
use serde_json::json;

/// The id the notification names, which no elicitation carried.
pub const UNKNOWN_ELICITATION_ID: &str = "faultlab-unknown-elicitation";

fault! {
    /// A URL-mode elicitation completion for an unknown elicitation id, before the reply.
    pub struct ElicitationCompleteUnknown {}
    category: Protocol,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("elicitation_complete_unknown")),
    examples: [
        r#"{"type": "elicitation_complete_unknown"}"#,
    ],
    apply: |_, reply, _| {
        let note = json!({
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": UNKNOWN_ELICITATION_ID}
        });
        vec![WireAction::Send(Bytes::from(note.to_string())), WireAction::Send(reply.frame.bytes().clone())]
    },
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_completion_precedes_the_unchanged_reply() {
        let reply = frame(RESULT);
        let out = sent(&run(ElicitationCompleteUnknown {}, &reply));
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].value().unwrap()["params"]["elicitationId"], UNKNOWN_ELICITATION_ID);
        assert_eq!(out[1].bytes(), reply.bytes());
    }
}
