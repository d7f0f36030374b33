//! `output_schema_violation`: a successful tool result whose `structuredContent` breaks the tool's `outputSchema`.
//!
//! **What it does on the wire.** The reply to a `tools/call` of a tool that listed an `outputSchema` (the engine
//! remembers them from `tools/list` replies) gets a `structuredContent` the schema rejects, as close to the real
//! one as possible: a property the schema's `required` lists is removed, or one member's value gets another JSON
//! type (a string becomes `42`, anything else `"42"`), or `null`; failing those, the whole value becomes `[]`,
//! `"42"` or `null`. Each change is validated against the schema and the first one it rejects is sent.
//! `content` and `isError` are kept, so the text still reads as the server's answer and the envelope is valid
//! JSON-RPC. The reply is sent unchanged, with a `fault_skipped` diagnostic saying why, when no schema is known
//! for the tool (no `tools/list` seen, or the tool declared none: then nothing is violated), when the schema
//! cannot be used (too large to keep, an external `$ref`) or accepts every change, and for an error reply or an
//! `isError: true` result (see `error_structured_content`).
//!
//! **What a robust client should do.** MCP says servers MUST return `structuredContent` that conforms and clients
//! SHOULD validate it. A strict client rejects the result with a clear error naming the violation (the official
//! SDKs answer with an error the caller sees, e.g. -32602 or a validation error) instead of handing the data on
//! as if it were the declared shape; an agent should not act on fields the schema promised and the value lacks.
//!
//! **Example.** `{"type": "output_schema_violation"}`
//!
//! **How it is graded.** The call's outcome is an error (the result was rejected), not success with data of the
//! wrong shape. A skipped fault (see the `fault_skipped` event) changed nothing, so the run measures a plain reply.

use super::schema::{output_validator, violating};
use super::{Applied, OutputSchema, Reply, rewrite_result, unchanged};
use serde_json::Value;

fault! {
    /// The result's `structuredContent` is replaced by a close value the tool's `outputSchema` rejects (only when
    /// the tool listed one; else the reply is sent unchanged).
    pub struct OutputSchemaViolation {}
    category: Data,
    effect: Invalid,
    serve_tool: Some(ServeTool::everywhere("structured_output")),
    examples: [
        r#"{"type": "output_schema_violation"}"#,
    ],
    apply: |_, reply, earlier| apply(reply, earlier.output_schema.as_ref()),
}

fn apply(reply: Reply<'_>, schema: Option<&OutputSchema>) -> Applied {
    let Some(result) = reply.frame.value().and_then(|m| m.get("result")).filter(|r| r.is_object()) else {
        return Applied::from(unchanged(reply));
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Applied::skipped(reply, "the result is an error (isError: true), which no outputSchema governs".into());
    }
    let Some(schema) = schema else {
        let reason = "no outputSchema is known for the tool (none listed, or no tools/list seen), so none can be violated";
        return Applied::skipped(reply, reason.into());
    };
    let (validator, root) = match output_validator(schema) {
        Ok(compiled) => compiled,
        Err(reason) => return Applied::skipped(reply, reason),
    };
    let structured = result.get("structuredContent").cloned().unwrap_or_else(|| Value::Object(Default::default()));
    let Some((violation, _)) = violating(&validator, root, &structured) else {
        return Applied::skipped(reply, "the tool's outputSchema accepts every change tried".into());
    };
    Applied::from(rewrite_result(reply, |result| {
        result.insert("structuredContent".into(), violation);
        true
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn listed(schema: Value) -> OutputSchema {
        OutputSchema::Listed(Arc::new(schema))
    }

    fn schema() -> OutputSchema {
        listed(json!({
            "type": "object",
            "required": ["count"],
            "properties": {"count": {"type": "integer"}, "note": {"type": "string"}}
        }))
    }

    fn reply(result: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 7, "result": result}).to_string()
    }

    fn run_with(json: &str, schema: Option<&OutputSchema>) -> Applied {
        apply(Reply { frame: &frame(json), request: None }, schema)
    }

    #[test]
    fn a_required_property_goes_first_and_the_text_is_kept() {
        let text = r#"{"count":3,"note":"ok"}"#;
        let good = reply(json!({"content": [{"type": "text", "text": text}], "structuredContent": {"count": 3, "note": "ok"}}));
        let applied = run_with(&good, Some(&schema()));
        assert_eq!(applied.skipped, None);
        let result = sent(&applied.actions)[0].value().unwrap()["result"].clone();
        assert_eq!(result["structuredContent"], json!({"note": "ok"}), "the required count is gone");
        assert_eq!(result["content"][0]["text"], text, "the text still says what the server said");
        let (validator, _) = output_validator(&schema()).unwrap();
        assert!(!validator.is_valid(&result["structuredContent"]));
    }

    #[test]
    fn without_required_a_member_changes_type_and_without_members_the_value_does() {
        let loose = listed(json!({"type": "object", "properties": {"count": {"type": "integer"}}}));
        let applied = run_with(&reply(json!({"content": [], "structuredContent": {"count": 3}})), Some(&loose));
        assert_eq!(sent(&applied.actions)[0].value().unwrap()["result"]["structuredContent"], json!({"count": "42"}));
        let object = listed(json!({"type": "object"}));
        let applied = run_with(&reply(json!({"content": []})), Some(&object));
        assert_eq!(sent(&applied.actions)[0].value().unwrap()["result"]["structuredContent"], json!([]));
    }

    #[test]
    fn nothing_to_violate_sends_the_reply_unchanged_and_says_why() {
        let good = reply(json!({"content": [], "structuredContent": {"count": 3}}));
        let skipped = |applied: Applied| {
            assert_eq!(applied.actions, unchanged(Reply { frame: &frame(&good), request: None }));
            applied.skipped.unwrap()
        };
        assert!(skipped(run_with(&good, None)).contains("no outputSchema"));
        assert!(skipped(run_with(&good, Some(&listed(json!({}))))).contains("accepts every change"));
        assert!(skipped(run_with(&good, Some(&OutputSchema::TooLarge))).contains("too large"));
        let error = reply(json!({"content": [], "isError": true, "structuredContent": {"count": 3}}));
        let applied = run_with(&error, Some(&schema()));
        assert!(applied.skipped.unwrap().contains("isError"));
        let rpc_error = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#;
        assert_eq!(run_with(rpc_error, Some(&schema())).actions, unchanged(Reply { frame: &frame(rpc_error), request: None }));
    }
}
