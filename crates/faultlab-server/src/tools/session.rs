//! `session_loss`: the legacy HTTP session disappears; `session_lifecycle`: the other ways a server loses or refuses
//! it (see [`crate::http::lifecycle`]).

use super::{FaultServer, request_id, text_result, tool_error};
use crate::http::lifecycle::{IN_FLIGHT_MS, Variant};
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

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SessionLifecycleArgs {
    /// `unknown_400`: forgotten after this result, its id then gets 400. `get_404`: its GET stream gets 404, POSTs
    /// still work. `restart`: every session forgotten after this result. `reinit_404`: forgotten after this result,
    /// and the next 3 initialize requests get 404 too. `expire_in_flight`: forgotten now, this reply becomes a 404
    /// after 200 ms.
    pub variant: Variant,
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

    #[tool(description = "Lose or refuse this legacy HTTP session the way real servers do: variant unknown_400 \
                          (its id then gets 400, not 404), get_404 (only its GET stream gets 404), restart (every \
                          session is forgotten at once), reinit_404 (the next 3 initialize requests get 404 too) or \
                          expire_in_flight (it expires while this request is in flight; the reply becomes a 404).")]
    async fn session_lifecycle(
        &self,
        Parameters(args): Parameters<SessionLifecycleArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = self.scope(&ctx)?;
        let Some(session) = scope.session else {
            return Ok(tool_error("session_lifecycle requires a 2025-11-25 HTTP session."));
        };
        let Some(registry) = session.registry() else {
            return Ok(tool_error("the server is shutting down"));
        };
        let id = session.0.id.clone();
        let lost = match args.variant {
            Variant::Get404 => {
                session.refuse_get();
                Ok(())
            }
            Variant::Unknown400 => {
                session.lose(LossActivation::AfterResponse).map(|()| registry.lifecycle.answer_400(&id))
            }
            Variant::Reinit404 => {
                session.lose(LossActivation::AfterResponse).map(|()| registry.lifecycle.refuse_initializes())
            }
            Variant::Restart => session.lose(LossActivation::AfterResponse).map(|()| {
                registry.lifecycle.close_later(registry.take_all());
            }),
            Variant::ExpireInFlight => session.lose(LossActivation::AfterResponse),
        };
        if let Err(err) = lost {
            return Ok(tool_error(err.to_string()));
        }
        let text = format!("session lifecycle {} activated", args.variant.as_str());
        if args.variant == Variant::ExpireInFlight {
            // The request stays in flight after its session is gone; then its reply is the 404 a server answers
            // for a session it no longer knows (`session_expired_in_flight`).
            if let Err(err) = scope.engine.arm_as(request_id(&ctx), args.variant.fault(), "session_lifecycle") {
                return Ok(tool_error(err.to_string()));
            }
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_millis(IN_FLIGHT_MS)) => {}
                () = ctx.ct.cancelled() => {}
            }
            return Ok(text_result(text));
        }
        let request_id = request_id(&ctx).to_value();
        scope.engine.recorder().record(Event::FaultArmed { fault: "session_lifecycle".into(), request_id });
        Ok(text_result(text))
    }
}
