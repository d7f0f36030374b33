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

use super::{Reply, WireAction, edit, unchanged};
use serde_json::Value;

pub(super) fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    let Some(id) = reply.frame.id() else {
        return unchanged(reply);
    };
    let wrong = Value::String(format!("{}-wrong", id.as_json()));
    match edit(reply, |obj| {
        obj.insert("id".into(), wrong);
    }) {
        Some(bytes) => vec![WireAction::Send(bytes)],
        None => unchanged(reply),
    }
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
