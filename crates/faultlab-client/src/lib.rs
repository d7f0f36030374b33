//! The reference client: a small MCP client on raw frames that **observes what SDK clients hide**.
//!
//! It speaks both protocol eras over a spawned stdio child or Streamable HTTP, bounds every call with a deadline,
//! cancels the way each transport requires, and counts every anomaly it sees on the way: duplicate and late
//! responses, responses to ids it never sent, id-less errors, unparsable frames, replies out of order.
//!
//! - [`transport`]: moving frames (stdio child, HTTP POSTs with JSON or SSE answers).
//! - [`auth`]: the auth mode (OAuth 2.1 discovery, registration, code + PKCE, refresh, step-up), headless.
//! - [`answers`]: the scripted answers to a server that asks back (elicitation, sampling, roots).
//! - [`connection`]: the pending-request map, dispatch, the handshake, calls with deadlines and cancellation.
//! - [`outcome`]: what one call came to (success, error, timeout, cancelled, transport loss), validated.
//! - [`recovery`]: what the client did to recover a call (resumed streams, new sessions, protocol retries).
//! - [`surface`]: the tool list as the client keeps it (bounded paging, re-lists), calls held to it.
//! - [`tasks`]: task-augmented calls followed to their end (polling within a floor and a cap, cancel on timeout).
//! - [`retry`]: the bounded retry policy (only explicit tool errors are retried).
//! - [`trace`]: OpenAI-message-shaped traces of the calls.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod answers;
pub mod auth;
pub mod connection;
pub mod outcome;
pub mod recovery;
pub mod retry;
pub mod surface;
pub mod tasks;
pub mod tls;
pub mod trace;
pub mod transport;

pub use answers::{Answer, Answers};
pub use auth::{AuthEvent, AuthEventKind, AuthOptions, AuthRecord};
pub use connection::{Anomalies, ConnectError, Connection, Era, Progress};
pub use outcome::{ErrorKind, Observation, Outcome};
pub use recovery::{Reconnect, Recovery};
pub use retry::{Backoff, RetryPolicy, RetryRun};
pub use tasks::{TaskOptions, TaskRecord, TaskSupport, TaskSupportRecord};
pub use transport::Target;
