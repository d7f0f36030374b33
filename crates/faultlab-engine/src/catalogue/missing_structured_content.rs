//! `missing_structured_content`: a tool that declared an `outputSchema` returns a result without
//! `structuredContent`.
//!
//! **What it does on the wire.** `structuredContent` is removed from the result of a call to a tool that listed an
//! `outputSchema` (the engine remembers them from `tools/list` replies); `content` (usually the same data as JSON
//! text) and everything else is kept byte for byte in order. The reply is sent unchanged, with a
//! `fault_skipped` diagnostic, when no schema is known for the tool (a tool without one may well return text
//! only, so nothing would be wrong), when the result has no `structuredContent` to remove, and for an
//! `isError: true` result (an error need not carry structured output) or an error reply.
//!
//! **What a robust client should do.** MCP says a tool with an `outputSchema` MUST return conforming
//! `structuredContent`. A strict client rejects the result with a clear error (the official SDKs raise one)
//! rather than reading `undefined` fields; a lenient one may fall back to the text, but must not hand code an
//! absent value as if it were the declared object.
//!
//! **Example.** `{"type": "missing_structured_content"}`
//!
//! **How it is graded.** The call's outcome is an error (the result was rejected), or the client says it fell
//! back to the text; success with empty or default structured data is wrong. A skipped fault (see the
//! `fault_skipped` event) changed nothing, so the run measures a plain reply.

use super::{Applied, OutputSchema, Reply, rewrite_result};
use serde_json::Value;

fault! {
    /// `structuredContent` is removed from the result of a tool that listed an `outputSchema` (else the reply is
    /// sent unchanged).
    pub struct MissingStructuredContent {}
    category: Data,
    effect: Invalid,
    serve_tool: Some(ServeTool::everywhere("structured_output")),
    examples: [r#"{"type": "missing_structured_content"}"#],
    apply: |_, reply, earlier| apply(reply, earlier.output_schema.as_ref()),
}

fn apply(reply: Reply<'_>, schema: Option<&OutputSchema>) -> Applied {
    let Some(result) = reply.frame.value().and_then(|m| m.get("result")).filter(|r| r.is_object()) else {
        return Applied::from(super::unchanged(reply));
    };
    let reason = if schema.is_none() {
        "no outputSchema is known for the tool (none listed, or no tools/list seen): a result without structuredContent would be valid"
    } else if result.get("isError") == Some(&Value::Bool(true)) {
        "the result is an error (isError: true), which need not carry structuredContent"
    } else if result.get("structuredContent").is_none() {
        "the result has no structuredContent to remove"
    } else {
        return Applied::from(rewrite_result(reply, |result| result.shift_remove("structuredContent").is_some()));
    };
    Applied::skipped(reply, reason.into())
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn schema() -> OutputSchema {
        OutputSchema::Listed(Arc::new(json!({"type": "object"})))
    }

    #[test]
    fn structured_content_goes_and_the_rest_stays_in_order() {
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1},"isError":false}}"#;
        let applied = apply(Reply { frame: &frame(reply), request: None }, Some(&schema()));
        assert_eq!(applied.skipped, None);
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"n\":1}"}],"isError":false}}"#;
        assert_eq!(applied.actions, vec![WireAction::Send(bytes::Bytes::from(expected))]);
    }

    #[test]
    fn skips_where_nothing_would_be_wrong() {
        let with = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"n":1}}}"#;
        let error = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"n":1},"isError":true}}"#;
        for (reply, schema, says) in [
            (with, None, "no outputSchema"),
            (error, Some(schema()), "isError"),
            (RESULT, Some(schema()), "no structuredContent"),
        ] {
            let applied = apply(Reply { frame: &frame(reply), request: None }, schema.as_ref());
            assert_eq!(applied.actions, unchanged(Reply { frame: &frame(reply), request: None }));
            assert!(applied.skipped.unwrap().contains(says), "{reply}");
        }
    }
}
