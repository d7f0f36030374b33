//! `protocol_error`: one of the 2026-07-28 transport errors instead of the reply.
//!
//! **What it does on the wire.** HTTP: status 400, `Content-Type: application/json`, and a JSON-RPC error with the
//! request's id and the `code` asked for, shaped as the 2026-07-28 revision defines it:
//! - `-32020` HeaderMismatch: `"Header mismatch: Mcp-Method does not match the request body"`;
//! - `-32021` MissingRequiredClientCapability: `data.requiredCapabilities` `{"elicitation": {}}`;
//! - `-32022` UnsupportedProtocolVersion: `data.requested` (the version the request declared in
//!   `_meta["io.modelcontextprotocol/protocolVersion"]`, or its `params.protocolVersion`; a request that declares
//!   none is of the legacy era, `2025-11-25`) and `data.supported`, one version the client can fall back to:
//!   `["2025-11-25"]` when 2026-07-28 was asked, else `["2025-06-18"]`.
//!
//! stdio: the same JSON-RPC error is the reply line.
//!
//! **What a robust client should do.** -32020: fix its headers (a proxy rewriting a body must rewrite the mirrored
//! headers), not retry unchanged. -32021: declare the capability if it can and retry once, else fail naming it.
//! -32022: retry once with a version from `supported` that it speaks, else fail naming both lists; never loop.
//!
//! **Example.** `{"type": "protocol_error", "code": -32022}`
//!
//! **How it is graded.** The call fails with the error's code (effect `error`); for -32022 a client that retries
//! with a listed version and succeeds recovered.

use super::{Media, Reply, WireAction};
use bytes::Bytes;
use serde_json::{Value, json};

fault! {
    /// A 2026-07-28 transport error instead of the reply: HTTP 400 with JSON-RPC -32020, -32021 or -32022.
    pub struct ProtocolError { pub code: i32 }
    category: Protocol,
    effect: Error,
    serve_tool: Some(ServeTool::everywhere("protocol_error")),
    examples: [
        r#"{"type": "protocol_error", "code": -32022}"#,
        r#"{"type": "protocol_error", "code": -32020}"#,
        r#"{"type": "protocol_error", "code": -32021}"#,
    ],
    validate: |fault| {
        if CODES.contains(&fault.code) { Ok(()) } else { Err(format!("code must be one of {CODES:?}")) }
    },
    apply: |fault, reply, _| apply(reply, fault.code),
}

/// HeaderMismatch, MissingRequiredClientCapability, UnsupportedProtocolVersion.
pub const CODES: [i32; 3] = [-32020, -32021, -32022];
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
/// The legacy revision before 2025-11-25: what a server that dropped 2025-11-25 might still speak.
const OLDER: &str = "2025-06-18";

fn apply(reply: Reply<'_>, code: i32) -> Vec<WireAction> {
    let error = match code {
        -32020 => json!({"code": code, "message": "Header mismatch: Mcp-Method does not match the request body"}),
        -32021 => json!({"code": code, "message": "Missing required client capability: elicitation",
            "data": {"requiredCapabilities": {"elicitation": {}}}}),
        _ => {
            let requested = reply.request.and_then(|r| requested(r.value())).unwrap_or_else(|| LEGACY.to_owned());
            let supported = if requested == MODERN { LEGACY } else { OLDER };
            json!({"code": code, "message": format!("Unsupported protocol version: {requested}"),
                "data": {"requested": requested, "supported": [supported]}})
        }
    };
    let id = reply.frame.id().map_or(Value::Null, |id| id.to_value());
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    vec![WireAction::HttpStatus { status: 400, retry_after_sec: None, body: Bytes::from(body.to_string()), media: Media::Json }]
}

/// The version a request declared: 2026-07-28's per-request `_meta`, or `initialize`'s `protocolVersion`.
fn requested(request: Option<&Value>) -> Option<String> {
    let params = request?.get("params")?;
    let meta = params.get("_meta").and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"));
    meta.or_else(|| params.get("protocolVersion")).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::Fault as _;

    #[test]
    fn unsupported_version_lists_a_version_to_fall_back_to() {
        let request = frame(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        let reply = frame(RESULT);
        let actions = apply(Reply { frame: &reply, request: Some(&request) }, -32022);
        let [WireAction::HttpStatus { status: 400, body, media: Media::Json, .. }] = &actions[..] else {
            panic!("{actions:?}")
        };
        let expected = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"Unsupported protocol version: 2026-07-28","data":{"requested":"2026-07-28","supported":["2025-11-25"]}}}"#;
        assert_eq!(body, expected);
        let legacy = run(ProtocolError { code: -32022 }, &reply);
        let [WireAction::HttpStatus { body, .. }] = &legacy[..] else { panic!("{legacy:?}") };
        assert!(std::str::from_utf8(body).unwrap().contains(r#""requested":"2025-11-25","supported":["2025-06-18"]"#));
    }

    #[test]
    fn missing_capability_names_it_and_codes_are_checked() {
        let actions = run(ProtocolError { code: -32021 }, &frame(RESULT));
        let [WireAction::HttpStatus { body, .. }] = &actions[..] else { panic!("{actions:?}") };
        assert!(std::str::from_utf8(body).unwrap().contains(r#""requiredCapabilities":{"elicitation":{}}"#));
        assert!(ProtocolError { code: -32603 }.validate().unwrap_err().contains("code"));
    }
}
