//! Integration tests of the faulty server, each observing faults on the wire with a raw client.
//!
//! - `askback`: `ask_client`, the server asking the client during a call, and its faults.
//! - `stdio`: every tool over an in-process stdio connection (paused clock where time matters).
//! - `http_modern`: every tool over 2026-07-28 stateless HTTP.
//! - `http_legacy`: every tool inside 2025-11-25 sessions, plus session loss, DELETE and the registry.
//! - `isolation`: many calls in flight, only the activating one affected.
//! - `front`: path, Host, Origin, body size and method checks before dispatch.
//! - `load`: 1,000 concurrent legacy initializes against the session cap.
//! - `resume`: resumable session streams (ids, priming, `Last-Event-ID` replay, 404s) and the stream faults.
//! - `resources_prompts`: the server's resources and prompts, and their lists paged with broken cursors.
//! - `surface`: the tool surface tools: a tool list that drifts, calls to a tool that is gone, broken pages.
//! - `catalogue`: every catalogue example a tool arms, with the effect its fault promises.
//! - `frames`: property tests, no panic on random or truncated input lines.
//! - `rounds`: `input_rounds`, multi-round-trip calls (2026-07-28) and the `input_required` faults on the bytes.
//! - `tasks`: `task_work`, task-augmented calls and the task faults on the bytes.
//! - `workspace`: the eval workspace server: paths beneath the root, no symlink followed, the ledger.

mod askback;
mod catalogue;
mod frames;
mod front;
mod http_legacy;
mod http_modern;
mod isolation;
mod lifecycle;
mod load;
mod not_mcp;
mod resources_prompts;
mod resume;
mod rounds;
mod stdio;
mod surface;
mod tasks;
mod tool_schemas;
mod util;
mod workspace;
