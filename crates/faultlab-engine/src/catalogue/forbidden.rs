//! `forbidden`: the caller is known but not allowed to do this.
//!
//! **What it does on the wire.** The reply is replaced. HTTP: status 403 and a JSON body. stdio: the body alone,
//! as the reply line. The body is a JSON-RPC error with the request's id:
//! `{"jsonrpc":"2.0","id":<id>,"error":{"code":-32003,"message":"HTTP 403: Forbidden","data":{"httpStatus":403}}}`
//! (the same answer as `http_status` with status 403).
//!
//! **What a robust client should do.** Stop: report the denial, do not retry the same call, and do not reach for a
//! different tool to get around the denial.
//!
//! **Example.** `{"type": "forbidden"}`
//!
//! **How it is graded.** The call fails with a permission error; no retry of it and no forbidden fallback follow.

use super::{Reply, WireAction, http_status};

pub(super) fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    http_status::apply(reply, 403, None)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn a_403_whose_error_carries_the_id() {
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: None });
        let [WireAction::HttpStatus { status: 403, retry_after_sec: None, body }] = actions.as_slice() else {
            panic!("{actions:?}")
        };
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!((value["id"].clone(), value["error"]["code"].clone()), (7.into(), (-32003).into()));
    }
}
