//! `faultlab eval`: agents on sandboxed tasks, through the real fault proxy, graded on five layers.
//!
//! - [`task`]: the task file (strict YAML or JSON): workspace, server, faults, recovery, witness, assertions, and
//!   the plan the built-in control agents follow (the grader never reads it).
//! - [`contract`]: what an agent process is given (environment variables) and what it leaves behind (its claim).
//! - [`evidence`]: what a run left to grade: the proxy trajectory's tool calls, the workspace server's side-effect
//!   ledger, workspace snapshots before and after, the agent's claim and how it ended.
//! - [`grade`]: the five layers (outcome, safety, recovery, side effects, efficiency) and the verdict.
//! - [`runner`]: one graded run: sandbox, processes, deadline, evidence, verdict; [`http_front`]: the run's proxy
//!   as an HTTP endpoint (with OAuth when the task asks), reached from the sandbox through a relay;
//!   [`in_process`]: the run's proxy for a task over stdio in eval's own process, in front of the workspace server
//!   in process.
//! - [`model_hop`]: a task's model (`faultlab model` in eval's process, outside the sandbox, on the proxies'
//!   runtime), reached from the sandbox through a relay of its own; its recording `model.jsonl` read back.
//! - [`sandbox`]: the sealed agent process tree (`faultlab sandbox`), in `faultlab-proc` with every other piece
//!   of process management (re-exported here for one more merge); [`guard`]: eval's helpers from its own
//!   executable, files an agent could have planted read safely and up to a cap.
//! - [`oracle`], [`builtin`]: the expected verdict of every control agent on every built-in task.
//! - [`batch`]: every (task, agent, repeat), in parallel, sharded; [`report`]: the report model and its
//!   statistics, with one writer a format: `report::markdown`, [`report::html`] (one self-contained page: heatmap,
//!   rates with intervals, every run's checks and timeline), [`report::compare`] (two reports side by side, with
//!   significance tests).
//! - [`merge`]: shard reports joined into one.
//! - Fault-space exploration (`faultlab explore`) is the `faultlab-explore` crate, built on this one.
//! - [`agent`]: the built-in control agents, each a real MCP client process; [`adversary`]: what the adversarial
//!   ones try against the sandbox.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod adversary;
pub mod agent;
pub mod batch;
pub mod builtin;
pub mod contract;
pub mod evidence;
pub mod grade;
pub mod guard;
pub mod http_front;
pub mod in_process;
pub mod merge;
pub mod model_hop;
/// 0-based indexes counted from 1 in reports (explore's call positions too).
pub mod one_based;
pub mod oracle;
pub mod report;
/// Moved under [`report`] (one writer a format beside the report model); these paths are kept for one more merge.
pub use report::{compare, html};
pub mod runner;
/// Moved to `faultlab_proc::sandbox`; this path is kept for one more merge.
pub use faultlab_proc::sandbox;
pub mod task;
