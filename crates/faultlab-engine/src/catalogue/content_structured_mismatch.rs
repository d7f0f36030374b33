//! `content_structured_mismatch`: the result's text and its `structuredContent` say different things.
//!
//! **What it does on the wire.** One value inside `structuredContent` is changed and `content` is left as the
//! server wrote it, so a tool that mirrors its structured output as JSON text (as MCP recommends) now has a text
//! that states the server's answer and a structure that states another. The value is the one `contradictory`
//! changes (the first number or boolean, +1 or negated, else the first string, prefixed `not `); when the tool
//! listed an `outputSchema` (the engine remembers them from `tools/list` replies) the change is the first one that
//! keeps `structuredContent` valid against it, so validation cannot notice. Unlike `contradictory`, which adds a
//! second text block, nothing is added: each of the two fields on its own looks like a good answer. A result
//! without `structuredContent` (or with nothing in it to change), an `isError: true` result, an error reply, or a
//! schema under which no change stays valid, is sent unchanged (`fault_skipped` says why).
//!
//! **What a robust client should do.** Code reads `structuredContent`, models often read `content`: a client that
//! hands both on should notice they disagree (compare the text's JSON with the structure when the text is JSON)
//! and report the inconsistency or re-query, rather than letting the model and the program act on two answers.
//!
//! **Example.** `{"type": "content_structured_mismatch"}`
//!
//! **How it is graded.** By the task's state and witness checks: acting on either value without noticing the
//! conflict fails; a re-check or an honest report of the inconsistency passes. Both fields are schema-valid, so
//! validating is not enough.

use super::contradictory::{contradict, valid_change};
use super::{Applied, OutputSchema, Reply, rewrite_result};
use serde_json::Value;

fault! {
    /// One value of `structuredContent` is changed and `content` is not, so text and structure disagree (kept
    /// valid against the tool's output schema when it has one).
    pub struct ContentStructuredMismatch {}
    category: Data,
    effect: WrongData,
    serve_tool: Some(ServeTool::everywhere("structured_output")),
    examples: [r#"{"type": "content_structured_mismatch"}"#],
    apply: |_, reply, earlier| apply(reply, earlier.output_schema.as_ref()),
}

fn apply(reply: Reply<'_>, schema: Option<&OutputSchema>) -> Applied {
    let result = reply.frame.value().and_then(|m| m.get("result")).filter(|r| r.is_object());
    let Some(result) = result else {
        return Applied::from(super::unchanged(reply));
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Applied::skipped(reply, "the result is an error (isError: true)".into());
    }
    let Some(structured) = result.get("structuredContent") else {
        return Applied::skipped(reply, "the result has no structuredContent to disagree with its content".into());
    };
    let changed = match schema {
        Some(schema) => valid_change(structured, schema),
        None => {
            let mut copy = structured.clone();
            if contradict(&mut copy) { Ok(copy) } else { Err("structuredContent has no value to change".into()) }
        }
    };
    match changed {
        Ok(copy) => Applied::from(rewrite_result(reply, |result| {
            result.insert("structuredContent".into(), copy);
            true
        })),
        Err(reason) => Applied::skipped(reply, reason),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn mirrored() -> String {
        json!({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": r#"{"count":10,"status":"in_stock"}"#}],
            "structuredContent": {"count": 10, "status": "in_stock"}}})
        .to_string()
    }

    fn run_with(reply: &str, schema: Option<&OutputSchema>) -> Applied {
        apply(Reply { frame: &frame(reply), request: None }, schema)
    }

    #[test]
    fn the_structure_changes_and_the_text_does_not() {
        let result = sent(&run_with(&mirrored(), None).actions)[0].value().unwrap()["result"].clone();
        assert_eq!(result["structuredContent"], json!({"count": 11, "status": "in_stock"}));
        assert_eq!(result["content"][0]["text"], r#"{"count":10,"status":"in_stock"}"#);
        assert_eq!(result["content"].as_array().unwrap().len(), 1, "nothing is added");
    }

    #[test]
    fn with_a_schema_the_change_stays_valid() {
        let schema = OutputSchema::Listed(Arc::new(json!({"type": "object", "properties": {
            "count": {"type": "integer", "maximum": 10}, "status": {"enum": ["in_stock", "sold_out"]}}})));
        let result = sent(&run_with(&mirrored(), Some(&schema)).actions)[0].value().unwrap()["result"].clone();
        assert_eq!(result["structuredContent"], json!({"count": 9, "status": "in_stock"}), "+1 would pass the maximum");
    }

    #[test]
    fn without_structured_content_nothing_changes() {
        let applied = run_with(RESULT, None);
        assert_eq!(applied.actions, unchanged(Reply { frame: &frame(RESULT), request: None }));
        assert!(applied.skipped.unwrap().contains("no structuredContent"));
        let constant = OutputSchema::Listed(Arc::new(json!({"const": {"count": 10, "status": "in_stock"}})));
        assert!(run_with(&mirrored(), Some(&constant)).skipped.is_some());
    }
}
