//! `progress_after_result`: progress for a request that has already completed.
//!
//! **What it does on the wire.** The reply is sent unchanged, then one `notifications/progress` with the request's
//! `progressToken` (`progress: 1, total: 1`). The spec says progress must stop at completion, so the token is no
//! longer valid. If the request carried no token, the notification uses the token `"faultlab-stale"`.
//!
//! **What a robust client should do.** Ignore progress for an unknown or finished token; never resurrect the
//! request or crash.
//!
//! **Example.** `{"type": "progress_after_result"}`
//!
//! **How it is graded.** The call succeeds; the following call on the connection succeeds too.

use super::{Reply, WireAction};
use bytes::Bytes;
use serde_json::{Value, json};

fault! {
    /// A progress notification for the request, sent after its result.
    pub struct ProgressAfterResult {}
    category: Temporal,
    effect: Result,
    serve_tool: Some(ServeTool::everywhere("progress_after_result")),
    examples: [
        r#"{"type": "progress_after_result"}"#,
    ],
    apply: |_, reply, _| progress_after(reply),
}

fn progress_after(reply: Reply<'_>) -> Vec<WireAction> {
    let token =
        reply.request.and_then(|r| r.progress_token()).cloned().unwrap_or_else(|| Value::from("faultlab-stale"));
    let note = json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1, "total": 1, "message": "progress after the result"}
    });
    vec![WireAction::Send(reply.frame.bytes().clone()), WireAction::Send(Bytes::from(note.to_string()))]
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn uses_the_requests_token_after_the_reply() {
        let request = frame(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"tok"}}}"#,
        );
        let reply = frame(RESULT);
        let out = sent(&progress_after(Reply { frame: &reply, request: Some(&request) }));
        assert_eq!(out[0].bytes(), reply.bytes());
        assert_eq!(out[1].value().unwrap()["params"]["progressToken"], "tok");
    }
}
