//! Where the proxy sends what the client says: [`child`] (a stdio server it starts, restartable for an outage),
//! [`http`] (a Streamable HTTP endpoint, from the stdio front), [`bridge`] (a stdio server behind the HTTP front).

pub mod bridge;
pub mod child;
pub mod http;
