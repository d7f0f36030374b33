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
//! **What a robust client should do.** Notice the conflict (structured vs text, two texts) and neither pick one
//! silently nor merge them: re-query, or report the inconsistency.
//!
//! **Example.** `{"type": "contradictory"}`
//!
//! **How it is graded.** A run that acts on either value without noticing the conflict fails; a re-check or an
//! honest report of the inconsistency passes.

use super::{Reply, WireAction, rewrite};
use serde_json::{Number, Value, json};

pub(super) fn apply(reply: Reply<'_>) -> Vec<WireAction> {
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
        let content = result.entry("content").or_insert_with(|| json!([]));
        let Value::Array(blocks) = content else {
            return false;
        };
        blocks.push(json!({"type": "text", "text": opposite}));
        true
    })
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
fn contradict(value: &mut Value) -> bool {
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

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;

    fn run(json: &str) -> Vec<WireAction> {
        apply(Reply { frame: &frame(json), request: None })
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
