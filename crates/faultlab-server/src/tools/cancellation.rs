//! `response_after_cancellation`: a result that arrives after the client cancelled.

use super::{FaultServer, request_id, text_result, tool_error};
use faultlab_engine::FaultKind;
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use std::time::Duration;

/// How long the tool waits for the client's cancellation before giving up (5 s).
pub const LATE_RESPONSE_DEADLINE: Duration = Duration::from_secs(5);

#[tool_router(router = cancellation_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Wait for this request to be cancelled, then send a result for it anyway. Sends one \
                          progress notification first if the request asked for progress. Fails if no cancellation \
                          arrives within 5 seconds.")]
    async fn response_after_cancellation(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let scope = self.scope(&ctx)?;
        if ctx.ct.is_cancelled() {
            return Ok(tool_error("The request was already cancelled before the fault could be armed."));
        }
        let id = request_id(&ctx);
        // The wire layer writes the late result itself when it sees the cancel go by: rmcp would drop any
        // response to a cancelled request, and this one has to reach the wire.
        if let Err(err) =
            scope.engine.arm(id.clone(), FaultKind::LateResponse(faultlab_engine::catalogue::LateResponse {}))
        {
            return Ok(tool_error(err.to_string()));
        }
        if let Some(token) = ctx.meta.get_progress_token() {
            let progress = ProgressNotificationParam::new(token, 0.0).with_total(1.0);
            let _ = ctx.peer.notify_progress(progress).await;
        }
        match tokio::time::timeout(LATE_RESPONSE_DEADLINE, ctx.ct.cancelled()).await {
            // Swallowed on the wire (the late result already went out); rmcp drops it too.
            Ok(()) => Ok(text_result("cancelled")),
            Err(_) => {
                scope.engine.disarm(&id);
                Ok(tool_error(format!(
                    "Cancellation was not observed before the late-response deadline ({} ms).",
                    LATE_RESPONSE_DEADLINE.as_millis()
                )))
            }
        }
    }
}
