//! `invalid_result`: a valid JSON-RPC envelope around a result that breaks the MCP schema.
//!
//! **What it does on the wire.** Every text content block of the result gets a number (`42`) as its `text`,
//! where the schema requires a string. `jsonrpc`, `id` and the envelope stay valid.
//!
//! **What a robust client should do.** Validate the result against the MCP schema and reject it with a clear
//! error instead of passing a number on as text or crashing.
//!
//! **Example.** `{"type": "invalid_result"}`
//!
//! **How it is graded.** The call's outcome is an error (the result was rejected), not success.

use super::rewrite_content;
use serde_json::json;

fault! {
    /// The result's text content blocks carry a number instead of a string.
    pub struct InvalidResult {}
    category: Data,
    effect: Invalid,
    serve_tool: None,
    examples: [r#"{"type": "invalid_result"}"#],
    apply: |_, reply, _| rewrite_content(reply, |content| {
        for block in content.iter_mut().filter(|b| b["type"] == "text") {
            block["text"] = json!(42);
        }
        true
    }),
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn text_becomes_a_number_and_the_envelope_stays_valid() {
        let out = sent(&run(InvalidResult {}, &frame(RESULT)));
        let value = out[0].value().unwrap();
        assert_eq!(value["jsonrpc"], "2.0");
        assert_eq!(value["id"], 7);
        assert_eq!(value["result"]["content"][0]["text"], 42);
    }
}
