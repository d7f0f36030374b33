//! Where clients reach the proxy: [`stdio`] (lines on stdin/stdout, through the [`relay`](crate::relay) to any
//! upstream) and [`http`] (Streamable HTTP, to an HTTP upstream or the stdio [`bridge`](crate::upstream::bridge)).

pub mod http;
pub mod stdio;
