//! Running the reference client against servers and reporting what happened.
//!
//! - [`scenario`]: scenario files (strict YAML or JSON) and their plan of calls.
//! - [`expect`]: checking a call against its expectations.
//! - [`surface`]: `toolSurface` and `expect.surface`: the reference client's tool list and what it says of a call.
//! - [`adapter`]: the target-client adapter contract; [`mcp`] is the reference client behind it, [`fake`] a
//!   deterministic stand-in with a virtual clock.
//! - [`runner`]: setup, steps, cancel, cleanup on every path.
//! - [`target`]: external target files.
//! - [`report`]: console, JSON and JUnit renderings of the results.
//! - [`probe`]: the seven deterministic `lab_probe` runs of the demo.
//! - [`baseline`]: known failures checked in, for `run` and `eval`: new and stale ones fail.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod adapter;
pub mod baseline;
pub mod expect;
pub mod fake;
pub mod junit;
pub mod mcp;
pub mod probe;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod surface;
pub mod target;
