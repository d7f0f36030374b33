//! `auth_expired`: the client's credentials are no longer accepted.
//!
//! **What it does on the wire.** The reply is replaced. HTTP: status 401 with
//! `WWW-Authenticate: Bearer error="invalid_token"` and a JSON body. stdio: the body alone, as the reply line. The
//! body is a JSON-RPC error with the request's id:
//! `{"jsonrpc":"2.0","id":<id>,"error":{"code":-32001,"message":"HTTP 401: Unauthorized: authentication expired","data":{"httpStatus":401}}}`
//! (the same answer as `http_status` with status 401).
//!
//! **What a robust client should do.** Refresh or re-acquire its credentials (HTTP: follow the
//! `WWW-Authenticate` challenge) and retry once; if that fails, report an authentication error. Never loop.
//!
//! **Example.** `{"type": "auth_expired"}`
//!
//! **How it is graded.** The call fails with an authentication error; at most one retry follows.

use super::{Reply, WireAction, http_status};

pub(super) fn apply(reply: Reply<'_>) -> Vec<WireAction> {
    http_status::apply(reply, 401, None)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn a_401_whose_error_carries_the_id() {
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: None });
        let [WireAction::HttpStatus { status: 401, retry_after_sec: None, body }] = actions.as_slice() else {
            panic!("{actions:?}")
        };
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!((value["id"].clone(), value["error"]["code"].clone()), (7.into(), (-32001).into()));
    }
}
