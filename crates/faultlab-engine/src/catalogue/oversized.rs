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

use super::{MAX_OVERSIZED_BYTES, Reply, WireAction, rewrite, within};
use serde_json::{Value, json};

fault! {
    /// The reply padded with `bytes` of extra text content.
    pub struct Oversized { pub bytes: usize }
    category: Protocol,
    effect: WrongData,
    serve_tool: Some(ServeTool::everywhere("oversized_response")),
    examples: [
        r#"{"type": "oversized", "bytes": 100000}"#,
    ],
    // The answer arrives with a padding block the server never sent (if the client takes a frame that big).
    validate: |fault| within("bytes", fault.bytes, 1, MAX_OVERSIZED_BYTES),
    apply: |fault, reply, _| pad(reply, fault.bytes),
}

fn pad(reply: Reply<'_>, bytes: usize) -> Vec<WireAction> {
    let padding = json!({"type": "text", "text": "x".repeat(bytes)});
    rewrite(reply, |message| {
        if let Some(Value::Array(content)) = message.get_mut("result").and_then(|r| r.get_mut("content")) {
            content.push(padding);
        } else if let Some(Value::Object(error)) = message.get_mut("error") {
            error.insert("data".into(), padding);
        } else if let Some(Value::Object(result)) = message.get_mut("result") {
            result.insert("content".into(), Value::Array(vec![padding]));
        } else {
            return false;
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn grows_by_at_least_the_padding_and_stays_valid() {
        let out = sent(&run(Oversized { bytes: 100_000 }, &frame(RESULT)));
        assert!(out[0].bytes().len() >= RESULT.len() + 100_000);
        let content = out[0].value().unwrap()["result"]["content"].as_array().unwrap().clone();
        assert_eq!(content[0]["text"], "ok");
        assert_eq!(content[1]["text"].as_str().unwrap().len(), 100_000);
    }
}
