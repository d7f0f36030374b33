//! `issuer_mismatch`: the authorization server metadata names another issuer.
//!
//! ## What it does on the wire
//! The RFC 8414 document's `issuer` is `<origin>/not-this-issuer`, not the issuer its well-known URL was built from
//! (and the `iss` of the authorization response says the same other issuer).
//!
//! ## What a robust client should do
//! Refuse the metadata (RFC 8414 §3.3: the issuer MUST be identical) and report it; send no authorization request
//! and no credentials to it.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "issuer_mismatch"}'`
//!
//! ## How it is graded
//! The auth events: `metadata_served` for the authorization server and then no `authorization_started` or
//! `client_registered` (a client that goes on accepted the wrong issuer).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The AS metadata names another issuer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssuerMismatch {}
