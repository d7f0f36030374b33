//! `invalid_result`: a valid JSON-RPC envelope around a result that breaks the MCP schema.
//!
//! **What it does on the wire.** Every text content block of the result gets a number (`42`) as its `text`,
//! where the schema requires a string. `jsonrpc`, `id` and the envelope stay valid.
//!
//! **What a robust client should do.** Validate the result against the MCP schema and reject it with a clear
//! error instead of passing a number on as text or crashing.
//!
//! **Example.** `{"type": "invalid_result"}`
//!
//! **How it is graded.** The call's outcome is an error (the result was rejected), not success.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, Reply, WireAction, rewrite};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The result's text content blocks carry a number instead of a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvalidResult {}

impl Fault for InvalidResult {
    const EXAMPLES: &[&str] = &[r#"{"type": "invalid_result"}"#];
    const CATEGORY: Category = Category::Data;
    const EFFECT: Effect = Effect::Invalid;
    const SERVE_TOOL: Option<ServeTool> = None;

    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply))
    }
}

fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    rewrite(reply, |message| {
        let Some(Value::Array(content)) = message.get_mut("result").and_then(|r| r.get_mut("content")) else {
            return false;
        };
        for block in content.iter_mut().filter(|b| b["type"] == "text") {
            block["text"] = json!(42);
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn text_becomes_a_number_and_the_envelope_stays_valid() {
        let reply = frame(RESULT);
        let out = sent(&apply(Reply { frame: &reply, request: None }));
        let value = out[0].value().unwrap();
        assert_eq!(value["jsonrpc"], "2.0");
        assert_eq!(value["id"], 7);
        assert_eq!(value["result"]["content"][0]["text"], 42);
    }
}
