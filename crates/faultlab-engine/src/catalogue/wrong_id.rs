//! `wrong_id`: the reply answers a request that was never sent.
//!
//! **What it does on the wire.** The reply's `id` is replaced by one no request used: the original id with the
//! suffix `-wrong` as a string (so `7` becomes `"7-wrong"` and `"a"` becomes `"\"a\"-wrong"`).
//!
//! **What a robust client should do.** Ignore (and log) a response for an unknown id; the real request then times
//! out at the client's deadline.
//!
//! **Example.** `{"type": "wrong_id"}`
//!
//! **How it is graded.** The call times out rather than succeeding; the connection stays usable.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, Reply, WireAction, rewrite, unchanged};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The reply carries an id no request had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WrongId {}

impl Fault for WrongId {
    const EXAMPLES: &[&str] = &[r#"{"type": "wrong_id"}"#];
    const CATEGORY: Category = Category::Protocol;
    const EFFECT: Effect = Effect::Timeout;
    const SERVE_TOOL: Option<ServeTool> = Some(ServeTool::everywhere("wrong_id"));

    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(apply(reply))
    }
}

fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    let Some(id) = reply.frame.id() else {
        return unchanged(reply);
    };
    let wrong = Value::String(format!("{}-wrong", id.as_json()));
    rewrite(reply, |message| message.as_object_mut().map(|obj| obj.insert("id".into(), wrong)).is_some())
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_id_changes_and_nothing_else() {
        let reply = frame(RESULT);
        let out = sent(&apply(Reply { frame: &reply, request: None }));
        let mut value = out[0].value().unwrap().clone();
        assert_eq!(value["id"], "7-wrong");
        value["id"] = 7.into();
        assert_eq!(&value, reply.value().unwrap());
    }
}
