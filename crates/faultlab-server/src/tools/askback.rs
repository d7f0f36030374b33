//! `ask_client`: during a `tools/call`, the server asks the client something (`elicitation/create` in form or URL
//! mode, `sampling/createMessage`, `roots/list`) through rmcp's peer, then finishes the call with the answer; or
//! commits one of the faults servers commit when they ask back.
//!
//! The request is a real JSON-RPC request on the connection (stdio: a line; a 2025-11-25 HTTP session: an event
//! on the call's own response stream), and the call waits for the answer while the client's own timeout on the
//! call keeps counting. Every ask holds one of the connection's [`MAX_PENDING_ASKS`] places until its answer,
//! its timeout, or the end of the call (cancellation, the session's end).

use super::{FaultServer, check_range, request_id, tool_error};
pub use faultlab_engine::catalogue::Ask;
use faultlab_engine::catalogue::{AskBack, AskVariant, UNKNOWN_ELICITATION_ID};
use faultlab_engine::recorder::Event;
use faultlab_engine::{AskSlot, MAX_PENDING_ASKS};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, CustomNotification, CustomRequest, ProtocolVersion, ServerNotification, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// Longest the tool waits for the client's answer, in ms.
pub const MAX_ANSWER_MS: u64 = 30_000;
/// How long the tool waits for the client's answer unless told, in ms.
const DEFAULT_ANSWER_MS: u64 = 10_000;
/// Where a URL-mode elicitation sends the user: a reserved name that resolves nowhere.
pub const ELICITATION_URL: &str = "https://faultlab.invalid/confirm";

#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskArgs {
    /// What to ask: elicitation_form, elicitation_url, sampling or roots.
    pub ask: Ask,
    /// The catalogue's `ask_back` variant to commit while asking (none when absent): repeated, undeclared,
    /// never_finish, completion_missing, completion_unknown_id or odd_schema.
    #[serde(default)]
    #[schemars(with = "AskVariant")]
    pub fault: Option<AskVariant>,
    /// How long to wait for the client's answer, in ms (1 to 30000; 10000 when absent).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub answer_timeout_ms: Option<u64>,
}

#[tool_router(router = askback_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Ask the client during this call, then finish the call with its answer: ask \
                          elicitation_form, elicitation_url, sampling or roots; fault (the catalogue's ask_back \
                          variants) repeated, undeclared, never_finish, completion_missing, completion_unknown_id \
                          or odd_schema, none when absent. Without \
                          fault=undeclared, a capability the client did not declare is not asked (status \
                          not_asked).")]
    async fn ask_client(
        &self,
        Parameters(args): Parameters<AskArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let timeout = args.answer_timeout_ms.unwrap_or(DEFAULT_ANSWER_MS);
        if let Err(error) = check_range("answerTimeoutMs", timeout, 1, MAX_ANSWER_MS) {
            return Ok(tool_error(error));
        }
        // The fault is the catalogue entry's (`ask_back`), read in one place.
        let fault = args.fault.map(|variant| AskBack { ask: args.ask, variant });
        if let Some(why) = fault.and_then(|f| f.misfit()) {
            return Ok(tool_error(format!("fault {why}")));
        }
        let variant = args.fault;
        if ctx.protocol_version().is_some_and(|v| !v.has_initialize() || v == ProtocolVersion::V_2026_07_28) {
            return Ok(report(
                json!({"status": "unsupported",
                "reason": "2026-07-28 forbids server-to-client requests"}),
                true,
            ));
        }
        let declared = declared(&ctx, args.ask);
        if !declared && variant != Some(AskVariant::Undeclared) {
            let (key, mode) = args.ask.capability();
            let what = mode.map_or_else(|| key.to_owned(), |mode| format!("{key}.{mode}"));
            return Ok(report(
                json!({"status": "not_asked", "declared": false,
                "reason": format!("the client did not declare the {what} capability")}),
                false,
            ));
        }
        let scope = self.scope(&ctx)?;
        let call = request_id(&ctx);
        let elicitation_id = format!("faultlab-{}", call.to_value().to_string().trim_matches('"'));
        let params = params(args.ask, variant, &elicitation_id);
        let times = if variant == Some(AskVariant::Repeated) { 2 } else { 1 };
        let mut slots: Vec<AskSlot> = Vec::new();
        for _ in 0..times {
            match scope.engine.ask_slot() {
                Some(slot) => slots.push(slot),
                None => {
                    return Ok(tool_error(format!(
                        "{MAX_PENDING_ASKS} server-to-client requests are already pending on this connection"
                    )));
                }
            }
        }
        let timeout = Duration::from_millis(timeout);
        let method = args.ask.method();
        let asking = async {
            if times == 2 {
                // Both requests are on the wire before either answer is awaited, as a buggy server sends them.
                let (a, b) = tokio::join!(
                    ask(&ctx, method, params.clone(), timeout),
                    ask(&ctx, method, params.clone(), timeout)
                );
                vec![a, b]
            } else {
                vec![ask(&ctx, method, params.clone(), timeout).await]
            }
        };
        let answers = tokio::select! {
            answers = asking => answers,
            () = ctx.ct.cancelled() => {
                record(&scope, &call, args, "cancelled", None);
                return Ok(tool_error("The request was cancelled while the client was being asked."));
            }
        };
        drop(slots);
        for answer in &answers {
            record(&scope, &call, args, answer.outcome, answer.answer.clone());
        }
        let first = &answers[0];
        if args.ask == Ask::ElicitationUrl && first.outcome == "accept" {
            let completed = match variant {
                Some(AskVariant::CompletionMissing) => None,
                Some(AskVariant::CompletionUnknownId) => Some(UNKNOWN_ELICITATION_ID.to_owned()),
                _ => Some(elicitation_id.clone()),
            };
            if let Some(id) = completed {
                let note =
                    CustomNotification::new("notifications/elicitation/complete", Some(json!({"elicitationId": id})));
                let _ = ctx.peer.send_notification(ServerNotification::CustomNotification(note)).await;
            }
        }
        if variant == Some(AskVariant::NeverFinish) {
            // The answer is in; the call is held open until the client gives up on it.
            ctx.ct.cancelled().await;
            return Ok(tool_error("The request was cancelled; it was never going to finish."));
        }
        let failed = answers.iter().any(|a| matches!(a.outcome, "error" | "timeout" | "invalid_answer"));
        let body = json!({
            "status": if failed { "ask_failed" } else { "answered" },
            "ask": args.ask,
            "fault": variant.map_or("none", AskVariant::as_str),
            "declared": declared,
            "answers": answers.iter().map(|a| json!({"outcome": a.outcome, "answer": a.answer})).collect::<Vec<_>>(),
        });
        Ok(report(body, failed))
    }
}

