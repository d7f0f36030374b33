//! The fault tools, one file per family, combined into one rmcp tool router.
//!
//! Which tools a client sees depends on where it connects: `response_after_cancellation` needs a channel that
//! can still carry a reply after a cancel (stdio, legacy HTTP sessions); `session_loss` needs a session;
//! `http_status` needs HTTP. Everything else exists everywhere.

pub(crate) mod askback;
mod basic;
mod cancellation;
mod liveness;
mod progress;
mod session;
mod stream;
mod wire;

use crate::scope::{Scope, TransportKind};
use faultlab_engine::FaultKind;
use faultlab_wire::MessageId;
use rmcp::handler::server::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};
use std::sync::{Arc, OnceLock};

/// Tools that only exist on some transports, and where.
const STDIO_AND_SESSIONS: &[&str] = &["response_after_cancellation"];
const SESSIONS_ONLY: &[&str] = &["session_loss", "session_lifecycle"];
/// The stream fault tools cut and replay a session's resumable stream.
const STREAM_TOOLS: &[&str] = crate::http::stream::STREAM_TOOLS;
const HTTP_ONLY: &[&str] = &["http_status", "html_page", "not_jsonrpc", "stream_lost"];

/// The faulty MCP server. One instance per stdio connection, per legacy HTTP session, or per stateless request.
#[derive(Clone)]
pub struct FaultServer {
    /// Built once per transport kind and shared: a stateless HTTP server builds a `FaultServer` per request, and
    /// assembling and validating the routes each time cost about half of a request's CPU.
    router: Arc<ToolRouter<Self>>,
    /// The scope for transports that have one connection-wide scope (stdio). HTTP requests bring theirs in the
    /// request extensions instead.
    scope: Option<Scope>,
}

impl FaultServer {
    /// A server for one stdio connection.
    pub fn stdio(scope: Scope) -> Self {
        Self { router: Self::shared_router(TransportKind::Stdio), scope: Some(scope) }
    }

    /// A server for HTTP requests of `transport` kind; each request's scope comes from its extensions.
    pub fn http(transport: TransportKind) -> Self {
        Self { router: Self::shared_router(transport), scope: None }
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
            + Self::progress_router();
        let absent: &[&[&str]] = match transport {
            TransportKind::Stdio => &[SESSIONS_ONLY, HTTP_ONLY, STREAM_TOOLS],
            TransportKind::HttpStateless => &[STDIO_AND_SESSIONS, SESSIONS_ONLY, STREAM_TOOLS],
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new(crate::SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions("MCP Failure Lab: every tool fails on purpose, in a documented way.")
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
