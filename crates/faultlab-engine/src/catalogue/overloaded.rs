//! `overloaded`: the model's API is overloaded; a stream fails after it started (model hop only).
//!
//! **What it does on the wire.** A streamed answer starts (status 200, the first half of its events) and then
//! carries the provider's error event and ends: Anthropic Messages `event: error` with
//! `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`; Responses `event: error` with
//! `{"type":"error","code":"server_is_overloaded",...}`; Chat Completions and Gemini a `data:` line holding an
//! `error` object (OpenAI `type: "server_error"`; Gemini `status: "UNAVAILABLE"`). A JSON answer, or any answer
//! when `before_stream` is true, is refused instead: `529` with the `overloaded_error` body (Anthropic), `503`
//! with the provider's overloaded body (OpenAI, Gemini). The proxy refuses this fault.
//!
//! **What a robust client should do.** Treat both as transient: drop what the broken stream delivered (never act
//! on a half answer), back off and retry a bounded number of times, then report the provider overloaded.
//!
//! **Example.** `{"type": "overloaded"}` or `{"type": "overloaded", "before_stream": true}`
//!
//! **How it is graded.** The recording shows the retries and their spacing; the MCP side shows no call made from
//! the broken stream's half answer.

model_fault! {
    /// The provider is overloaded: a stream breaks with its `error` event; a JSON answer (or any, with
    /// `before_stream`) is `529` (Anthropic) or `503` (OpenAI, Gemini) with the provider's body.
    pub struct Overloaded {
        /// Refuse a streamed request with the status too, before any event.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub before_stream: bool,
    }
    category: Systemic,
    effect: Error,
    examples: [r#"{"type": "overloaded"}"#, r#"{"type": "overloaded", "before_stream": true}"#],
}
