//! The fault engine: what can go wrong on the wire, and the one place that makes it happen.
//!
//! - [`catalogue`]: one closed enum, [`FaultKind`], with one file per fault. A fault only transforms one reply
//!   into a list of [`WireAction`]s (bytes to write, pauses, a close, an HTTP status); it never decides *which*
//!   message it applies to.
//! - [`engine`]: decides which message gets which fault. Today a fault is armed on a request id (the server's
//!   tool handlers arm faults on their own response); the proxy's rules go through the same engine.
//! - [`render`]: turns actions into bytes for a transport: stdio lines or SSE events.
//! - [`rules`]: what a rules file says (which request, which mode, which fault; the run's auth fault, which
//!   `faultlab-auth` plays); the proxy runs the rules. Its `Matcher` meets one request for both.
//! - [`recorder`]: the documented diagnostics event schema, written as JSON lines.
//! - [`recording`]: a trajectory's recorded replies matched to new requests (`faultlab proxy --replay`, eval's
//!   replay).
//! - [`trajectory`]: the proxy's trajectory written and read back with those types: one reader, one pairing of
//!   requests with replies, one definition of a failed call.
//! - [`ledger`]: the workspace server's side-effect ledger, one type written by the server and read by eval.
//! - [`clock`]: the microsecond sleep latency faults use.
//!
//! All time comes from the tokio clock, so tests run under a paused clock (latency pauses end on a timerfd when
//! the clock is real; see [`clock`]).

// Every `unsafe` block of the lab is in `faultlab-proc` but the clock's timer registration (`clock`), the one
// exception the lint allows; forbid would refuse that allow.
#![deny(unsafe_code)]

pub mod catalogue;
pub mod clock;
pub mod engine;
pub mod ledger;
pub mod outlet;
pub mod recorder;
pub mod recording;
pub mod render;
pub mod rules;
pub mod trajectory;

pub use catalogue::{FaultKind, MalformedVariant, WireAction, WireFraming};
pub use engine::{ArmError, AskSlot, Engine, MAX_PENDING_ASKS, MAX_PENDING_FAULTS, Standing};
pub use recorder::{Event, Recorder};