/// Whether the client declared the capability `ask` needs in its `initialize`. An `elicitation` capability with
/// neither `form` nor `url` means form only (2025-06-18 clients).
pub(crate) fn declared(ctx: &RequestContext<RoleServer>, ask: Ask) -> bool {
    let Some(info) = ctx.peer.peer_info() else { return false };
    let Ok(capabilities) = serde_json::to_value(&info.capabilities) else { return false };
    let (key, mode) = ask.capability();
    let Some(capability) = capabilities.get(key).filter(|c| c.is_object()) else { return false };
    match mode {
        None => true,
        Some(mode) => {
            let bare = capability.get("form").is_none() && capability.get("url").is_none();
            capability.get(mode).is_some() || (bare && mode == "form")
        }
    }
}

fn params(ask: Ask, fault: Option<AskVariant>, elicitation_id: &str) -> Value {
    match ask {
        Ask::ElicitationForm => {
            let schema = if fault == Some(AskVariant::OddSchema) {
                // Elicitation schemas are flat objects of primitive properties; each of these breaks that rule.
                json!({
                    "type": "object",
                    "properties": {
                        "target": {"type": "object", "properties": {"path": {"type": "string"}}},
                        "files": {"type": "array", "items": {"type": "object"}},
                        "confirm": {"$ref": "#/definitions/confirm"}
                    },
                    "definitions": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"]
                })
            } else {
                json!({
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean", "description": "Go ahead?"}},
                    "required": ["confirm"]
                })
            };
            json!({"mode": "form", "message": "faultlab asks: confirm this call?", "requestedSchema": schema})
        }
        Ask::ElicitationUrl => json!({
            "mode": "url",
            "message": "faultlab asks: confirm this call on the page",
            "url": ELICITATION_URL,
            "elicitationId": elicitation_id
        }),
        Ask::Sampling => json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "faultlab asks: say ok"}}],
            "maxTokens": 16
        }),
        Ask::Roots => json!({}),
    }
}

pub(crate) struct Answer {
    pub(crate) outcome: &'static str,
    pub(crate) answer: Option<Value>,
}

/// Sends one request through rmcp's peer and waits at most `timeout` for the answer, which it classifies.
pub(crate) async fn ask(ctx: &RequestContext<RoleServer>, method: &str, params: Value, timeout: Duration) -> Answer {
    let request = ServerRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let sent = ctx.peer.send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout)).await;
    let result = match sent {
        Ok(handle) => handle.await_response().await,
        Err(err) => Err(err),
    };
    match result {
        Ok(result) => {
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            Answer { outcome: classify(method, &value), answer: Some(value) }
        }
        Err(ServiceError::Timeout { .. }) => Answer { outcome: "timeout", answer: None },
        Err(ServiceError::McpError(error)) => Answer { outcome: "error", answer: serde_json::to_value(&error).ok() },
        Err(other) => Answer { outcome: "error", answer: Some(Value::from(other.to_string())) },
    }
}

/// What a result says, checked against what the method's result must hold; anything else is `invalid_answer`.
fn classify(method: &str, result: &Value) -> &'static str {
    match method {
        "elicitation/create" => match result.get("action").and_then(Value::as_str) {
            Some("accept") if result.get("content").is_none_or(Value::is_object) => "accept",
            Some("decline") => "decline",
            Some("cancel") => "cancel",
            _ => "invalid_answer",
        },
        "sampling/createMessage" => {
            let ok = result.get("role").and_then(Value::as_str).is_some() && result.get("content").is_some();
            if ok { "answered" } else { "invalid_answer" }
        }
        _ => {
            let ok = result.get("roots").and_then(Value::as_array).is_some_and(|roots| {
                roots.iter().all(|r| r.get("uri").and_then(Value::as_str).is_some_and(|u| u.starts_with("file://")))
            });
            if ok { "answered" } else { "invalid_answer" }
        }
    }
}

fn record(
    scope: &crate::scope::Scope,
    call: &faultlab_wire::MessageId,
    args: AskArgs,
    outcome: &str,
    answer: Option<Value>,
) {
    scope.engine.recorder().record(Event::AskBack {
        request_id: call.to_value(),
        method: args.ask.method().to_owned(),
        fault: args.fault.map_or("none", AskVariant::as_str).to_owned(),
        outcome: outcome.to_owned(),
        answer,
    });
}

fn report(body: Value, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(body.to_string())];
    if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }
}
