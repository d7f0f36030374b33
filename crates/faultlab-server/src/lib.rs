//! The faulty MCP server: rmcp for the protocol, the project's wire layer for the faults.
//!
//! Read in this order:
//! - [`tools`]: the fault tools. Each handler either misbehaves itself (sleeps, hangs, pings the client) or arms a
//!   catalogue fault on its own response through its connection's [`Scope`].
//! - [`stdio`]: rmcp's side of the stdio wire: the server runs in process behind the lab's stdio front and relay
//!   (`faultlab_proxy::front::stdio::serve_in_process`), which show every line to the fault engine.
//! - [`http`]: the Streamable HTTP front: validation (path, Host, Origin, body size), routing between the
//!   stateless service (2026-07-28 and sessionless legacy requests) and legacy sessions, the session registry
//!   (cap, idle reclaim, loss), and the response-body middleware that applies faults to JSON bodies and SSE events.
//! - [`probe`]: the `lab_probe` harness mode chosen by `LAB_SCENARIO`.
//! - [`workspace`]: the built-in workspace server for `faultlab eval`: file tools confined to one folder, every
//!   side effect appended to a ledger.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod http;
pub mod probe;
pub mod scope;
pub mod stdio;
pub mod tools;
pub mod workspace;

/// What `stdio::serve_lines` serves: any rmcp server (the binary names it without depending on rmcp).
pub use rmcp::ServerHandler;
pub use scope::{Scope, TransportKind};
pub use tools::FaultServer;

/// The name the server reports in `serverInfo`.
pub const SERVER_NAME: &str = "faultlab";
