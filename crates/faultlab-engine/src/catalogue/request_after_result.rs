//! `request_after_result`: a server-to-client request (elicitation, sampling or roots) sent after the call ended.
//!
//! **What it does on the wire.** The reply is sent unchanged, then one request from the server to the client about
//! the call that has just ended: `elicitation/create` (a form asking to confirm), `sampling/createMessage` (one user
//! message) or `roots/list`, chosen by `method`. Its id is `"faultlab-after-<the call's id>"`, so it cannot clash
//! with the client's own ids. The spec says a server sends these only while a request is being handled, so the
//! client is asked about work that is already over.
//!
//! **What a robust client should do.** Keep the result it already has; answer the request (an error, or `decline`
//! for an elicitation, or whatever its policy is), never attach it to the ended call, never show a user a prompt
//! for work that finished, and keep working: the next call on the connection succeeds.
//!
//! **Example.** `{"type": "request_after_result", "method": "elicitation"}`
//!
//! **How it is graded.** The call succeeds; the client's answer (or its silence) to the extra request is what
//! `faultlab-client` records as a server request; the following call on the connection succeeds too.

use super::{Reply, WireAction};
use bytes::Bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Which server-to-client request a fault or the `ask_client` tool sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AskMethod {
    /// `elicitation/create` in form mode.
    Elicitation,
    /// `sampling/createMessage`.
    Sampling,
    /// `roots/list`.
    Roots,
}

impl AskMethod {
    /// The JSON-RPC method on the wire.
    pub fn method(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    /// Ordinary parameters for the request, as a well-behaved server would send them.
    pub fn params(self, message: &str) -> Value {
        match self {
            Self::Elicitation => json!({
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean", "description": "Go ahead?"}},
                    "required": ["confirm"]
                }
            }),
            Self::Sampling => json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": message}}],
                "maxTokens": 64
            }),
            Self::Roots => json!({}),
        }
    }
}

fault! {
    /// A server-to-client request about the call, sent after its result.
    pub struct RequestAfterResult {
        /// Which request: `elicitation`, `sampling` or `roots`.
        pub method: AskMethod,
    }
    category: Temporal,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("request_after_result")),
    examples: [
        r#"{"type": "request_after_result", "method": "elicitation"}"#,
        r#"{"type": "request_after_result", "method": "sampling"}"#,
        r#"{"type": "request_after_result", "method": "roots"}"#,
    ],
    apply: |fault, reply, _| ask_after(fault.method, reply),
}

fn ask_after(method: AskMethod, reply: Reply<'_>) -> Vec<WireAction> {
    let call = reply.frame.value().and_then(|v| v.get("id")).map(|id| id.to_string()).unwrap_or_default();
    let ask = json!({
        "jsonrpc": "2.0",
        "id": format!("faultlab-after-{}", call.trim_matches('"')),
        "method": method.method(),
        "params": method.params("The call you made has already ended. Confirm anyway?")
    });
    vec![WireAction::Send(reply.frame.bytes().clone()), WireAction::Send(Bytes::from(ask.to_string()))]
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_request_follows_the_reply_with_an_id_of_its_own() {
        let reply = frame(RESULT);
        for method in [AskMethod::Elicitation, AskMethod::Sampling, AskMethod::Roots] {
            let out = sent(&ask_after(method, Reply { frame: &reply, request: None }));
            assert_eq!(out.len(), 2);
            assert_eq!(out[0].bytes(), reply.bytes());
            let ask = out[1].value().unwrap();
            assert_eq!(ask["method"], method.method());
            assert_eq!(ask["id"], "faultlab-after-7");
        }
    }
}
