//! `duplicate_call_id`: the model asks for two tool calls with the same id (model hop only).
//!
//! **What it does on the wire.** `faultlab model` answers with the scripted tool call twice in one turn, both
//! with the same call id: two `tool_calls` entries (Chat Completions, JSON and streamed at `index` 0 and 1), two
//! `function_call` output items with one `call_id` (Responses), two `tool_use` blocks with one `id` (Anthropic
//! Messages). Gemini's calls carry no id in its API, so there it is two identical `functionCall` parts. A
//! scripted text answer cannot carry it: the answer goes out unchanged and the recording says the fault was
//! skipped. The proxy refuses this fault.
//!
//! **What a robust client should do.** Not lose or merge a call silently and not send back two results the API
//! will refuse for one id; run the call once or answer both, and keep the conversation valid.
//!
//! **Example.** `{"type": "duplicate_call_id"}`
//!
//! **How it is graded.** The recording shows the next request: how many results it carries back for the one id,
//! and the MCP side how many times the tool ran.

model_fault! {
    /// Two tool calls with the same id in one answer.
    pub struct DuplicateCallId {}
    category: Protocol,
    effect: Invalid,
    examples: [r#"{"type": "duplicate_call_id"}"#],
}
