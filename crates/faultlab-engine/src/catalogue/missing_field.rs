//! `missing_field`: one member of the reply is gone.
//!
//! **What it does on the wire.** The member at `pointer`, a JSON pointer into the whole message (default
//! `/result/content`), is removed (from an array: that element, the rest shift down). With the default, a tool
//! result loses its required `content`: `{"jsonrpc":"2.0","id":7,"result":{"isError":false}}`. Other pointers remove
//! anything else, e.g. `/result/structuredContent/total` for a field the tool's output schema requires. All other
//! bytes of the message are kept in order. A reply without that member (an error, for the default) is sent
//! unchanged.
//!
//! **What a robust client should do.** Validate the result and fail the call with an error that names the missing
//! field, instead of treating absence as an empty or default value; keep the connection.
//!
//! **Example.** `{"type": "missing_field", "pointer": "/result/content"}`
//!
//! **How it is graded.** The call's outcome is an error (the result was rejected), not success with empty data.

use super::{Reply, WireAction, rewrite, split_pointer};
use serde_json::Value;

/// Where `missing_field` removes a member when no pointer is given.
pub const DEFAULT_MISSING_POINTER: &str = "/result/content";

fn default_pointer() -> String {
    DEFAULT_MISSING_POINTER.into()
}

fault! {
    /// One member of the reply is removed, at a JSON pointer into the whole message.
    pub struct MissingField {
        #[serde(default = "default_pointer")]
        pub pointer: String,
    }
    category: Protocol,
    effect: Invalid,
    serve_tool: None,
    examples: [
        r#"{"type": "missing_field"}"#,
        r#"{"type": "missing_field", "pointer": "/jsonrpc"}"#,
    ],
    validate: |fault| super::check_pointer(&fault.pointer),
    apply: |fault, reply, _| apply(reply, &fault.pointer),
}

fn apply(reply: Reply<'_>, pointer: &str) -> Vec<WireAction> {
    rewrite(reply, |message| remove(message, pointer))
}

/// Removes the member `pointer` names; false if there is none.
fn remove(root: &mut Value, pointer: &str) -> bool {
    let Some((parent, key)) = split_pointer(pointer) else {
        return false;
    };
    match root.pointer_mut(parent) {
        Some(Value::Object(members)) => members.shift_remove(&key).is_some(),
        Some(Value::Array(items)) => match key.parse::<usize>() {
            Ok(index) if index < items.len() => {
                items.remove(index);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;

    fn run(json: &str, pointer: &str) -> Vec<WireAction> {
        apply(Reply { frame: &frame(json), request: None }, pointer)
    }

    #[test]
    fn the_default_removes_the_content_and_keeps_the_rest() {
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}"#;
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"isError":false}}"#;
        assert_eq!(run(reply, super::super::DEFAULT_MISSING_POINTER), vec![WireAction::Send(Bytes::from(expected))]);
    }

    #[test]
    fn nested_members_and_array_elements() {
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"structuredContent":{"a/b":1,"c":2}}}"#;
        let sent = |actions: Vec<WireAction>| sent(&actions)[0].value().unwrap().clone();
        let value = sent(run(reply, "/result/structuredContent/a~1b"));
        assert_eq!(value["result"]["structuredContent"], serde_json::json!({"c": 2}));
        let value = sent(run(reply, "/result/content/0"));
        assert_eq!(value["result"]["content"], serde_json::json!([{"type":"text","text":"b"}]));
    }

    #[test]
    fn a_missing_member_leaves_the_bytes_alone() {
        let reply = r#"{"jsonrpc":"2.0", "id":7,"error":{"code":1,"message":"x"}}"#;
        assert_eq!(run(reply, "/result/content"), vec![WireAction::Send(Bytes::from(reply))]);
        assert_eq!(run(reply, "/error/data/9"), vec![WireAction::Send(Bytes::from(reply))]);
    }
}
