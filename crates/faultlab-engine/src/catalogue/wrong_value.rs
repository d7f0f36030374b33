//! `wrong_value`: one value in the result is not what the server computed.
//!
//! **What it does on the wire.** `value` is written at `pointer`, a JSON pointer inside the reply's `result`
//! (`/content/0/text`, `/structuredContent/total`, `/isError`): an existing member or array element is replaced,
//! a new member is added to an existing object. `jsonrpc` and `id` cannot be reached, so the reply stays valid
//! JSON-RPC; whether it stays a valid `CallToolResult` depends on `value` (a string for `/content/0/text` keeps it
//! valid). If the pointer's parent does not exist, or the reply is an error, it is sent unchanged.
//!
//! When the pointer is inside `/structuredContent` and the tool listed an `outputSchema` (the engine remembers
//! them from `tools/list` replies), the changed `structuredContent` must still validate against it: if `value`
//! would make it invalid (or the schema cannot be used: too large to keep, an external `$ref`), the reply is sent
//! unchanged and a `fault_skipped` diagnostic says why. A valid change also keeps the text in step when the tool
//! mirrors `structuredContent` as JSON text, as tools with structured output do: if the first content block's
//! text parses as JSON equal to the old `structuredContent`, it becomes the new one's JSON (pretty-printed if the
//! old text spanned lines), so text and structure agree on the wrong value. Without a schema, or for a pointer
//! outside `/structuredContent`, nothing is checked and no text is touched.
//!
//! **What a robust client should do.** Nothing on the wire is wrong, so the client cannot reject it by shape (and
//! with a schema, not by validation either). A careful agent cross-checks values that matter (against a second
//! source, or what it knows of the task) before acting on them.
//!
//! **Example.** `{"type": "wrong_value", "pointer": "/structuredContent/balance", "value": -1}`
//!
//! **How it is graded.** By the task's state and witness checks: acting on the wrong value is visible in the end
//! state; a client that verified it, or reported the inconsistency, passes. A skipped fault (see the
//! `fault_skipped` event) changed nothing, so the run measures a plain reply.

use super::schema::{check, output_validator};
use super::{Applied, OutputSchema, Reply, WireAction, rewrite, split_pointer, unchanged};
use bytes::Bytes;
use serde_json::Value;

