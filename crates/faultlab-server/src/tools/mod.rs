//! The fault tools, one file per family, combined into one rmcp tool router.
//!
//! Which tools a client sees depends on where it connects: `response_after_cancellation` needs a channel that
//! can still carry a reply after a cancel (stdio, legacy HTTP sessions); `session_loss` needs a session;
//! `http_status` needs HTTP. Everything else exists everywhere.
//!
//! The server also offers a few plain resources and prompts (see `offered`), so that `list_pagination` can break
//! the pages of `resources/list` and `prompts/list` as it does those of `tools/list`.

pub(crate) mod askback;
mod basic;
mod cancellation;
mod liveness;
mod offered;
mod progress;
mod rounds;
mod session;
mod stream;
mod surface;
mod tasks;
mod wire;

pub use surface::{PAGING_NAMES, PROBE, PROBE_RENAMED, Paging, structured_schema};

use crate::scope::{Scope, TransportKind};
use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::ListName;
use faultlab_engine::catalogue::list_drift::DRIFT_PROPERTY;
use faultlab_wire::MessageId;
use rmcp::handler::server::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, CancelTaskParams, ContentBlock, CustomRequest, CustomResult, GetTaskParams, GetTaskResult,
    Implementation, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};
use std::sync::{Arc, OnceLock};

/// Tools that only exist on some transports, and where.
const STDIO_AND_SESSIONS: &[&str] = &["response_after_cancellation"];
const SESSIONS_ONLY: &[&str] = &["session_loss", "session_lifecycle"];
/// The stream fault tools cut and replay a session's resumable stream.
const STREAM_TOOLS: &[&str] = crate::http::stream::STREAM_TOOLS;
const HTTP_ONLY: &[&str] = &["http_status", "html_page", "not_jsonrpc", "stream_lost"];
/// The tool surface's drift and pagination tools change every later listing: they need a connection that
/// outlives a call.
const STANDING_TOOLS: &[&str] = surface::STANDING_TOOLS;

/// The faulty MCP server. One instance per stdio connection, per legacy HTTP session, or per stateless request.
#[derive(Clone)]
pub struct FaultServer {
    /// Built once per transport kind and shared: a stateless HTTP server builds a `FaultServer` per request, and
    /// assembling and validating the routes each time cost about half of a request's CPU.
    router: Arc<ToolRouter<Self>>,
    /// The scope for transports that have one connection-wide scope (stdio). HTTP requests bring theirs in the
    /// request extensions instead.
    scope: Option<Scope>,
    /// The connection's tasks (a stdio connection's, a session's; stateless requests share the process's).
    tasks: Arc<tasks::TaskBook>,
    /// The connection's multi-round-trip handles (stateless requests share the process's).
    rounds: Arc<rounds::RoundBook>,
}

impl FaultServer {
    /// A server for one stdio connection.
    pub fn stdio(scope: Scope) -> Self {
        Self {
            router: Self::shared_router(TransportKind::Stdio),
            scope: Some(scope),
            tasks: Arc::new(tasks::TaskBook::new(tasks::MAX_TASKS)),
            rounds: Arc::new(rounds::RoundBook::new(rounds::MAX_ROUNDS)),
        }
    }

    /// A server for HTTP requests of `transport` kind; each request's scope comes from its extensions.
    pub fn http(transport: TransportKind) -> Self {
        let (tasks, rounds) = match transport {
            TransportKind::HttpStateless => (tasks::TaskBook::stateless(), rounds::RoundBook::stateless()),
            _ => {
                (Arc::new(tasks::TaskBook::new(tasks::MAX_TASKS)), Arc::new(rounds::RoundBook::new(rounds::MAX_ROUNDS)))
            }
        };
        Self { router: Self::shared_router(transport), scope: None, tasks, rounds }
    }

