//! `session_lifecycle`: the session is lost or refused afterwards the way real servers do it (2025-11-25 HTTP).
//!
//! **What it does on the wire.** HTTP, in a session: the reply passes unchanged; then, by `variant`:
//! `unknown_400`: the session is forgotten and its id is answered **400** (JSON-RPC -32600, "Bad Request: No valid
//! session ID provided") instead of 404; `get_404`: the session's `GET` stream is answered 404 (-32001) while its
//! POSTs are served; `restart`: every session is forgotten at once (all their ids get 404); `reinit_404`: the
//! session is forgotten and the next 3 `initialize` requests are answered 404 too. stdio has no session: the
//! reply passes unchanged and the trajectory says the fault was skipped.
//!
//! **What a robust client should do.** Treat 400 and 404 on a known session as a lost session and initialise once
//! more; live without the GET stream; bound its re-initialisations (give up after a failed one, not loop).
//!
//! **Example.** `{"type": "session_lifecycle", "variant": "unknown_400"}`
//!
//! **How it is graded.** The faulted call gets its result; the next call shows whether the client recovered (one
//! new `initialize`, then success) or looped or failed.

use super::{Applied, Reply};

/// How many `initialize` requests `reinit_404` answers 404 (a client should give up after one failed retry).
pub const REFUSED_INITIALIZES: usize = 3;

/// What happens to the session after the reply.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema, strum::IntoStaticStr,
)]
pub enum LifecycleVariant {
    /// Forget the session; its id then gets 400 instead of 404.
    #[serde(rename = "unknown_400")]
    #[strum(serialize = "unknown_400")]
    Unknown400,
    /// Keep the session, but answer its GET stream 404.
    #[serde(rename = "get_404")]
    #[strum(serialize = "get_404")]
    Get404,
    /// Forget every session at once (a server restart).
    #[serde(rename = "restart")]
    #[strum(serialize = "restart")]
    Restart,
    /// Forget the session and answer the next initializes 404 too.
    #[serde(rename = "reinit_404")]
    #[strum(serialize = "reinit_404")]
    Reinit404,
}

impl LifecycleVariant {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

fault! {
    /// After the reply, lose or refuse the session as `variant` says (unknown_400, get_404, restart, reinit_404).
    pub struct SessionLifecycle {
        pub variant: LifecycleVariant,
    }
    category: Transport,
    effect: Result,
    serve_tool: Some(ServeTool::sessions("session_lifecycle")),
    examples: [
        r#"{"type": "session_lifecycle", "variant": "unknown_400"}"#,
        r#"{"type": "session_lifecycle", "variant": "get_404"}"#,
        r#"{"type": "session_lifecycle", "variant": "restart"}"#,
        r#"{"type": "session_lifecycle", "variant": "reinit_404"}"#,
    ],
    apply: |_, reply, _| on_sessions_only(reply),
}

/// What a session fault does to the reply itself: nothing; off a session front it is skipped, said so.
fn on_sessions_only(reply: Reply<'_>) -> Applied {
    Applied::skipped(reply, "a fault of Streamable HTTP sessions; it acts on the requests after this reply".into())
}
