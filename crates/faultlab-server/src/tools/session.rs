//! `session_loss`: the legacy HTTP session disappears.

use super::{FaultServer, text_result, tool_error};
use crate::http::sessions::LossActivation;
use faultlab_engine::FaultKind;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SessionLossArgs {
    /// `during_request`: the session is removed and this response is interrupted (no result arrives).
    /// `after_response`: the session is removed; this result is delivered, then the session closes.
    pub activation: LossActivation,
}

#[tool_router(router = session_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Lose this legacy HTTP session: it leaves the registry at once, its id is never reused, \
                          and later requests with it get 404 (JSON-RPC -32001). Other sessions are unaffected.")]
    async fn session_loss(
        &self,
        Parameters(args): Parameters<SessionLossArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.scope(&ctx)?;
        let Some(session) = scope.session else {
            return Ok(tool_error("session_loss requires a 2025-11-25 HTTP session."));
        };
        if let Err(err) = session.lose(args.activation) {
            return Ok(tool_error(err.to_string()));
        }
        let text = format!("session loss activated {}", args.activation.as_str());
        match args.activation {
            LossActivation::DuringRequest => {
                self.arm_own_response(&ctx, FaultKind::Disconnect(faultlab_engine::catalogue::Disconnect {}), text)
            }
            LossActivation::AfterResponse => Ok(text_result(text)),
        }
    }
}
