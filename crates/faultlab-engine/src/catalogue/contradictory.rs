//! `contradictory`: the result says two different things.
//!
//! **What it does on the wire.** One text block is appended to the result's `content`; everything already there
//! is kept, so the reply stays valid. Its text contradicts the result:
//! - With `structuredContent`: the JSON of a copy of `structuredContent` with one value changed (tools that return
//!   structured content also send its JSON as text, so the two now disagree).
//! - Otherwise, from the first text block's text: if that text is JSON, the same JSON with one value changed;
//!   if not, the text with its first decimal digit advanced by one (9 becomes 0); a text without digits gets
//!   the prefix `It is not the case that: `.
//!
//! The changed value is the first number or boolean in document order (a number gets +1, or -1 at the integer
//! maximum; a float that +1 cannot change is negated; a boolean is negated), else the first string (prefixed
//! `not `). So `{"status":"delayed","delayMs":5}` is contradicted by `{"status":"delayed","delayMs":6}`. A reply
//! with nothing to contradict (no text, an error) is sent unchanged.
//!
//! When the tool listed an `outputSchema` (the engine remembers them from `tools/list` replies) and the reply has
//! `structuredContent`, the changed copy must stay valid against that schema, so that the contradiction reads as
//! a plausible answer rather than a malformed one. The change is then the first of these candidates whose copy
//! validates: every number and boolean in document order, then every string in document order; for each, the
//! change above first, then (a number) -1, then the other members of an `enum` the schema puts there. A string
//! the schema constrains with `pattern`, `format` or `maxLength` is not prefixed (it would read as garbage, and
//! `format` is not asserted by validation), only swapped for another `enum` member. At most 128 candidates are
//! validated, among the first 1024 numbers and booleans and the first 1024 strings. If none is valid (a schema of
//! `const`s, a result that is already invalid, a schema too large to keep or with an external `$ref`), the reply
//! is sent unchanged and a `fault_skipped` diagnostic says why.
//!
//! **What a robust client should do.** Notice the conflict (structured vs text, two texts) and neither pick one
//! silently nor merge them: re-query, or report the inconsistency.
//!
//! **Example.** `{"type": "contradictory"}`
//!
//! **How it is graded.** A run that acts on either value without noticing the conflict fails; a re-check or an
//! honest report of the inconsistency passes. Both versions pass schema validation when the tool has a schema, so
//! validating is not enough to notice. A skipped fault (see the `fault_skipped` event) changed nothing, so the run
//! measures a plain reply.

use super::schema::{Step, at_mut, check, output_validator, schemas_at};
use super::{Applied, OutputSchema, Reply, WireAction, rewrite};
use serde_json::{Number, Value, json};

