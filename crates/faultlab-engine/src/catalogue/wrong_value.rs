//! `wrong_value`: one value in the result is not what the server computed.
//!
//! **What it does on the wire.** `value` is written at `pointer`, a JSON pointer inside the reply's `result`
//! (`/content/0/text`, `/structuredContent/total`, `/isError`): an existing member or array element is replaced,
//! a new member is added to an existing object. `jsonrpc` and `id` cannot be reached, so the reply stays valid
//! JSON-RPC; whether it stays a valid `CallToolResult` depends on `value` (a string for `/content/0/text` keeps it
//! valid). If the pointer's parent does not exist, or the reply is an error, it is sent unchanged.
//!
//! **What a robust client should do.** Nothing on the wire is wrong, so the client cannot reject it by shape. A
//! careful agent cross-checks values that matter (against `structuredContent`, its `outputSchema`, a second
//! source) before acting on them.
//!
//! **Example.** `{"type": "wrong_value", "pointer": "/structuredContent/balance", "value": -1}`
//!
//! **How it is graded.** By the task's state and witness checks: acting on the wrong value is visible in the end
//! state; a client that verified it, or reported the inconsistency, passes.

use super::{Reply, WireAction, rewrite, split_pointer};
use serde_json::Value;

pub(super) fn apply(reply: Reply<'_>, pointer: &str, value: &Value) -> Vec<WireAction> {
    rewrite(reply, |message| {
        let (Some(result), Some((parent, key))) = (message.get_mut("result"), split_pointer(pointer)) else {
            return false;
        };
        match result.pointer_mut(parent) {
            Some(Value::Object(members)) => {
                members.insert(key, value.clone());
                true
            }
            Some(Value::Array(items)) => match key.parse::<usize>().ok().and_then(|index| items.get_mut(index)) {
                Some(item) => {
                    *item = value.clone();
                    true
                }
                None => false,
            },
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;
    use serde_json::json;

    fn run(json: &str, pointer: &str, value: Value) -> Vec<WireAction> {
        apply(Reply { frame: &frame(json), request: None }, pointer, &value)
    }

    #[test]
    fn replaces_a_text_inside_the_result_only() {
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"tampered"}]}}"#;
        assert_eq!(run(RESULT, "/content/0/text", json!("tampered")), vec![WireAction::Send(Bytes::from(expected))]);
        let id_untouched = sent(&run(RESULT, "/id", json!(99)))[0].value().unwrap().clone();
        assert_eq!((id_untouched["id"].clone(), id_untouched["result"]["id"].clone()), (json!(7), json!(99)));
    }

    #[test]
    fn adds_a_member_and_leaves_unreachable_paths_alone() {
        let added = sent(&run(RESULT, "/isError", json!(true)))[0].value().unwrap().clone();
        assert_eq!(added["result"]["isError"], true);
        assert_eq!(run(RESULT, "/content/5", json!(1)), vec![WireAction::Send(Bytes::from(RESULT))]);
        assert_eq!(run(RESULT, "/nope/x", json!(1)), vec![WireAction::Send(Bytes::from(RESULT))]);
    }
}
