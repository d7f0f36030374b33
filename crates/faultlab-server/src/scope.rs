//! What a tool handler needs to know about the connection its request came on.

use crate::http::sessions::SessionHandle;
use faultlab_engine::Engine;
use std::sync::Arc;

/// The transport and era a request arrived on; decides which tools exist and how faults reach the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// One stdio connection (either era).
    Stdio,
    /// Streamable HTTP without a session: every 2026-07-28 request, and legacy requests that carry no session.
    HttpStateless,
    /// Streamable HTTP inside a 2025-11-25 session.
    HttpSession,
}

/// A request's connection scope: its fault engine, its transport, and (in a legacy HTTP session) its session.
///
/// stdio has one scope for the whole connection; the HTTP front builds one per request (sharing the session's
/// engine when there is a session) and hands it to the handler through the request's extensions.
#[derive(Clone)]
pub struct Scope {
    pub engine: Arc<Engine>,
    pub transport: TransportKind,
    pub session: Option<SessionHandle>,
}

impl Scope {
    /// The scope of the request behind `ctx`: the HTTP front puts it in the request's extensions; a stdio server
    /// passes its connection-wide `fallback`.
    pub fn of(
        ctx: &rmcp::service::RequestContext<rmcp::RoleServer>,
        fallback: Option<&Scope>,
    ) -> Result<Scope, rmcp::ErrorData> {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Scope>().cloned())
            .or_else(|| fallback.cloned())
            .ok_or_else(|| rmcp::ErrorData::internal_error("request arrived without a connection scope", None))
    }
}
