//! `tool_call_cut`: the model's answer stops at its token limit inside a tool call's arguments (model hop only).
//!
//! **What it does on the wire.** `faultlab model` answers with the scripted tool call whose arguments are cut
//! halfway (not valid JSON), ended as the API ends an answer that ran out of tokens: Chat Completions
//! `finish_reason: "length"`; Responses `status: "incomplete"` with `incomplete_details.reason:
//! "max_output_tokens"` (streamed: `response.incomplete` instead of `response.completed`); Anthropic Messages
//! `stop_reason: "max_tokens"` (streamed: the `input_json_delta`s stop mid-object; as JSON the `tool_use` block's
//! `input` is `{}`, all that parses); Gemini `finishReason: "MAX_TOKENS"` with the call's `args` `{}`. A scripted
//! text answer is cut the same way. The proxy refuses this fault: it exists only between an agent and its model.
//!
//! **What a robust client should do.** See the stop reason, not run a call whose arguments did not finish, and
//! retry the turn (perhaps with a larger limit) or report that the model ran out of tokens.
//!
//! **Example.** `{"type": "tool_call_cut"}`
//!
//! **How it is graded.** The recording shows whether the framework ran a tool with cut arguments (an MCP call with
//! `{}` or broken arguments after the cut), asked the model again, or ended with an error naming the limit.

model_fault! {
    /// The answer ends at the token limit inside a tool call's arguments (`finish_reason: length`,
    /// `stop_reason: max_tokens`, `status: incomplete`, `finishReason: MAX_TOKENS`).
    pub struct ToolCallCut {}
    category: Protocol,
    effect: Invalid,
    examples: [r#"{"type": "tool_call_cut"}"#],
}

#[cfg(test)]
mod tests {
    use super::super::{FaultKind, tests::*};
    use super::*;

    #[test]
    fn a_model_fault_leaves_an_mcp_reply_unchanged_and_says_why() {
        let fault = FaultKind::from(ToolCallCut {});
        assert!(fault.model_only());
        let applied = fault.apply_checked(
            super::super::Reply { frame: &frame(RESULT), request: None },
            &super::super::Earlier::default(),
        );
        assert_eq!(sent(&applied.actions)[0].bytes().as_ref(), RESULT.as_bytes());
        assert!(applied.skipped.unwrap().contains("model hop"));
    }
}
