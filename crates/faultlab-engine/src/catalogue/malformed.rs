//! `malformed`: valid JSON, invalid JSON-RPC.
//!
//! **What it does on the wire.** The reply is rewritten once: `missing-jsonrpc` deletes the `jsonrpc` member,
//! `invalid-jsonrpc-version` sets it to `"1.0"`, `result-with-error` adds an `error` object next to `result`
//! (code -32603). Everything else (id, key order, unknown fields) is kept.
//!
//! **What a robust client should do.** Reject the message as invalid and fail the pending request with a
//! protocol error, without treating it as success and without closing a connection other requests still use.
//!
//! **Example.** `{"type": "malformed", "variant": "result-with-error"}`; `variant` defaults to `missing-jsonrpc`, and
//! MCP-Faultline's `{"type": "malformed_response"}` means the same.
//!
//! **How it is graded.** The call's outcome is an error; a follow-up call on the same connection succeeds.

use super::{Reply, WireAction, rewrite};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

fault! {
    /// Valid JSON, invalid JSON-RPC. Also accepted as `malformed_response` (MCP-Faultline's name).
    pub struct Malformed {
        #[serde(default)]
        pub variant: MalformedVariant,
    }
    category: Protocol,
    effect: Invalid,
    serve_tool: Some(ServeTool::everywhere("malformed_message")),
    examples: [
        r#"{"type": "malformed"}"#,
        r#"{"type": "malformed", "variant": "invalid-jsonrpc-version"}"#,
        r#"{"type": "malformed_response", "variant": "result-with-error"}"#,
    ],
    apply: |fault, reply, _| apply(reply, fault.variant),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MalformedVariant {
    /// The `jsonrpc` member is removed (the default).
    #[default]
    MissingJsonrpc,
    /// `jsonrpc` is `"1.0"`.
    InvalidJsonrpcVersion,
    /// A result and an error in one response.
    ResultWithError,
}

/// Lets the JSON Schema accept `malformed_response` as well, as serde does (schemars ignores serde aliases).
pub(super) fn accept_faultline_alias(schema: &mut schemars::Schema) {
    if let Some(tag) = schema.get_mut("properties").and_then(|p| p.get_mut("type")).and_then(|t| t.as_object_mut()) {
        tag.remove("const");
        tag.insert("enum".into(), json!(["malformed", "malformed_response"]));
    }
}

fn apply(reply: Reply<'_>, variant: MalformedVariant) -> Vec<WireAction> {
    rewrite(reply, |message| {
        let Some(obj) = message.as_object_mut() else { return false };
        match variant {
            MalformedVariant::MissingJsonrpc => {
                obj.shift_remove("jsonrpc");
            }
            MalformedVariant::InvalidJsonrpcVersion => {
                obj.insert("jsonrpc".into(), json!("1.0"));
            }
            MalformedVariant::ResultWithError => {
                obj.insert(
                    "error".into(),
                    json!({"code": -32603, "message": "Injected response contains both result and error"}),
                );
            }
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    fn run(variant: MalformedVariant) -> serde_json::Value {
        let reply = frame(RESULT);
        let out = sent(&apply(Reply { frame: &reply, request: None }, variant));
        out[0].value().unwrap().clone()
    }

    #[test]
    fn each_variant_breaks_json_rpc_and_keeps_the_id() {
        let missing = run(MalformedVariant::MissingJsonrpc);
        assert!(missing.get("jsonrpc").is_none());
        assert_eq!(missing["id"], 7);
        assert_eq!(run(MalformedVariant::InvalidJsonrpcVersion)["jsonrpc"], "1.0");
        let both = run(MalformedVariant::ResultWithError);
        assert!(both.get("result").is_some() && both["error"]["code"] == -32603);
    }
}
