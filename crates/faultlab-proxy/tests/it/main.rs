//! The proxy library's tests in one binary, each module on one concern:
//!
//! - `catalogue_examples`: every catalogue example through the stdio and HTTP fronts, the effect checked on the wire.
//! - `bursts`: frames that arrive together are relayed in order, each rule still applied to its own frame.
//! - `frames`: property tests; no panic and nothing lost whatever crosses the proxy.
//! - `in_process`: the in-process upstream: the real server and an echo, `server_outage` under the paused clock.
//! - `catalogue_faults`, `rule_modes`: each fault and each rule mode on the wire, the real server in process.
//! - `every_front`: the same faults through every front and upstream pair give the same message.
//! - `harness`: the real server in process, a line client on the proxy's stdio front, the HTTP front on a free port.
//! - `pagination`: `broken_pagination` and `page_error` turn an upstream's one-page lists into pages, followed by a
//!   client that bounds what it fetches.
//! - `remote_tls`: HTTPS upstreams against a local TLS server: trusted CA, untrusted CA, headers, redaction.
//! - `replay_upstream`: a recording as the upstream: matching, repeats, rules on top, the closest-call error.
//! - `schema_faults`: `wrong_value` and `contradictory` keep a result valid against the declared output schema; the
//!   structured-output faults break it as they say.
//! - `stream_faults`: the stream faults and the session-lifecycle faults on the HTTP front over an in-process
//!   upstream: event ids, `retry:`, cut points, replays, refused resumes, session statuses, byte for byte.
//! - `unix_front`: connections to one Unix socket share the run's rule state; one trajectory, a scope each.

mod bursts;
mod catalogue_examples;
mod catalogue_faults;
mod every_front;
mod frames;
mod harness;
mod in_process;
mod order;
mod pagination;
mod remote_tls;
mod replay_upstream;
mod rule_modes;
mod schema_faults;
mod stream_faults;
mod unix_front;
