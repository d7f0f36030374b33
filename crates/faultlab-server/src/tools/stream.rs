//! The stream fault tools (2025-11-25 HTTP sessions only): the session's front reads the call's arguments
//! ([`crate::http::stream::plan_for`]) and cuts or replays the response stream as they say; the handler sends the
//! progress notifications that precede the cut (when the request asked for progress) and returns its result,
//! which stays in the stream's log for a resuming `GET`.

use super::{FaultServer, check_range, request_id, text_result, tool_error};
use crate::http::stream::{MAX_EMPTY_RESUMES, MAX_EVENTS_BEFORE_CUT, MAX_RETRY_MS};
use faultlab_engine::FaultKind;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamCutArgs {
    /// `true` (default): every event carries an id and the stream is primed, so it can be resumed. `false`: no id
    /// anywhere, no priming event.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub ids: Option<bool>,
    /// Progress notifications sent before the cut (0 to 16; sent only if the request has a progressToken).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub after_events: Option<u64>,
    #[serde(flatten)]
    pub retry: RetryArgs,
}

/// The priming event's `retry:`, which every stream tool but `stream_retry` (absent there: no `retry:` line)
/// takes with the same range and default.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryArgs {
    /// The priming event's `retry:` in milliseconds (0 to 86400000; default 3000).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub retry_ms: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamCutAgainArgs {
    #[serde(flatten)]
    pub retry: RetryArgs,
    /// How many resumes in a row are closed before any event with an id (1 to 1000; default 1); the next one
    /// replays the result.
    #[serde(default)]
    #[schemars(with = "u64")]
    pub resumes: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamRetryArgs {
    /// The priming event's `retry:` in milliseconds (0 to 86400000); absent: no `retry:` line.
    #[serde(default)]
    #[schemars(with = "u64")]
    pub retry_ms: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeRefusedArgs {
    /// The status the resuming GET gets: 404 or 405.
    pub status: u16,
    #[serde(flatten)]
    pub retry: RetryArgs,
}

#[tool_router(router = stream_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Close this response stream after the priming event and `afterEvents` progress \
                          notifications, before the result (ids: false sends no event ids, so it cannot be \
                          resumed). The result is kept for a GET with Last-Event-ID.")]
    async fn stream_cut(
        &self,
        Parameters(args): Parameters<StreamCutArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let events = args.after_events.unwrap_or(0);
        if let Err(message) =
            check_range("afterEvents", events, 0, MAX_EVENTS_BEFORE_CUT).and_then(|()| check_retry(args.retry.retry_ms))
        {
            return Ok(tool_error(message));
        }
        progress(&ctx, events).await;
        Ok(text_result(format!("stream cut after {events} events, ids {}", args.ids.unwrap_or(true))))
    }

    #[tool(description = "Close this response stream after its priming event; the first `resumes` GETs \
                          resuming it (1 to 1000, default 1) are each closed again before any event with an id. \
                          The next resume replays the result.")]
    async fn stream_cut_again(
        &self,
        Parameters(args): Parameters<StreamCutAgainArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let resumes = args.resumes.unwrap_or(1);
        if let Err(message) = check_range("resumes", resumes, 1, u64::from(MAX_EMPTY_RESUMES))
            .and_then(|()| check_retry(args.retry.retry_ms))
        {
            return Ok(tool_error(message));
        }
        Ok(text_result(if resumes == 1 {
            "stream cut, and its first resume cut again".to_owned()
        } else {
            format!("stream cut, and its first {resumes} resumes cut again")
        }))
    }

    #[tool(description = "Close this response stream after its priming event, whose retry: is `retryMs` \
                          (0 to 86400000) or absent.")]
    async fn stream_retry(&self, Parameters(args): Parameters<StreamRetryArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(cut(args.retry_ms, None, "stream cut after its priming event").await)
    }

    #[tool(description = "Send one progress notification with an explicit empty `id:` line, then close the \
                          stream before the result (needs a progressToken).")]
    async fn empty_event_id(
        &self,
        Parameters(args): Parameters<RetryArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(cut(args.retry_ms, Some(&ctx), "stream cut after an event with an empty id").await)
    }

    #[tool(description = "Close this stream after one progress notification (needs a progressToken); the first \
                          GET resuming it replays the events already seen again before the result.")]
    async fn replay_duplicate(
        &self,
        Parameters(args): Parameters<RetryArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(cut(args.retry_ms, Some(&ctx), "stream cut; its resume replays seen events").await)
    }

    #[tool(description = "Close this stream after its priming event; the first GET resuming it first sends the \
                          last message of another stream of this session.")]
    async fn replay_foreign(&self, Parameters(args): Parameters<RetryArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(cut(args.retry_ms, None, "stream cut; its resume replays another stream's event").await)
    }

    #[tool(description = "2026-07-28 (and any HTTP request): send one progress notification (needs a \
                          progressToken), then break the response stream before the result. Nothing can be \
                          resumed: the request is lost, and a client must re-issue it with a new id.")]
    async fn stream_lost(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.lose_stream(ctx).await
    }

    #[tool(description = "Close this stream after its priming event; the first GET resuming it is answered with \
                          `status` (404 or 405). The next resume replays the result.")]
    async fn resume_refused(
        &self,
        Parameters(args): Parameters<ResumeRefusedArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(message) = check_retry(args.retry.retry_ms) {
            return Ok(tool_error(message));
        }
        if args.status != 404 && args.status != 405 {
            return Ok(tool_error("status must be 404 or 405"));
        }
        Ok(text_result(format!("stream cut; its resume is answered {}", args.status)))
    }
}

fn check_retry(retry_ms: Option<u64>) -> Result<(), String> {
    retry_ms.map_or(Ok(()), |ms| check_range("retryMs", ms, 0, MAX_RETRY_MS))
}

/// The result of a stream tool whose only argument is `retryMs` (the front cuts the stream as the tool's name
/// says): an error for a `retryMs` out of range; else, after one progress notification when `progress_on` is the
/// request, `done`.
async fn cut(retry_ms: Option<u64>, progress_on: Option<&RequestContext<RoleServer>>, done: &str) -> CallToolResult {
    if let Err(message) = check_retry(retry_ms) {
        return tool_error(message);
    }
    if let Some(ctx) = progress_on {
        progress(ctx, 1).await;
    }
    text_result(done)
}

impl FaultServer {
    /// `stream_lost` (see its tool description): progress first, so the answer is a stream whose headers and
    /// first event are out, then the reply is replaced by an abort, as `disconnect` does it.
    async fn lose_stream(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        progress(&ctx, 1).await;
        let disconnect = FaultKind::Disconnect(faultlab_engine::catalogue::Disconnect {});
        match self.scope(&ctx)?.engine.arm_as(request_id(&ctx), disconnect, "stream_lost") {
            Ok(()) => Ok(text_result("the response stream was lost before this result")),
            Err(err) => Ok(tool_error(err.to_string())),
        }
    }
}

/// Sends `count` progress notifications for this request, if it asked for progress (only they travel on the
/// request's own stream).
async fn progress(ctx: &RequestContext<RoleServer>, count: u64) {
    let Some(token) = ctx.meta.get_progress_token() else { return };
    for step in 0..count {
        let param = ProgressNotificationParam::new(token.clone(), step as f64).with_total(count as f64);
        let _ = ctx.peer.notify_progress(param).await;
    }
}