fault! {
    /// The result plus one more text block that states something else (a changed value, chosen to stay valid
    /// against the tool's output schema when it has one).
    pub struct Contradictory {}
    category: Data,
    effect: WrongData,
    serve_tool: None,
    examples: [r#"{"type": "contradictory"}"#],
    apply: |_, reply, earlier| apply(reply, earlier.output_schema.as_ref()),
}

/// Most candidate changes validated against an output schema: each validation walks the whole result, so a large
/// result with a strict schema costs at most this many walks.
const MAX_CANDIDATES: usize = 128;

/// Most values of `structuredContent` considered for a change (numbers and booleans, and strings, each).
const MAX_VALUES: usize = 1024;

fn apply(reply: Reply<'_>, schema: Option<&OutputSchema>) -> Applied {
    let structured = reply.frame.value().and_then(|m| m.pointer("/result/structuredContent"));
    match (schema, structured) {
        (Some(schema), Some(structured)) => apply_checked(reply, structured, schema),
        _ => Applied::from(apply_unchecked(reply)),
    }
}

/// The rule without a schema: the first value changed, nothing checked.
fn apply_unchecked(reply: Reply<'_>) -> Vec<WireAction> {
    rewrite(reply, |message| {
        let Some(Value::Object(result)) = message.get_mut("result") else {
            return false;
        };
        let opposite = match result.get("structuredContent") {
            Some(structured) => {
                let mut copy = structured.clone();
                if !contradict(&mut copy) {
                    return false;
                }
                copy.to_string()
            }
            None => {
                let first_text = result
                    .get("content")
                    .and_then(Value::as_array)
                    .and_then(|blocks| blocks.iter().find(|b| b["type"] == "text"))
                    .and_then(|block| block["text"].as_str());
                match first_text {
                    Some(text) => contradict_text(text),
                    None => return false,
                }
            }
        };
        append(result, opposite)
    })
}

/// Appends a text block stating `opposite`; false when `content` is there but not an array.
fn append(result: &mut serde_json::Map<String, Value>, opposite: String) -> bool {
    let content = result.entry("content").or_insert_with(|| json!([]));
    let Value::Array(blocks) = content else {
        return false;
    };
    blocks.push(json!({"type": "text", "text": opposite}));
    true
}

/// The rule with a schema: the first candidate change whose copy of `structuredContent` validates.
fn apply_checked(reply: Reply<'_>, structured: &Value, schema: &OutputSchema) -> Applied {
    match valid_change(structured, schema) {
        Ok(copy) => Applied::from(send_with(reply, copy.to_string())),
        Err(reason) => Applied::skipped(reply, reason),
    }
}

/// A copy of `structuredContent` with one value changed that still validates against `schema` (the candidates of
/// the module docs, in order), or why there is none. `content_structured_mismatch` puts the same change in
/// `structuredContent` itself.
pub(super) fn valid_change(structured: &Value, schema: &OutputSchema) -> Result<Value, String> {
    let (validator, root) = output_validator(schema)?;
    // A result that is invalid to begin with cannot be kept valid; saying so is more useful than "no candidate".
    if let Err(error) = check(&validator, structured) {
        return Err(format!("structuredContent is already invalid against the tool's outputSchema: {error}"));
    }
    let mut copy = structured.clone();
    let (mut scalars, mut strings) = (Vec::new(), Vec::new());
    leaves(&copy, &mut Vec::new(), &mut scalars, &mut strings);
    let mut tried = 0;
    for path in scalars.iter().chain(&strings) {
        let Some(original) = at_mut(&mut copy, path).cloned() else { continue };
        for candidate in candidates(&original, &schemas_at(root, path)) {
            if tried == MAX_CANDIDATES {
                break;
            }
            tried += 1;
            if let Some(slot) = at_mut(&mut copy, path) {
                *slot = candidate;
            }
            if validator.is_valid(&copy) {
                return Ok(copy);
            }
        }
        if let Some(slot) = at_mut(&mut copy, path) {
            *slot = original;
        }
        if tried == MAX_CANDIDATES {
            break;
        }
    }
    Err(if tried == 0 {
        "structuredContent has no value the fault may change under the tool's outputSchema".to_owned()
    } else {
        format!("none of {tried} changes to structuredContent is valid against the tool's outputSchema")
    })
}

/// The reply with a text block stating `opposite` appended.
fn send_with(reply: Reply<'_>, opposite: String) -> Vec<WireAction> {
    rewrite(reply, |message| match message.get_mut("result") {
        Some(Value::Object(result)) => append(result, opposite),
        _ => false,
    })
}

/// The paths of the numbers and booleans (`scalars`) and of the strings, in document order (the order the rule
/// without a schema walks), at most [`MAX_VALUES`] of each.
fn leaves(value: &Value, path: &mut Vec<Step>, scalars: &mut Vec<Vec<Step>>, strings: &mut Vec<Vec<Step>>) {
    match value {
        Value::Bool(_) | Value::Number(_) if scalars.len() < MAX_VALUES => scalars.push(path.clone()),
        Value::String(_) if strings.len() < MAX_VALUES => strings.push(path.clone()),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(Step::Index(index));
                leaves(item, path, scalars, strings);
                path.pop();
            }
        }
        Value::Object(members) => {
            for (key, member) in members {
                path.push(Step::Key(key.clone()));
                leaves(member, path, scalars, strings);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The changes to try for `value`, in order (see the module docs), given the subschemas that apply to it.
fn candidates(value: &Value, schemas: &[&Value]) -> Vec<Value> {
    let mut out = match value {
        Value::Bool(b) => vec![Value::Bool(!b)],
        Value::Number(n) => vec![Value::Number(changed(n)), Value::Number(decreased(n))],
        Value::String(s) => {
            let constrained =
                schemas.iter().any(|s| ["pattern", "format", "maxLength"].iter().any(|k| s.get(k).is_some()));
            if constrained { Vec::new() } else { vec![Value::String(format!("not {s}"))] }
        }
        _ => Vec::new(),
    };
    let members = schemas.iter().filter_map(|s| s.get("enum").and_then(Value::as_array)).flatten();
    out.extend(members.cloned());
    // Each change must differ from the value, and trying one twice is wasted work.
    let mut unique: Vec<Value> = Vec::with_capacity(out.len());
    for candidate in out {
        if candidate != *value && !unique.contains(&candidate) {
            unique.push(candidate);
        }
    }
    unique
}

/// The text with one value changed (see the module docs).
fn contradict_text(text: &str) -> String {
    if let Ok(mut value) = serde_json::from_str::<Value>(text)
        && contradict(&mut value)
    {
        return value.to_string();
    }
    match text.char_indices().find(|(_, c)| c.is_ascii_digit()) {
        Some((at, digit)) => {
            let next = char::from(b'0' + (digit as u8 - b'0' + 1) % 10);
            format!("{}{next}{}", &text[..at], &text[at + 1..])
        }
        None => format!("It is not the case that: {text}"),
    }
}

/// Changes the first number or boolean in document order, else the first string; false if there is neither.
pub(super) fn contradict(value: &mut Value) -> bool {
    flip_scalar(value) || negate_string(value)
}

fn flip_scalar(value: &mut Value) -> bool {
    match value {
        Value::Bool(b) => {
            *b = !*b;
            true
        }
        Value::Number(n) => {
            *n = changed(n);
            true
        }
        // `any` stops at the first change, so only one value differs.
        Value::Array(items) => items.iter_mut().any(flip_scalar),
        Value::Object(members) => members.values_mut().any(flip_scalar),
        _ => false,
    }
}

fn negate_string(value: &mut Value) -> bool {
    match value {
        Value::String(s) => {
            s.insert_str(0, "not ");
            true
        }
        Value::Array(items) => items.iter_mut().any(negate_string),
        Value::Object(members) => members.values_mut().any(negate_string),
        _ => false,
    }
}

/// A number that differs from `n`: +1, or -1 where +1 would overflow; a float that +1 cannot change (beyond 2^53)
/// is negated (JSON numbers are finite, so both stay finite).
fn changed(n: &Number) -> Number {
    if let Some(i) = n.as_i64() {
        return i.checked_add(1).unwrap_or(i - 1).into();
    }
    if let Some(u) = n.as_u64() {
        return (u - 1).into();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let other = if f + 1.0 != f { f + 1.0 } else { -f };
    Number::from_f64(other).unwrap_or_else(|| 0.into())
}

/// The other direction, for a schema whose `maximum` rules out +1: -1, or +1 where -1 would overflow; a float
/// that -1 cannot change is negated.
fn decreased(n: &Number) -> Number {
    if let Some(i) = n.as_i64() {
        return i.checked_sub(1).unwrap_or(i + 1).into();
    }
    if let Some(u) = n.as_u64() {
        return (u - 1).into();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let other = if f - 1.0 != f { f - 1.0 } else { -f };
    Number::from_f64(other).unwrap_or_else(|| 0.into())
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;

    fn run(json: &str) -> Vec<WireAction> {
        let applied = apply(Reply { frame: &frame(json), request: None }, None);
        assert_eq!(applied.skipped, None, "without a schema nothing is skipped");
        applied.actions
    }

    fn listed(schema: Value) -> OutputSchema {
        OutputSchema::Listed(std::sync::Arc::new(schema))
    }

    /// A tool reply whose `structuredContent` is `structured`, mirrored as JSON text.
    fn reply_with(structured: &Value) -> String {
        let text = structured.to_string();
        json!({"jsonrpc": "2.0", "id": 7,
            "result": {"content": [{"type": "text", "text": text}], "structuredContent": structured}})
        .to_string()
    }

    /// Contradicts a reply whose `structuredContent` is `structured`, under `schema`.
    fn run_checked(structured: Value, schema: &OutputSchema) -> Applied {
        apply(Reply { frame: &frame(&reply_with(&structured)), request: None }, Some(schema))
    }

    /// The appended text of a contradiction that applied, parsed; also checks that nothing else changed.
    fn contradiction(applied: &Applied, structured: &Value) -> Value {
        assert_eq!(applied.skipped, None);
        let message = sent(&applied.actions)[0].value().unwrap().clone();
        assert_eq!(&message["result"]["structuredContent"], structured, "structuredContent itself is kept");
        assert_eq!(message["result"]["content"][0]["text"], structured.to_string(), "so is its text");
        serde_json::from_str(message["result"]["content"][1]["text"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn a_maximum_turns_plus_one_into_minus_one() {
        let schema = listed(json!({"type": "object", "required": ["n"],
            "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 5}}}));
        let structured = json!({"n": 5});
        assert_eq!(contradiction(&run_checked(structured.clone(), &schema), &structured), json!({"n": 4}));
        let structured = json!({"n": 2});
        assert_eq!(contradiction(&run_checked(structured.clone(), &schema), &structured), json!({"n": 3}), "+1 first");
    }

    #[test]
    fn an_enum_member_is_swapped_for_another() {
        let schema = listed(json!({"type": "object", "required": ["status", "code"], "properties": {
            "status": {"enum": ["ok", "late", "failed"]},
            "code": {"type": "integer", "enum": [200, 404]}}}));
        let structured = json!({"status": "late", "code": 200});
        let other = contradiction(&run_checked(structured.clone(), &schema), &structured);
        assert_eq!(other, json!({"status": "late", "code": 404}), "numbers first: 201 and 199 are not members");
        let schema = listed(json!({"properties": {"status": {"$ref": "#/$defs/status"}},
            "$defs": {"status": {"allOf": [{"enum": ["ok", "late"]}]}}}));
        let structured = json!({"status": "ok"});
        let other = contradiction(&run_checked(structured.clone(), &schema), &structured);
        assert_eq!(other, json!({"status": "late"}), "found through $ref and allOf");
    }

    #[test]
    fn a_const_is_passed_over_for_the_next_value() {
        let schema = listed(json!({"type": "object", "required": ["version", "healthy", "count"], "properties": {
            "version": {"const": 2}, "healthy": {"const": true}, "count": {"type": "integer"}}}));
        let structured = json!({"version": 2, "healthy": true, "count": 9});
        let other = contradiction(&run_checked(structured.clone(), &schema), &structured);
        assert_eq!(other, json!({"version": 2, "healthy": true, "count": 10}));
    }

    #[test]
    fn strings_with_a_pattern_format_or_max_length_are_not_prefixed() {
        // `not abc` would match this pattern, and `format` is not asserted: the rule, not validation, skips them.
        let schema = listed(json!({"type": "object", "properties": {
            "id": {"type": "string", "pattern": "^[a-z ]+$"},
            "day": {"type": "string", "format": "date"},
            "code": {"type": "string", "maxLength": 40},
            "name": {"type": "string"}}}));
        let structured = json!({"id": "abc", "day": "2026-01-02", "code": "x", "name": "box"});
        let other = contradiction(&run_checked(structured.clone(), &schema), &structured);
        assert_eq!(other, json!({"id": "abc", "day": "2026-01-02", "code": "x", "name": "not box"}));
        let strict = listed(json!({"properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}));
        let skipped = run_checked(json!({"id": "abc"}), &strict);
        assert!(skipped.skipped.unwrap().contains("no value"));
    }

    #[test]
    fn arrays_follow_items_and_prefix_items() {
        let schema = listed(json!({"properties": {"pair": {"type": "array",
            "prefixItems": [{"const": 1}], "items": {"type": "integer", "maximum": 3}}}}));
        let structured = json!({"pair": [1, 3]});
        assert_eq!(contradiction(&run_checked(structured.clone(), &schema), &structured), json!({"pair": [1, 2]}));
    }

    #[test]
    fn when_no_change_is_valid_the_reply_goes_unchanged_with_a_reason() {
        let schema = listed(json!({"properties": {"a": {"const": 1}, "b": {"const": "x"}}}));
        let structured = json!({"a": 1, "b": "x"});
        let applied = run_checked(structured.clone(), &schema);
        assert_eq!(applied.actions, vec![WireAction::Send(Bytes::from(reply_with(&structured)))]);
        assert!(applied.skipped.unwrap().contains("none of 3 changes"), "+1, -1 and `not x` were tried");

        let invalid = run_checked(json!({"a": 2}), &schema);
        assert!(invalid.skipped.unwrap().contains("already invalid"));
        let remote = listed(json!({"$ref": "https://example.invalid/schema.json"}));
        assert!(run_checked(json!({"a": 1}), &remote).skipped.unwrap().contains("cannot be used"));
        assert!(run_checked(json!({"a": 1}), &OutputSchema::TooLarge).skipped.unwrap().contains("too large"));
    }

    #[test]
    fn without_structured_content_a_schema_changes_nothing() {
        let schema = listed(json!({"properties": {"n": {"const": 1}}}));
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"3 files"}]}}"#;
        let applied = apply(Reply { frame: &frame(reply), request: None }, Some(&schema));
        assert_eq!(applied.skipped, None);
        assert_eq!(sent(&applied.actions)[0].value().unwrap()["result"]["content"][1]["text"], "4 files");
    }

    #[test]
    fn a_json_text_gets_a_copy_with_the_first_number_changed() {
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"status\":\"delayed\",\"delayMs\":5}"}],"isError":false}}"#;
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"status\":\"delayed\",\"delayMs\":5}"},{"type":"text","text":"{\"status\":\"delayed\",\"delayMs\":6}"}],"isError":false}}"#;
        assert_eq!(run(reply), vec![WireAction::Send(Bytes::from(expected))]);
    }

    #[test]
    fn structured_content_is_contradicted_by_its_text_copy() {
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"ok":true,"n":1}}}"#;
        let value = sent(&run(reply))[0].value().unwrap().clone();
        assert_eq!(value["result"]["structuredContent"], json!({"ok": true, "n": 1}), "kept as it was");
        assert_eq!(value["result"]["content"][0]["text"], r#"{"ok":false,"n":1}"#);
    }

    #[test]
    fn plain_texts_strings_and_edge_numbers() {
        assert_eq!(contradict_text("3 files written"), "4 files written");
        assert_eq!(contradict_text("v9"), "v0");
        assert_eq!(contradict_text("done"), "It is not the case that: done");
        assert_eq!(contradict_text(r#"{"status":"ok"}"#), r#"{"status":"not ok"}"#);
        assert_eq!(contradict_text(&i64::MAX.to_string()), (i64::MAX - 1).to_string());
        assert_eq!(contradict_text(&u64::MAX.to_string()), (u64::MAX - 1).to_string());
        assert_eq!(contradict_text("1e300"), "-1e+300");
        assert_eq!(contradict_text("0.5"), "1.5");
        assert_eq!(decreased(&i64::MIN.into()), Number::from(i64::MIN + 1));
        assert_eq!(decreased(&u64::MAX.into()), Number::from(u64::MAX - 1));
        assert_eq!(decreased(&Number::from_f64(0.5).unwrap()), Number::from_f64(-0.5).unwrap());
    }

    #[test]
    fn nothing_to_contradict_passes_unchanged() {
        for reply in [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#,
        ] {
            assert_eq!(run(reply), vec![WireAction::Send(Bytes::from(reply))]);
        }
    }
}
