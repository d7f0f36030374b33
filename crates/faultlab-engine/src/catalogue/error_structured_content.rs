//! `error_structured_content`: a tool error result (`isError: true`) whose `structuredContent` does not match the
//! tool's `outputSchema`.
//!
//! **What it does on the wire.** The result of the call becomes a tool error: `isError: true`, `content` one text
//! block (`tool failed: upstream quota exhausted (faultlab error_structured_content)`), and `structuredContent`
//! an error object, `{"error": {"code": "quota_exhausted", "message": "upstream quota exhausted"}}`, the shape
//! servers use to give code an error it can read. When the tool listed an `outputSchema` (the engine remembers them
//! from `tools/list` replies) and that object happens to conform, the closest value the schema rejects is sent
//! instead (as `output_schema_violation` chooses it), so the error never matches the success schema. An error
//! reply is sent unchanged.
//!
//! **What a robust client should do.** An error result is not the tool's output: `outputSchema` describes
//! success, and a client must not validate an `isError: true` result against it. It surfaces the tool's error
//! (the text, and the structured error if it reads one) to the caller or the model, which may retry or report
//! it. A client that validates anyway replaces the tool's error with its own schema-validation error (or throws),
//! and the model never sees why the tool failed.
//!
//! **Example.** `{"type": "error_structured_content"}`
//!
//! **How it is graded.** The call's outcome is the tool's error, with its text: a validation error in its place
//! (the client validated an error result) or a success is wrong.

use super::schema::{check, output_validator, violating};
use super::{Applied, OutputSchema, Reply, rewrite_result};
use serde_json::{Value, json};

fault! {
    /// The result becomes a tool error (`isError: true`) with an error object as `structuredContent`, one the
    /// tool's `outputSchema` (if it listed one) rejects.
    pub struct ErrorStructuredContent {}
    category: Data,
    effect: Error,
    serve_tool: Some(ServeTool::everywhere("structured_output")),
    examples: [r#"{"type": "error_structured_content"}"#],
    apply: |_, reply, earlier| apply(reply, earlier.output_schema.as_ref()),
}

/// The text of the error result.
pub const ERROR_TEXT: &str = "tool failed: upstream quota exhausted (faultlab error_structured_content)";

fn error_object() -> Value {
    json!({"error": {"code": "quota_exhausted", "message": "upstream quota exhausted"}})
}

/// The error's `structuredContent`: the error object, or with a schema that accepts it, a value it rejects.
fn structured(schema: Option<&OutputSchema>) -> Value {
    let object = error_object();
    let Some(Ok((validator, root))) = schema.map(output_validator) else {
        return object;
    };
    if check(&validator, &object).is_err() {
        return object;
    }
    violating(&validator, root, &object).map_or(object, |(value, _)| value)
}

fn apply(reply: Reply<'_>, schema: Option<&OutputSchema>) -> Applied {
    let structured = structured(schema);
    Applied::from(rewrite_result(reply, |result| {
        result.clear();
        result.insert("content".into(), json!([{"type": "text", "text": ERROR_TEXT}]));
        result.insert("structuredContent".into(), structured);
        result.insert("isError".into(), Value::Bool(true));
        true
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use std::sync::Arc;

    fn run_with(json: &str, schema: Option<&OutputSchema>) -> Value {
        let applied = apply(Reply { frame: &frame(json), request: None }, schema);
        sent(&applied.actions)[0].value().unwrap()["result"].clone()
    }

    #[test]
    fn a_result_becomes_a_tool_error_with_an_error_object() {
        let result = run_with(RESULT, None);
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"], json!([{"type": "text", "text": ERROR_TEXT}]));
        assert_eq!(result["structuredContent"], error_object());
    }

    #[test]
    fn the_error_never_conforms_to_the_success_schema() {
        let strict = OutputSchema::Listed(Arc::new(json!({"type": "object", "required": ["count"]})));
        assert_eq!(run_with(RESULT, Some(&strict))["structuredContent"], error_object(), "already rejected");
        let open = OutputSchema::Listed(Arc::new(json!({"type": "object", "properties": {"error": {"type": "object"}}})));
        let structured = run_with(RESULT, Some(&open))["structuredContent"].clone();
        assert_ne!(structured, error_object());
        let (validator, _) = output_validator(&open).unwrap();
        assert!(!validator.is_valid(&structured), "{structured}");
    }

    #[test]
    fn an_error_reply_is_left_alone() {
        let error = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#;
        let applied = apply(Reply { frame: &frame(error), request: None }, None);
        assert_eq!(applied.actions, unchanged(Reply { frame: &frame(error), request: None }));
    }
}
