//! `protocol_ping_liveness`: one server-to-client JSON-RPC `ping` during a tool call.

use super::{FaultServer, check_range, request_id, tool_error};
use crate::scope::TransportKind;
use faultlab_engine::FaultKind;
use faultlab_engine::recorder::{Event, PingOutcome, PingResult, TransportEventKind, TransportOutcome};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ClientResult, ContentBlock, ErrorCode, PingRequest, ProtocolVersion, ServerRequest};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// Ceiling for each of the tool's durations, in ms.
const MAX_MS: u64 = 30_000;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LivenessArgs {
    /// Wait this long before pinging, in ms (0 to 30000).
    pub ping_after_ms: u64,
    /// How long the client has to answer the ping, in ms (1 to 30000).
    pub liveness_timeout_ms: u64,
    /// After a successful ping, wait this long before answering, in ms (0 to 30000).
    #[serde(default)]
    pub completion_delay_ms: u64,
    /// On a failed ping, close this request's transport (HTTP: abort the response stream; stdio cannot, and
    /// reports closure_unavailable).
    #[serde(default)]
    pub close_on_failure: bool,
}

#[tool_router(router = liveness_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "After pingAfterMs, send the client one JSON-RPC ping related to this request and wait \
                          livenessTimeoutMs for the answer. Outcomes: success, unsupported (2026-07-28 has no \
                          ping), invalid_response, timeout. With closeOnFailure, a failed ping closes this \
                          request's transport where that is possible.")]
    async fn protocol_ping_liveness(
        &self,
        Parameters(args): Parameters<LivenessArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        for (name, value, min) in [
            ("pingAfterMs", args.ping_after_ms, 0),
            ("livenessTimeoutMs", args.liveness_timeout_ms, 1),
            ("completionDelayMs", args.completion_delay_ms, 0),
        ] {
            if let Err(error) = check_range(name, value, min, MAX_MS) {
                return Ok(tool_error(error));
            }
        }
        let scope = self.scope(&ctx)?;
        if !wait(&ctx, args.ping_after_ms).await {
            return Ok(tool_error("The request was cancelled."));
        }
        let ping = ping_client(&ctx, Duration::from_millis(args.liveness_timeout_ms)).await;
        let transport = match (ping, args.close_on_failure, scope.transport) {
            (PingResult::Success, _, _) | (_, false, _) => TransportEventKind::Retained,
            // One stdio connection carries every request: closing it for one failed ping would kill the others.
            (_, true, TransportKind::Stdio) => TransportEventKind::ClosureUnavailable,
            (_, true, _) => TransportEventKind::ClosureRequested,
        };
        let id = request_id(&ctx);
        scope.engine.recorder().record(Event::ProtocolPingLiveness {
            request_id: id.to_value(),
            protocol_ping: PingOutcome { outcome: ping },
            transport: TransportOutcome { outcome: transport },
        });
        if ping == PingResult::Success {
            if !wait(&ctx, args.completion_delay_ms).await {
                return Ok(tool_error("The request was cancelled."));
            }
            return Ok(report("protocol_ping_succeeded", ping, TransportEventKind::Retained, false));
        }
        if transport == TransportEventKind::ClosureRequested {
            // The wire layer aborts this response instead of sending it and records `closed`.
            if let Err(err) = scope.engine.arm(id, FaultKind::Disconnect(faultlab_engine::catalogue::Disconnect {})) {
                scope.engine.recorder().record(Event::Transport {
                    outcome: TransportEventKind::CloseFailed,
                    request_id: None,
                    detail: Some(err.to_string()),
                });
                return Ok(report("protocol_ping_failed", ping, TransportEventKind::CloseFailed, true));
            }
            return Ok(report("protocol_ping_failed", ping, TransportEventKind::Closed, true));
        }
        Ok(report("protocol_ping_failed", ping, transport, true))
    }
}

/// Sleeps `ms`, or returns false early if the request is cancelled.
async fn wait(ctx: &RequestContext<RoleServer>, ms: u64) -> bool {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => true,
        () = ctx.ct.cancelled() => false,
    }
}

async fn ping_client(ctx: &RequestContext<RoleServer>, timeout: Duration) -> PingResult {
    // 2026-07-28 removed ping and forbids server-to-client requests; there is nothing to send.
    if ctx.protocol_version().is_some_and(|v| !v.has_initialize() || v == ProtocolVersion::V_2026_07_28) {
        return PingResult::Unsupported;
    }
    let request = ServerRequest::PingRequest(PingRequest::default());
    let handle = match ctx.peer.send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout)).await {
        Ok(handle) => handle,
        Err(err) => return classify(err),
    };
    match handle.await_response().await {
        Ok(ClientResult::EmptyResult(_)) => PingResult::Success,
        Ok(_) => PingResult::InvalidResponse,
        Err(err) => classify(err),
    }
}

fn classify(err: ServiceError) -> PingResult {
    match err {
        ServiceError::Timeout { .. } => PingResult::Timeout,
        ServiceError::McpError(e) if e.code == ErrorCode::METHOD_NOT_FOUND => PingResult::Unsupported,
        _ => PingResult::InvalidResponse,
    }
}

fn report(status: &str, ping: PingResult, transport: TransportEventKind, is_error: bool) -> CallToolResult {
    let body = json!({"status": status, "protocolPing": {"outcome": ping}, "transport": {"outcome": transport}});
    let content = vec![ContentBlock::text(body.to_string())];
    if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }
}
