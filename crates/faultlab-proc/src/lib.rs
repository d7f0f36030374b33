//! Processes: the one crate of the lab that starts, watches and ends them, and the one that holds `unsafe` code
//! (the engine's timer registration aside; every other crate has `#![forbid(unsafe_code)]`). Each `unsafe` block
//! here carries its `SAFETY:` reason, so an audit of the lab's unsafe code is an audit of this crate.
//!
//! - [`child`]: a child process speaking JSON lines (the reference client's stdio server, the proxy's child
//!   upstream, the HTTP front's bridge, replay's server): own process group, parent death signal, a `Lines` stream
//!   in, a `LineWriter` out, `stop` in the spec's order with one grace, `crash` for an outage, respawn from the same
//!   `ChildCommand`.
//! - [`hooks`]: every `pre_exec` hook (a descriptor handed to the child under a given number, the parent death
//!   signal, a session of its own), each async-signal-safe.
//! - [`group`]: signals to a process or a process group by number (a group or process already gone is no error),
//!   and the child subreaper.
//! - [`scan`]: `/proc` read as a list of processes (pid, state, parent, group) and a process's descendants.
//! - [`wait`]: a process's exit waited for on its pidfd (an event, not a sleep and a look), blocking or off the
//!   runtime.
//! - [`drain`]: the end of a set of processes (process groups, and anything whose command line names a marker):
//!   wait for each to exit, reap the orphans, SIGKILL what is left after a grace.
//! - [`fd`]: a listening Unix socket inherited by descriptor number (`faultlab proxy --listen-fd`).
//! - [`sandbox`]: `faultlab sandbox`, the sealed process tree an eval agent runs in (namespaces, hidden evidence,
//!   read-only root, private `/tmp` and network, no capabilities, nothing left).
//! - [`relay`]: the sandbox's loopback relay, which carries an agent's TCP connections to an HTTP server over a Unix
//!   socket out of its private network namespace.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod child;
pub mod drain;
pub mod fd;
pub mod group;
pub mod hooks;
pub mod relay;
pub mod sandbox;
pub mod scan;
pub mod wait;

pub use nix::sys::signal::Signal;
