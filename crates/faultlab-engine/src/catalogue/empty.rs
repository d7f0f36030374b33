//! `empty`: a valid tool result with nothing in it.
//!
//! **What it does on the wire.** The result's `content` becomes `[]` (added if it was absent) and its
//! `structuredContent`, if present, becomes `{}`. `jsonrpc`, `id`, `isError` and every other member are kept, so
//! the reply is valid JSON-RPC and a schema-valid `CallToolResult` (an `outputSchema` with required properties
//! will no longer match the empty `structuredContent`, as with a real server that lost its data). An error reply
//! is sent unchanged: it already carries no content.
//!
//! **What a robust client should do.** Not treat "nothing" as success with data: notice the empty result, retry
//! or report it, and never invent content (an agent must not claim it read something).
//!
//! **Example.** `{"type": "empty"}`
//!
//! **How it is graded.** The call succeeds with no content; what happens next decides: a retry, a fallback or an
//! honest report passes, a claimed success with data that never arrived fails (false recovery).

use super::rewrite_result;
use serde_json::json;

fault! {
    /// A valid tool result with nothing in it: `content` is `[]`, `structuredContent` (if any) is `{}`.
    pub struct Empty {}
    category: Data,
    effect: WrongData,
    serve_tool: None,
    examples: [r#"{"type": "empty"}"#],
    apply: |_, reply, _| rewrite_result(reply, |result| {
        result.insert("content".into(), json!([]));
        if let Some(structured) = result.get_mut("structuredContent") {
            *structured = json!({});
        }
        true
    }),
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;

    #[test]
    fn content_and_structured_content_are_emptied() {
        let reply = frame(
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1},"isError":false}}"#,
        );
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{},"isError":false}}"#;
        assert_eq!(run(Empty {}, &reply), vec![WireAction::Send(Bytes::from(expected))]);
    }

    #[test]
    fn errors_pass_unchanged() {
        let error = frame(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#);
        assert_eq!(run(Empty {}, &error), unchanged(Reply { frame: &error, request: None }));
    }
}