fault! {
    /// `value` is written at `pointer`, a JSON pointer inside the reply's `result`. Inside `structuredContent`,
    /// only if the result stays valid against the tool's output schema (else the reply is sent unchanged).
    pub struct WrongValue {
        pub pointer: String,
        pub value: serde_json::Value,
    }
    category: Data,
    effect: WrongData,
    serve_tool: None,
    examples: [r#"{"type": "wrong_value", "pointer": "/content/0/text", "value": "0 apples"}"#],
    validate: |fault| super::check_pointer(&fault.pointer),
    apply: |fault, reply, earlier| apply(reply, &fault.pointer, &fault.value, earlier.output_schema.as_ref()),
}

fn apply(reply: Reply<'_>, pointer: &str, value: &Value, schema: Option<&OutputSchema>) -> Applied {
    let inside_structured = pointer == "/structuredContent" || pointer.starts_with("/structuredContent/");
    match schema {
        Some(schema) if inside_structured => apply_checked(reply, pointer, value, schema),
        _ => {
            Applied::from(rewrite(reply, |message| message.get_mut("result").is_some_and(|r| write(r, pointer, value))))
        }
    }
}

/// Writes `value` at `pointer` inside `result`; false when the pointer's parent does not exist.
fn write(result: &mut Value, pointer: &str, value: &Value) -> bool {
    let Some((parent, key)) = split_pointer(pointer) else {
        return false;
    };
    match result.pointer_mut(parent) {
        Some(Value::Object(members)) => {
            members.insert(key, value.clone());
            true
        }
        Some(Value::Array(items)) => match key.parse::<usize>().ok().and_then(|index| items.get_mut(index)) {
            Some(item) => {
                *item = value.clone();
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// The write into `structuredContent`, checked against the tool's output schema and mirrored into the text.
fn apply_checked(reply: Reply<'_>, pointer: &str, value: &Value, schema: &OutputSchema) -> Applied {
    let Some(mut message) = reply.frame.value().cloned() else {
        return Applied::from(unchanged(reply));
    };
    let Some(result) = message.get_mut("result").filter(|r| r.is_object()) else {
        return Applied::from(unchanged(reply));
    };
    let old = result.get("structuredContent").cloned();
    if !write(result, pointer, value) {
        return Applied::from(unchanged(reply));
    }
    let validator = match output_validator(schema) {
        Ok((validator, _)) => validator,
        Err(reason) => return Applied::skipped(reply, reason),
    };
    let new = result.get("structuredContent").cloned().unwrap_or(Value::Null);
    if let Err(error) = check(&validator, &new) {
        let what = format!("writing {value} at {pointer}");
        let reason = format!("{what} would make structuredContent invalid against the tool's outputSchema: {error}");
        return Applied::skipped(reply, reason);
    }
    if let Some(old) = old {
        mirror(result, &old, &new);
    }
    match serde_json::to_vec(&message) {
        Ok(bytes) => Applied::from(vec![WireAction::Send(Bytes::from(bytes))]),
        Err(_) => Applied::from(unchanged(reply)),
    }
}

/// If the first content block's text is the JSON of `old`, makes it the JSON of `new`, in the same layout.
fn mirror(result: &mut Value, old: &Value, new: &Value) {
    let Some(text) = result.pointer_mut("/content/0").filter(|b| b["type"] == "text").and_then(|b| b.get_mut("text"))
    else {
        return;
    };
    let Some(current) = text.as_str() else { return };
    if serde_json::from_str::<Value>(current).ok().as_ref() != Some(old) {
        return;
    }
    let json = if current.contains('\n') { serde_json::to_string_pretty(new) } else { serde_json::to_string(new) };
    if let Ok(json) = json {
        *text = Value::String(json);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;
    use serde_json::json;

    fn run(json: &str, pointer: &str, value: Value) -> Vec<WireAction> {
        let applied = apply(Reply { frame: &frame(json), request: None }, pointer, &value, None);
        assert_eq!(applied.skipped, None, "without a schema nothing is skipped");
        applied.actions
    }

    fn schema() -> OutputSchema {
        OutputSchema::Listed(std::sync::Arc::new(json!({
            "type": "object",
            "required": ["total", "state"],
            "properties": {
                "total": {"type": "integer", "minimum": 0, "maximum": 100},
                "state": {"enum": ["open", "closed"]},
                "id": {"type": "string", "pattern": "^[0-9]+$"},
                "version": {"const": 1}
            }
        })))
    }

    /// A tool reply that mirrors its `structuredContent` as JSON text, as tools with structured output do.
    fn mirrored(text: &str) -> String {
        json!({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"total": 3, "state": "open", "id": "12", "version": 1}}})
        .to_string()
    }

    const COMPACT: &str = r#"{"total":3,"state":"open","id":"12","version":1}"#;

    fn run_checked(reply: &str, pointer: &str, value: Value) -> Applied {
        apply(Reply { frame: &frame(reply), request: None }, pointer, &value, Some(&schema()))
    }

    #[test]
    fn a_valid_value_is_written_and_the_mirrored_text_follows() {
        let applied = run_checked(&mirrored(COMPACT), "/structuredContent/total", json!(99));
        assert_eq!(applied.skipped, None);
        let result = sent(&applied.actions)[0].value().unwrap()["result"].clone();
        assert_eq!(result["structuredContent"]["total"], 99);
        assert_eq!(result["content"][0]["text"], r#"{"total":99,"state":"open","id":"12","version":1}"#);

        let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(COMPACT).unwrap()).unwrap();
        let applied = run_checked(&mirrored(&pretty), "/structuredContent/state", json!("closed"));
        let text = sent(&applied.actions)[0].value().unwrap()["result"]["content"][0]["text"].clone();
        assert_eq!(text, pretty.replace("open", "closed"), "a pretty-printed mirror stays pretty");

        let applied = run_checked(&mirrored("3 open"), "/structuredContent/total", json!(4));
        let text = sent(&applied.actions)[0].value().unwrap()["result"]["content"][0]["text"].clone();
        assert_eq!(text, "3 open", "a text that is not the JSON of structuredContent is left alone");
    }

    #[test]
    fn a_value_the_schema_forbids_is_not_sent() {
        let reply = mirrored(COMPACT);
        for (pointer, value, says) in [
            ("/structuredContent/total", json!(101), "maximum"),
            ("/structuredContent/total", json!("3"), "integer"),
            ("/structuredContent/state", json!("lost"), "open"),
            ("/structuredContent/version", json!(2), "1"),
            ("/structuredContent/id", json!("x12"), "^[0-9]+$"),
            ("/structuredContent", json!({"total": 1}), "state"),
        ] {
            let applied = run_checked(&reply, pointer, value);
            assert_eq!(applied.actions, vec![WireAction::Send(Bytes::from(reply.clone()))], "{pointer}");
            let reason = applied.skipped.unwrap();
            assert!(reason.contains(pointer) && reason.contains(says), "{reason}");
        }
    }

    #[test]
    fn outside_structured_content_or_without_a_schema_nothing_is_checked() {
        let reply = mirrored(COMPACT);
        let applied = run_checked(&reply, "/content/0/text", json!(5));
        assert_eq!(applied.skipped, None);
        assert_eq!(sent(&applied.actions)[0].value().unwrap()["result"]["content"][0]["text"], 5);
        let result = sent(&run(&reply, "/structuredContent/total", json!(-1)))[0].value().unwrap()["result"].clone();
        assert_eq!(result["structuredContent"]["total"], -1);
        assert_eq!(result["content"][0]["text"], COMPACT, "without a schema the text is not touched");
        let missing = run_checked(RESULT, "/structuredContent/total", json!(1));
        assert_eq!((missing.actions, missing.skipped), (vec![WireAction::Send(Bytes::from(RESULT))], None));
    }

    #[test]
    fn replaces_a_text_inside_the_result_only() {
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"tampered"}]}}"#;
        assert_eq!(run(RESULT, "/content/0/text", json!("tampered")), vec![WireAction::Send(Bytes::from(expected))]);
        let id_untouched = sent(&run(RESULT, "/id", json!(99)))[0].value().unwrap().clone();
        assert_eq!((id_untouched["id"].clone(), id_untouched["result"]["id"].clone()), (json!(7), json!(99)));
    }

    #[test]
    fn adds_a_member_and_leaves_unreachable_paths_alone() {
        let added = sent(&run(RESULT, "/isError", json!(true)))[0].value().unwrap().clone();
        assert_eq!(added["result"]["isError"], true);
        assert_eq!(run(RESULT, "/content/5", json!(1)), vec![WireAction::Send(Bytes::from(RESULT))]);
        assert_eq!(run(RESULT, "/nope/x", json!(1)), vec![WireAction::Send(Bytes::from(RESULT))]);
    }
}
