//! `not_jsonrpc`: an `application/json` body that is not JSON-RPC instead of the reply.
//!
//! **What it does on the wire.** HTTP: the reply is replaced by the JSON a gateway or a framework's error handler
//! sends, with `Content-Type: application/json` and the given `status` (200, 500, 502, 503 or 504):
//! `{"message":"<reason>","status":<status>}`, an object with no `jsonrpc`, no `id`, no `result` and no `error`.
//! stdio: that object is written as the reply line.
//!
//! **What a robust client should do.** Fail the call with a clear error ("the response is not JSON-RPC", naming the
//! status), not a validation trace, not a hang until its deadline, and not read the object as a result.
//!
//! **Example.** `{"type": "not_jsonrpc", "status": 502}`
//!
//! **How it is graded.** The call fails (effect `invalid`: JSON arrived, but no JSON-RPC reply with the request's
//! id); a client that waits until its deadline shows as a timeout; the connection stays usable.

use super::{Media, Reply, WireAction};
use bytes::Bytes;
use serde_json::json;

fault! {
    /// JSON that is not JSON-RPC (`{"message": ..., "status": ...}`) instead of the reply, with the given status.
    pub struct NotJsonrpc { pub status: u16 }
    category: Protocol,
    effect: Invalid,
    serve_tool: Some(ServeTool::http_only("not_jsonrpc")),
    examples: [
        r#"{"type": "not_jsonrpc", "status": 502}"#,
        r#"{"type": "not_jsonrpc", "status": 200}"#,
    ],
    validate: |fault| {
        if STATUSES.contains(&fault.status) { Ok(()) } else { Err(format!("status must be one of {STATUSES:?}")) }
    },
    apply: |fault, _reply, _| apply(_reply, fault.status),
}

/// The statuses the body can come with.
pub const STATUSES: [u16; 5] = [200, 500, 502, 503, 504];

fn apply(_reply: Reply<'_>, status: u16) -> Vec<WireAction> {
    let reason = match status {
        200 => "OK",
        500 => "Internal server error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Endpoint request timed out",
    };
    let body = json!({"message": reason, "status": status}).to_string();
    vec![WireAction::HttpStatus { status, retry_after_sec: None, body: Bytes::from(body), media: Media::Json }]
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::Fault as _;

    #[test]
    fn json_with_no_json_rpc_member_at_the_status() {
        let actions = run(NotJsonrpc { status: 502 }, &frame(RESULT));
        let [WireAction::HttpStatus { status: 502, body, media: Media::Json, .. }] = &actions[..] else {
            panic!("{actions:?}")
        };
        assert_eq!(body, r#"{"message":"Bad Gateway","status":502}"#);
        assert!(NotJsonrpc { status: 404 }.validate().is_err());
    }
}
