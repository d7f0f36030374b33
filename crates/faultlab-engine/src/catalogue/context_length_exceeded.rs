//! `context_length_exceeded`: the request is too long for the model's context window (model hop only).
//!
//! **What it does on the wire.** `faultlab model` answers `400` (before any stream starts) with the provider's
//! own body: OpenAI (Chat Completions, Responses) `{"error":{"message":"This model's maximum context length is
//! 128000 tokens. However, your messages resulted in N tokens. ...","type":"invalid_request_error","param":
//! "messages","code":"context_length_exceeded"}}` (`param: "input"` for Responses); Anthropic
//! `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: N tokens > 128000
//! maximum"}}`; Gemini `INVALID_ARGUMENT` naming the token count. N is one more than the limit: the error is
//! the same whatever the request's size. The proxy refuses this fault.
//!
//! **What a robust client should do.** Not retry the same request (it will fail the same way); shorten the
//! conversation (drop or summarise old turns, cut long tool results) and try again, or report it.
//!
//! **Example.** `{"type": "context_length_exceeded"}`
//!
//! **How it is graded.** The recording shows whether the next request is shorter than the refused one, or the same
//! request again.

model_fault! {
    /// `400` context length exceeded, in the provider's own error body.
    pub struct ContextLengthExceeded {}
    category: Data,
    effect: Error,
    examples: [r#"{"type": "context_length_exceeded"}"#],
}

/// The context window the error bodies name, in tokens.
pub const CONTEXT_TOKENS: u32 = 128_000;
