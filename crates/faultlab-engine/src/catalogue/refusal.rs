//! `refusal`: the model refuses, or the provider's content filter stops the answer (model hop only).
//!
//! **What it does on the wire.** Instead of the scripted turn, `faultlab model` answers with a refusal in each
//! API's own shape, JSON and streamed: Chat Completions `content: null`, the text in `refusal` (streamed as
//! `refusal` deltas) and `finish_reason: "content_filter"`; Responses a message whose content is a `refusal` part
//! (streamed as `response.refusal.delta` / `.done`); Anthropic Messages `stop_reason: "refusal"` with no content
//! blocks; Gemini `finishReason: "SAFETY"` with no content parts. The proxy refuses this fault.
//!
//! **What a robust client should do.** Not take the refusal for an answer or an empty success: surface it as a
//! refusal (the run did not do what was asked), and not call tools because of it.
//!
//! **Example.** `{"type": "refusal"}`
//!
//! **How it is graded.** The run's outcome: a framework that reports success with an empty or refused answer hides
//! the failure.

model_fault! {
    /// The model refuses (`refusal` content, `finish_reason: content_filter`, `stop_reason: refusal`,
    /// `finishReason: SAFETY`).
    pub struct Refusal {}
    category: Data,
    effect: WrongData,
    examples: [r#"{"type": "refusal"}"#],
}

/// What the model says when it refuses.
pub const REFUSAL_TEXT: &str = "I'm sorry, but I can't help with that request.";
