//! `progress_stream`: progress notifications every `everyMs` for a long call, then its result; or progress that
//! goes backwards, or progress for a token the client never sent.
//!
//! A client that resets its timeout on progress keeps waiting as long as the notifications come (which is what
//! the spec allows, within a hard maximum of its own); a client that does not times the call out at its base
//! timeout. Both are observable: the call's duration against the scenario's `timeoutMs`.

use super::{FaultServer, check_range, tool_error};
use faultlab_engine::catalogue::ProgressShape;
use faultlab_engine::catalogue::progress_stream::{
    MAX_EVERY_MS, MAX_PROGRESS_COUNT, ProgressStream, UNKNOWN_PROGRESS_TOKEN,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, NumberOrString, ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProgressArgs {
    /// Interval between notifications, in ms (1 to 30000); the first comes after one interval.
    pub every_ms: u64,
    /// How many notifications before the result (1 to 1000).
    pub count: u64,
    /// The catalogue's `progress_stream` shape: steady, backwards or unknown_token.
    #[serde(default)]
    pub shape: ProgressShape,
}

#[tool_router(router = progress_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Send count progress notifications, one every everyMs, then the result: shape steady (the \
                          request's progressToken, rising), backwards (falling values) or unknown_token (a token no \
                          request carried). Without a progressToken only unknown_token sends anything, but the call \
                          still takes count x everyMs.")]
    async fn progress_stream(
        &self,
        Parameters(args): Parameters<ProgressArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        for (name, value, max) in [("everyMs", args.every_ms, MAX_EVERY_MS), ("count", args.count, MAX_PROGRESS_COUNT)]
        {
            if let Err(error) = check_range(name, value, 1, max) {
                return Ok(tool_error(error));
            }
        }
        // The shape is the catalogue entry's (`progress_stream`), read in one place; its limits are checked above
        // under the tool's argument names.
        let fault = ProgressStream { shape: args.shape, every_ms: args.every_ms, count: args.count };
        let token = match args.shape {
            ProgressShape::UnknownToken => Some(ProgressToken(NumberOrString::String(UNKNOWN_PROGRESS_TOKEN.into()))),
            _ => ctx.meta.get_progress_token(),
        };
        let mut sent = 0u64;
        for step in 1..=args.count {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(args.every_ms)) => {}
                () = ctx.ct.cancelled() => return Ok(tool_error("The request was cancelled.")),
            }
            let Some(token) = token.clone() else { continue };
            let mut note = ProgressNotificationParam::new(token, fault.value(step) as f64);
            note.total = Some(args.count as f64);
            if ctx.peer.notify_progress(note).await.is_ok() {
                sent += 1;
            }
        }
        let body = json!({"status": "progress_done", "shape": args.shape, "sent": sent,
            "tokenGiven": ctx.meta.get_progress_token().is_some()});
        Ok(super::text_result(body.to_string()))
    }
}
