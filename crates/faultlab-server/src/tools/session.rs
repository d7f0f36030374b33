//! `session_loss`: the legacy HTTP session disappears.

use super::{FaultServer, request_id, text_result, tool_error};
use crate::http::sessions::LossActivation;
use faultlab_engine::FaultKind;
use faultlab_engine::recorder::Event;
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
        let disconnect = FaultKind::Disconnect(faultlab_engine::catalogue::Disconnect {});
        match args.activation {
            // The response is cut as `disconnect` cuts it, recorded (armed, activated) as `session_loss`.
            LossActivation::DuringRequest => match scope.engine.arm_as(request_id(&ctx), disconnect, "session_loss") {
                Ok(()) => Ok(text_result(text)),
                Err(err) => Ok(tool_error(err.to_string())),
            },
            // Nothing is armed on the reply (it is delivered whole); the diagnostics still record the fault.
            LossActivation::AfterResponse => {
                let request_id = request_id(&ctx).to_value();
                scope.engine.recorder().record(Event::FaultArmed { fault: "session_loss".into(), request_id });
                Ok(text_result(text))
            }
        }
    }
}
