//! `faultlab proxy`: stands between an MCP client and a real MCP server and puts faults on the wire.
//!
//! - [`rules`]: the rules file (strict YAML or JSON): which request gets which catalogue fault, when, how often,
//!   and in which mode (`instead` of the upstream, `before` forwarding, or `after` the upstream executed).
//! - [`stdio`]: the stdio front with a child-process upstream; every frame passes byte for byte unless a rule
//!   fires, and every frame is written to the trajectory.
//! - [`http`]: the Streamable HTTP front with an HTTP upstream, through the same fault-applying body as the
//!   server's.
//! - [`http_stdio`]: the bridge behind the HTTP front when the upstream is a stdio child.
//! - [`stdio_http`]: the stdio front with an HTTP upstream (each line POSTed, answers written back as lines).
//! - [`remote`]: an HTTP upstream anywhere: TLS (rustls, system roots, `--upstream-ca`), the user's headers,
//!   credentials from the environment, kept out of everything the proxy writes.
//! - [`recording`]: a recording as the upstream (`--replay`), for the stdio and the HTTP front: each request
//!   answered with the recorded reply to the same call.
//! - [`control`]: the opt-in live control API (list, add, remove, reset rules while traffic flows).
//! - [`trajectory`]: the frame log and its ledger, shared by both fronts (written by
//!   `faultlab_engine::trajectory::Writer`).

pub mod control;
pub mod http;
pub mod http_stdio;
pub mod recording;
pub mod remote;
pub mod rules;
pub mod stdio;
pub mod stdio_http;
pub mod trajectory;
