//! `ping`, `delay`, `hang`, `disconnect`: health, slowness, silence and a dropped connection.

use super::{FaultServer, check_range, request_id, text_result, tool_error};
use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::{Disconnect, MAX_LATENCY_MS};
use faultlab_engine::recorder::Event;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// Longest `delay`, in ms: the catalogue's `latency` ceiling.
pub const MAX_DELAY_MS: u64 = MAX_LATENCY_MS;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DelayArgs {
    /// How long to wait before answering, in milliseconds (0 to 30000).
    pub delay_ms: u64,
}

#[tool_router(router = basic_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Check whether the MCP server is responsive.")]
    async fn ping(&self) -> Result<CallToolResult, ErrorData> {
        let timestamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        Ok(text_result(json!({"status": "ok", "timestamp": timestamp}).to_string()))
    }

    #[tool(description = "Answer after delayMs milliseconds (0 to 30000). Cancelling the request stops the wait.")]
    async fn delay(
        &self,
        Parameters(args): Parameters<DelayArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(error) = check_range("delayMs", args.delay_ms, 0, MAX_DELAY_MS) {
            return Ok(tool_error(error));
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(args.delay_ms)) => {
                Ok(text_result(json!({"status": "delayed", "delayMs": args.delay_ms}).to_string()))
            }
            () = ctx.ct.cancelled() => Ok(tool_error("The request was cancelled.")),
        }
    }

    #[tool(description = "Never answer. The request stays open until the client cancels it or gives up.")]
    async fn hang(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        // The handler performs this fault itself (nothing is armed on the reply): the diagnostics still say the
        // call arrived and what it does.
        let recorder = self.scope(&ctx)?.engine.recorder().clone();
        recorder.record(Event::FaultArmed { fault: "hang".into(), request_id: request_id(&ctx).to_value() });
        ctx.ct.cancelled().await;
        // Nobody reads this: rmcp drops responses to cancelled requests. It exists so the handler ends.
        Ok(tool_error("The request was cancelled."))
    }

    #[tool(description = "Drop the connection instead of answering. stdio: the server closes stdout and exits. \
                          HTTP: this response stream is aborted; the server keeps listening.")]
    async fn disconnect(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(&ctx, FaultKind::Disconnect(Disconnect {}), "transport disconnected".into())
    }
}
