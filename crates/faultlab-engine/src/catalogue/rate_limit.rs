//! `rate_limit`: the server says "too many requests" instead of answering.
//!
//! **What it does on the wire.** The reply is replaced. HTTP: status 429 with a `Retry-After: <retry_after_sec>`
//! header when `retry_after_sec` is set, and a JSON body. stdio: the body alone, as the reply line. The body is a
//! JSON-RPC error with the request's id:
//! `{"jsonrpc":"2.0","id":<id>,"error":{"code":-32029,"message":"HTTP 429: Too many requests","data":{"httpStatus":429,"retryAfterSec":<retry_after_sec>}}}`
//! (`retryAfterSec` only when set). With `mode: after` the upstream has executed the request; only the answer is
//! replaced.
//!
//! **What a robust client should do.** Treat it as a transient failure: wait at least `Retry-After` /
//! `data.retryAfterSec` (or back off on its own when absent), retry a bounded number of times, and not retry a
//! non-idempotent call blindly.
//!
//! **Example.** `{"type": "rate_limit", "retry_after_sec": 2}`
//!
//! **How it is graded.** The call fails with a rate-limit error; a retry, if any, comes no sooner than the advertised
//! delay; retries stay within the policy's bound.

use super::{MAX_RETRY_AFTER_SEC, Reply, WireAction, http_status, within};
use serde_json::json;

fault! {
    /// Rate limited: HTTP 429 with `Retry-After` (stdio: the JSON-RPC error, code -32029, `data.retryAfterSec`).
    pub struct RateLimit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_after_sec: Option<u32>,
    }
    category: Transport,
    effect: Error,
    serve_tool: None,
    examples: [r#"{"type": "rate_limit", "retry_after_sec": 2}"#, r#"{"type": "rate_limit"}"#],
    validate: |fault| {
        fault.retry_after_sec.map_or(Ok(()), |secs| within("retry_after_sec", secs, 0, MAX_RETRY_AFTER_SEC))
    },
    apply: |fault, reply, _| apply(reply, fault.retry_after_sec),
}

/// The JSON-RPC error code for a rate limit (the `http_status` fault's code for 429).
const CODE: i64 = -32029;

fn apply(reply: Reply<'_>, retry_after_sec: Option<u32>) -> Vec<WireAction> {
    let mut data = json!({"httpStatus": 429});
    if let Some(secs) = retry_after_sec {
        data["retryAfterSec"] = json!(secs);
    }
    let error = json!({"code": CODE, "message": "HTTP 429: Too many requests", "data": data});
    http_status::replace_with_status(reply, 429, retry_after_sec, error)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;

    #[test]
    fn a_429_whose_error_carries_the_id_and_the_retry_delay() {
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: None }, Some(3));
        let body = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32029,"message":"HTTP 429: Too many requests","data":{"httpStatus":429,"retryAfterSec":3}}}"#;
        assert_eq!(
            actions,
            vec![WireAction::HttpStatus {
                status: 429,
                retry_after_sec: Some(3),
                body: Bytes::from(body),
                media: crate::catalogue::Media::Json
            }]
        );
        let WireAction::HttpStatus { body, .. } = &apply(Reply { frame: &reply, request: None }, None)[0] else {
            panic!("a status")
        };
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert!(value["error"]["data"].get("retryAfterSec").is_none(), "no delay advertised when none is set");
    }
}
