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

use super::{rewrite, unchanged};
use serde_json::Value;

fault! {
    /// The reply carries an id no request had.
    pub struct WrongId {}
    category: Protocol,
    effect: Timeout,
    serve_tool: Some(ServeTool::everywhere("wrong_id")),
    examples: [r#"{"type": "wrong_id"}"#],
    apply: |_, reply, _| match reply.frame.id() {
        Some(id) => rewrite(reply, |message| {
            let wrong = Value::String(format!("{}-wrong", id.as_json()));
            message.as_object_mut().map(|obj| obj.insert("id".into(), wrong)).is_some()
        }),
        None => unchanged(reply),
    },
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_id_changes_and_nothing_else() {
        let reply = frame(RESULT);
        let mut value = sent(&run(WrongId {}, &reply))[0].value().unwrap().clone();
        assert_eq!(value["id"], "7-wrong");
        value["id"] = 7.into();
        assert_eq!(&value, reply.value().unwrap());
    }
}
