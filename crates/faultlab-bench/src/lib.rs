//! The benchmarks of MCP Failure Lab (a workspace crate of their own, never published; not a test: nothing here
//! asserts anything about time). Two bench targets, each a thin `main`:
//!
//! - `serve` ([`serve`]): `faultlab serve` side by side with the Node reference server
//!   `@modelcontextprotocol/server-everything`;
//! - `proxy` ([`proxy`]): what `faultlab proxy` costs in front of that server against the same server direct, with
//!   peer relays for scale.
//!
//! Each has one module per figure. What they share is here: [`stats`] (sample statistics, number formatting),
//! [`procs`] (process groups, the stall watch, facts from `/proc`), [`stdio`] (the line peer: one stdio
//! connection), [`http`] (the HTTP servers, sessions and the load generator) and [`inputs`] (where the binaries
//! are, the machine, the JSON report).
//!
//! The `faultlab` binary is not built by these benches (a bench cannot name another package's binary): it is
//! `--faultlab PATH` or `FAULTLAB_BENCH_BIN` (the scripts pass the binary they built), else `faultlab` in the
//! bench's own profile folder of the target directory (`target/release/faultlab` under `cargo bench`,
//! `target/debug/faultlab` under `cargo test`), which `cargo build -p faultlab` (with `--release` for `cargo
//! bench`) puts there.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod http;
pub mod inputs;
pub mod procs;
pub mod proxy;
pub mod serve;
pub mod stats;
pub mod stdio;
