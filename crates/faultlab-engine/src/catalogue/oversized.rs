//! `oversized`: the reply is padded to a large size.
//!
//! **What it does on the wire.** A text content item of `bytes` characters (`x` repeated) is appended to the
//! result's `content` (or set as the error's `data`), so the frame is at least that large and still valid.
//!
//! **What a robust client should do.** Enforce its own size limit: reject a reply over it with a clear error and
//! keep the connection, or accept it if within the limit. Never run out of memory or hang.
//!
//! **Example.** `{"type": "oversized", "bytes": 20000000}`
//!
//! **How it is graded.** Below the client's limit: success with the full content. Above: a clean error.

use super::{Reply, WireAction, edit, unchanged};
use serde_json::{Value, json};

pub(super) fn apply(reply: Reply<'_>, bytes: usize) -> Vec<WireAction> {
    let padding = json!({"type": "text", "text": "x".repeat(bytes)});
    let changed = edit(reply, |obj| {
        if let Some(Value::Array(content)) = obj.get_mut("result").and_then(|r| r.get_mut("content")) {
            content.push(padding);
        } else if let Some(Value::Object(error)) = obj.get_mut("error") {
            error.insert("data".into(), padding);
        } else if let Some(Value::Object(result)) = obj.get_mut("result") {
            result.insert("content".into(), Value::Array(vec![padding]));
        }
    });
    match changed {
        Some(bytes) => vec![WireAction::Send(bytes)],
        None => unchanged(reply),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn grows_by_at_least_the_padding_and_stays_valid() {
        let reply = frame(RESULT);
        let out = sent(&apply(Reply { frame: &reply, request: None }, 100_000));
        assert!(out[0].bytes().len() >= RESULT.len() + 100_000);
        let content = out[0].value().unwrap()["result"]["content"].as_array().unwrap().clone();
        assert_eq!(content[0]["text"], "ok");
        assert_eq!(content[1]["text"].as_str().unwrap().len(), 100_000);
    }
}
