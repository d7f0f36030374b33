//! Where clients reach the proxy: [`stdio`] (lines on stdin/stdout, through the [`relay`](crate::relay) to any
//! upstream), [`unix`] (every connection to a Unix socket a stdio session with an upstream of its own, all sharing
//! the run's rule state) and [`http`] (Streamable HTTP, to an HTTP upstream or the stdio
//! [`bridge`](crate::upstream::bridge)).

pub mod http;
pub mod http_sessions;
pub mod stdio;
pub mod unix;
