//! `faultlab proxy`: stands between an MCP client and a real MCP server and puts faults on the wire.
//!
//! - [`rules`]: the rules file (strict YAML or JSON): which request gets which catalogue fault, when, how often,
//!   and in which mode (`instead` of the upstream, `before` forwarding, or `after` the upstream executed).
//! - [`front`]: where clients connect: stdio, or Streamable HTTP.
//! - [`relay`]: what the stdio front shares with every upstream: rules, the engine, the outlet, the trajectory;
//!   every frame passes byte for byte unless a rule fires, and every frame is recorded.
//! - [`upstream`]: where requests go: a child process, an HTTP endpoint, the bridge behind the HTTP front.
//! - [`remote`]: an HTTP upstream anywhere: TLS (rustls, system roots, `--upstream-ca`), the user's headers,
//!   credentials from the environment, kept out of everything the proxy writes.
//! - [`recording`]: a recording as the upstream (`--replay`), for the stdio and the HTTP front: each request
//!   answered with the recorded reply to the same call.
//! - [`control`]: the opt-in live control API (list, add, remove, reset rules while traffic flows).
//! - [`trajectory`]: the frame log and its ledger, shared by both fronts (written by
//!   `faultlab_engine::trajectory::Writer`).

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod control;
pub mod front;
pub mod recording;
pub mod relay;
pub mod remote;
pub mod rules;
pub mod trajectory;
pub mod upstream;
