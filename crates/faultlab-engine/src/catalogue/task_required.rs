//! `task_required`: a tool that requires a task, called synchronously, answers JSON-RPC error -32021.
//!
//! **What it does on the wire.** Instead of the reply, a JSON-RPC error for the request's id (in the transport's
//! normal framing: a line, an SSE event, a JSON body): code **-32021** "Missing required client capability" with
//! `data.requiredCapabilities.extensions` naming the tasks extension (`io.modelcontextprotocol/tasks`), as rmcp's
//! `missing_required_client_capability` sends it. `faultlab serve`'s `task_work` with `"requireTask": true` sends
//! it to a client that did not declare the extension (one that did gets a task handle); a proxy rule sends it for
//! whatever call it matches.
//!
//! **What a robust client should do.** Fail the call naming the missing capability; a client that supports tasks
//! declares the extension and calls again as a task, once; the connection stays usable.
//!
//! **Example.** `{"type": "task_required"}`
//!
//! **How it is graded.** The call fails with error -32021 (effect `error`); the next call on the connection
//! shows whether the client still works.

use super::{Reply, WireAction};
use bytes::Bytes;
use serde_json::{Value, json};

/// The tasks extension's name in capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// MissingRequiredClientCapability (2026-07-28).
pub const CODE: i32 = -32021;

fault! {
    /// Answer error -32021 naming the tasks extension, as a tool that requires a task does to a synchronous call.
    pub struct TaskRequired {}
    category: Protocol,
    effect: Error,
    serve_tool: Some(ServeTool::everywhere("task_work")),
    examples: [r#"{"type": "task_required"}"#],
    apply: |_, reply, _| apply(reply),
}

/// The error's JSON-RPC `error` object.
pub fn error() -> Value {
    json!({"code": CODE, "message": "Missing required client capability",
        "data": {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}})
}

fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    let id = reply.frame.id().map_or(Value::Null, |id| id.to_value());
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error()});
    vec![WireAction::Send(Bytes::from(body.to_string()))]
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_reply_becomes_the_error_naming_the_tasks_extension() {
        let sent = sent(&run(TaskRequired {}, &frame(RESULT)));
        let [reply] = &sent[..] else { panic!("{sent:?}") };
        let value = reply.value().unwrap();
        assert_eq!(value["id"], 7);
        assert_eq!(value["error"]["code"], -32021);
        assert!(value["error"]["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());
        assert!(value.get("result").is_none());
    }
}
