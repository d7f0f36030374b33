//! `unknown_tool`: a call is answered as a call to a tool the server does not have.
//!
//! **What it does on the wire.** The reply to a `tools/call` becomes a JSON-RPC error for its id: code -32602
//! (invalid params, what MCP servers answer for an unknown tool), message `Unknown tool: NAME`, with the name the
//! call used. With `mode: instead` the server never sees the call, as when the tool is really gone. Use it with
//! `list_drift` (`removed` or `renamed`) on the calls to the tool that left the list. A reply to another method
//! passes unchanged.
//!
//! **What a robust client should do.** Surface the error, re-list the tools (the error says the client's list is
//! stale), and not retry the same name; an agent picks the tool's replacement from the new list, if there is one.
//!
//! **Example.** `{"type": "unknown_tool"}`
//!
//! **How it is graded.** A client that re-lists after the error and stops calling the name passes; one that keeps
//! calling the vanished tool fails.

use super::{Applied, Reply, WireAction, unchanged};
use bytes::Bytes;
use serde_json::{Value, json};

fault! {
    /// A `tools/call` answered with -32602 `Unknown tool: NAME`, as by a server that no longer has the tool.
    pub struct UnknownTool {}
    category: Protocol,
    effect: Error,
    serve_tool: Some(ServeTool::standing("tool_list_drift")),
    examples: [r#"{"type": "unknown_tool"}"#],
    apply: |_, reply, _| apply(reply),
}

fn apply(reply: Reply<'_>) -> Applied {
    let request = reply.request.and_then(|r| r.value());
    let is_call = request.is_none_or(|r| r["method"] == "tools/call");
    let Some(id) = reply.frame.value().and_then(|m| m.get("id")).filter(|_| is_call) else {
        return Applied::from(unchanged(reply));
    };
    let name = request.and_then(|r| r.pointer("/params/name")).and_then(Value::as_str).unwrap_or("(unnamed)");
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": format!("Unknown tool: {name}")}});
    Applied::from(vec![WireAction::Send(Bytes::from(error.to_string()))])
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn a_call_gets_invalid_params_naming_its_tool() {
        let request = frame(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gone","arguments":{}}}"#);
        let applied = apply(Reply { frame: &frame(RESULT), request: Some(&request) });
        let error = sent(&applied.actions)[0].value().unwrap().clone();
        assert_eq!(error, json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Unknown tool: gone"}}));
        let list = frame(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
        let applied = apply(Reply { frame: &frame(RESULT), request: Some(&list) });
        assert_eq!(applied.actions, unchanged(Reply { frame: &frame(RESULT), request: None }));
    }
}
