//! `unknown_tool`: a request is answered as one for an item the server does not have: a tool call for a tool, a
//! resource read for a resource, a prompt get for a prompt.
//!
//! **What it does on the wire.** The reply becomes a JSON-RPC error for its id, what MCP servers answer: for a
//! `tools/call`, code -32602 (invalid params) and message `Unknown tool: NAME`; for a `resources/read`, code -32002
//! (the spec's resource not found), message `Resource not found: URI` and `data: {"uri": URI}`; for a `prompts/get`,
//! -32602 and `Unknown prompt: NAME`; with the name or URI the request used. With `mode: instead` the server never
//! sees the request, as when the item is really gone. Use it with `list_drift` (`removed` or `renamed`) on the
//! requests for the item that left its list (a rule's `match.tool` with `method: resources/read` matches the URI,
//! with `method: prompts/get` the prompt's name). A reply to another method passes unchanged.
//!
//! **What a robust client should do.** Surface the error, re-list (the error says the client's list is stale), and
//! not retry the same name; an agent picks the item's replacement from the new list, if there is one.
//!
//! **Example.** `{"type": "unknown_tool"}`
//!
//! **How it is graded.** A client that re-lists after the error and stops asking for the name passes; one that
//! keeps asking for the vanished item fails.

use super::{Applied, Reply, WireAction, unchanged};
use bytes::Bytes;
use serde_json::json;

fault! {
    /// A `tools/call`, `resources/read` or `prompts/get` answered with the error a server gives for an item it does
    /// not have (-32602 `Unknown tool: NAME`, -32002 `Resource not found: URI`, -32602 `Unknown prompt: NAME`).
    pub struct UnknownTool {}
    category: Protocol,
    effect: Error,
    serve_tool: Some(ServeTool::standing("tool_list_drift")),
    examples: [r#"{"type": "unknown_tool"}"#],
    apply: |_, reply, _| apply(reply),
}

fn apply(reply: Reply<'_>) -> Applied {
    let request = reply.request.and_then(|r| r.value());
    let method = request.map_or("tools/call", |r| r["method"].as_str().unwrap_or_default());
    let Some(id) = reply.frame.value().and_then(|m| m.get("id")) else {
        return Applied::from(unchanged(reply));
    };
    let named = |key: &str| request.and_then(|r| r["params"][key].as_str()).unwrap_or("(unnamed)").to_owned();
    let error = match method {
        "tools/call" => json!({"code": -32602, "message": format!("Unknown tool: {}", named("name"))}),
        "prompts/get" => json!({"code": -32602, "message": format!("Unknown prompt: {}", named("name"))}),
        "resources/read" => {
            let uri = named("uri");
            json!({"code": -32002, "message": format!("Resource not found: {uri}"), "data": {"uri": uri}})
        }
        _ => return Applied::from(unchanged(reply)),
    };
    let error = json!({"jsonrpc": "2.0", "id": id, "error": error});
    Applied::from(vec![WireAction::Send(Bytes::from(error.to_string()))])
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn a_call_read_or_get_gets_the_servers_error_naming_its_item() {
        let request = frame(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gone","arguments":{}}}"#);
        let applied = apply(Reply { frame: &frame(RESULT), request: Some(&request) });
        let error = sent(&applied.actions)[0].value().unwrap().clone();
        assert_eq!(error, json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Unknown tool: gone"}}));
        let read = frame(r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///gone.txt"}}"#);
        let applied = apply(Reply { frame: &frame(RESULT), request: Some(&read) });
        let error = sent(&applied.actions)[0].value().unwrap().clone();
        let uri = "file:///gone.txt";
        let message = format!("Resource not found: {uri}");
        assert_eq!(error["error"], json!({"code": -32002, "message": message, "data": {"uri": uri}}));
        let get = frame(r#"{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"old"}}"#);
        let applied = apply(Reply { frame: &frame(RESULT), request: Some(&get) });
        let error = sent(&applied.actions)[0].value().unwrap().clone();
        assert_eq!(error["error"], json!({"code": -32602, "message": "Unknown prompt: old"}));
        let list = frame(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
        let applied = apply(Reply { frame: &frame(RESULT), request: Some(&list) });
        assert_eq!(applied.actions, unchanged(Reply { frame: &frame(RESULT), request: None }));
    }
}
