//! Where the proxy sends what the client says: [`child`] (a stdio server it starts, restartable for an outage),
//! [`http`] (a Streamable HTTP endpoint, from the stdio front), [`in_process`] (a server on a task of its own over
//! an in-memory pipe, e.g. the rmcp server), [`bridge`] (a stdio server behind the HTTP front), [`bridged`] (one such
//! server per session the HTTP front gives out).

pub mod bridge;
pub mod bridged;
pub mod child;
pub mod http;
pub mod in_process;
