//! `invalid_schema`: a tool result whose `content` is an object, not an array.
//!
//! **What it does on the wire.** The result's `content` array is replaced by an object with the same blocks keyed
//! by their index: `"content":[{"type":"text","text":"ok"}]` becomes `"content":{"0":{"type":"text","text":"ok"}}`
//! (what a server gets when its JSON encoder turns a list into a map, e.g. PHP's `json_encode` of a sparse array).
//! `CallToolResult` requires `content` to be an array, so the result no longer matches the tool result schema,
//! while every block is still well-formed (unlike `invalid_result`, which breaks a block's `text`). `jsonrpc`,
//! `id` and every other member are kept. A reply without a `content` array (an error, a non-tool result) is sent
//! unchanged.
//!
//! **What a robust client should do.** Validate the result against the schema and fail the call with a clear
//! error, rather than iterating an object as if it were a list or crashing; keep the connection.
//!
//! **Example.** `{"type": "invalid_schema"}`
//!
//! **How it is graded.** The call's outcome is an error (the result was rejected), not success; a follow-up call
//! on the same connection succeeds.

use super::rewrite_result;
use serde_json::Value;

fault! {
    /// The tool result's `content` is an object (keyed "0", "1", ...) where the schema requires an array.
    pub struct InvalidSchema {}
    category: Protocol,
    effect: Invalid,
    serve_tool: None,
    examples: [r#"{"type": "invalid_schema"}"#],
    apply: |_, reply, _| rewrite_result(reply, |result| {
        let Some(Value::Array(blocks)) = result.get_mut("content") else {
            return false;
        };
        let keyed = std::mem::take(blocks).into_iter().enumerate().map(|(i, block)| (i.to_string(), block)).collect();
        // Inserting over an existing key keeps its position, so only the type of `content` changes.
        result.insert("content".into(), Value::Object(keyed));
        true
    }),
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;

    #[test]
    fn content_becomes_an_index_keyed_object() {
        let reply = frame(
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":false}}"#,
        );
        let actions = run(InvalidSchema {}, &reply);
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":{"0":{"type":"text","text":"a"},"1":{"type":"text","text":"b"}},"isError":false}}"#;
        assert_eq!(actions, vec![WireAction::Send(Bytes::from(expected))]);
    }

    #[test]
    fn replies_without_content_pass_unchanged() {
        let error = frame(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#);
        assert_eq!(run(InvalidSchema {}, &error), unchanged(Reply { frame: &error, request: None }));
    }
}