    fn shared_router(transport: TransportKind) -> Arc<ToolRouter<Self>> {
        static ROUTERS: [OnceLock<Arc<ToolRouter<FaultServer>>>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let slot = match transport {
            TransportKind::Stdio => 0,
            TransportKind::HttpStateless => 1,
            TransportKind::HttpSession => 2,
        };
        ROUTERS[slot].get_or_init(|| Arc::new(Self::router_for(transport))).clone()
    }

    fn router_for(transport: TransportKind) -> ToolRouter<Self> {
        let mut router = Self::basic_router()
            + Self::wire_router()
            + Self::cancellation_router()
            + Self::session_router()
            + Self::liveness_router()
            + Self::stream_router()
            + Self::askback_router()
            + Self::progress_router()
            + Self::surface_router()
            + Self::tasks_router()
            + Self::rounds_router();
        let absent: &[&[&str]] = match transport {
            TransportKind::Stdio => &[SESSIONS_ONLY, HTTP_ONLY, STREAM_TOOLS],
            TransportKind::HttpStateless => &[STDIO_AND_SESSIONS, SESSIONS_ONLY, STREAM_TOOLS, STANDING_TOOLS],
            TransportKind::HttpSession => &[],
        };
        for name in absent.iter().flat_map(|names| names.iter()) {
            router.remove_route(name);
        }
        router
    }

    fn scope(&self, ctx: &RequestContext<RoleServer>) -> Result<Scope, ErrorData> {
        Scope::of(ctx, self.scope.as_ref())
    }

    fn arm_own_response(
        &self,
        ctx: &RequestContext<RoleServer>,
        fault: FaultKind,
        text: String,
    ) -> Result<CallToolResult, ErrorData> {
        arm_own_response(self.scope.as_ref(), ctx, fault, text)
    }
}

/// Arms `fault` on this request's own response, in the request's scope (or the server's `connection` scope, see
/// [`Scope::of`]), and returns `text` as the nominal result, which the fault then changes on its way out. Arming
/// errors (too many pending faults) become a tool error the client can read.
pub(crate) fn arm_own_response(
    connection: Option<&Scope>,
    ctx: &RequestContext<RoleServer>,
    fault: FaultKind,
    text: String,
) -> Result<CallToolResult, ErrorData> {
    match Scope::of(ctx, connection)?.engine.arm(request_id(ctx), fault) {
        Ok(()) => Ok(text_result(text)),
        Err(err) => Ok(tool_error(err.to_string())),
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for FaultServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(crate::SERVER_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions("MCP Failure Lab: every tool fails on purpose, in a documented way.")
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.get_task_(request).await
    }

    async fn update_task(&self, request: UpdateTaskParams, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.update_task_(request).await
    }

    async fn cancel_task(&self, request: CancelTaskParams, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.cancel_task_(request).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let CustomRequest { method, params, .. } = request;
        self.custom_(&method, params, ctx).await
    }

    /// The router's tools, less those the server answers without listing them (a drifted list shows them).
    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        let mut tools = self.router.list_all();
        tools.retain(|tool| !surface::UNLISTED.contains(&tool.name.as_ref()));
        Ok(whole_list!(ListToolsResult, tools, &context))
    }

    /// The lab's resources, in one whole list (the standing pagination fault pages it on the wire).
    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(whole_list!(ListResourcesResult, offered::resources(), &context))
    }

    /// A resource, unless `tool_list_drift {list: resources}` took it from the list.
    async fn read_resource(
        &self,
        mut request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let engine = self.scope(&context)?.engine;
        surface::refuse_drifted(&engine, ListName::Resources, &request.uri, true)?;
        let asked = request.uri.clone();
        request.uri = surface::undrifted(&engine, ListName::Resources, &request.uri);
        let mut result = offered::read(&request)?;
        // A renamed resource answers under the URI it was read by.
        for contents in &mut result.contents {
            if let rmcp::model::ResourceContents::TextResourceContents { uri, .. } = contents {
                uri.clone_from(&asked);
            }
        }
        Ok(result.into())
    }

    /// The lab's prompts, in one whole list (the standing pagination fault pages it on the wire).
    async fn list_prompts(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(whole_list!(ListPromptsResult, offered::prompts(), &context))
    }

    /// A prompt, unless `tool_list_drift {list: prompts}` took it from the list or made an argument required.
    async fn get_prompt(
        &self,
        mut request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let engine = self.scope(&context)?.engine;
        let confirm = request.arguments.as_ref().is_some_and(|a| a.contains_key(DRIFT_PROPERTY));
        surface::refuse_drifted(&engine, ListName::Prompts, &request.name, confirm)?;
        request.name = surface::undrifted(&engine, ListName::Prompts, &request.name);
        offered::get(&request).map(Into::into)
    }
}

/// `items` as one whole list result of rmcp's type `$result` (no cursor); to a connection that speaks 2026-07-28 or
/// later with the cache hints rmcp lists with, which say the list may change at any time (fresh for 0 ms, public).
/// A macro: each list result is a type of its own in rmcp, with the same inherent constructors.
macro_rules! whole_list {
    ($result:ident, $items:expr, $context:expr) => {{
        let listed = rmcp::model::$result::with_all_items($items);
        if is_modern($context) {
            listed.with_ttl_ms(0).with_cache_scope(rmcp::model::CacheScope::Public)
        } else {
            listed
        }
    }};
}
use whole_list;

/// Whether the connection speaks 2026-07-28 or later (its list results carry cache hints).
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
}

/// What a tool's `tools/list` entry says of tasks (`execution.taskSupport`, 2025-11-25), which the server's
/// engines write into the listing (`Engine::listing_task_support`): `task_work` may run as a task (`optional`),
/// `task_only` must (`required`); every other tool lists nothing, which the spec reads as `forbidden`.
pub fn task_support(tool: &str) -> Option<&'static str> {
    match tool {
        "task_work" => Some("optional"),
        "task_only" => Some("required"),
        _ => None,
    }
}

/// The request's id as the wire layer keys it.
pub(crate) fn request_id(ctx: &RequestContext<RoleServer>) -> MessageId {
    let value = serde_json::to_value(&ctx.id).unwrap_or_default();
    MessageId::from_value(&value).unwrap_or_else(|| MessageId::from(0))
}

pub(crate) fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A tool-level error (`isError: true`): the call was understood and failed, and the model can read why.
pub(crate) fn tool_error(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// Checks an integer argument's range; the error names the argument and the range.
pub(crate) fn check_range(name: &str, value: u64, min: u64, max: u64) -> Result<(), String> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(format!("{name} must be an integer between {min} and {max}"))
    }
}
