//! The proxy library's tests in one binary, each module on one concern:
//!
//! - `catalogue_examples`: every catalogue example through the stdio and HTTP fronts, the effect checked on the wire.
//! - `bursts`: frames that arrive together are relayed in order, each rule still applied to its own frame.
//! - `frames`: property tests; no panic and nothing lost whatever crosses the proxy.
//! - `outage`: `server_outage` under the paused tokio clock.
//! - `remote_tls`: HTTPS upstreams against a local TLS server: trusted CA, untrusted CA, headers, redaction.
//! - `replay_upstream`: a recording as the upstream: matching, repeats, rules on top, the closest-call error.
//! - `schema_faults`: `wrong_value` and `contradictory` keep a result valid against the declared output schema.

mod bursts;
mod catalogue_examples;
mod frames;
mod outage;
mod remote_tls;
mod replay_upstream;
mod schema_faults;
