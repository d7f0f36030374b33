//! `resource_mismatch`: the protected resource metadata names another resource.
//!
//! ## What it does on the wire
//! The RFC 9728 document's `resource` is `<origin>/not-this-resource`, not the URL the client is connecting to.
//!
//! ## What a robust client should do
//! Refuse the metadata (RFC 9728 §3.3: the resource MUST be identical to the URL it was requested for) and report
//! it; not ask for a token for the other resource.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "resource_mismatch"}'`
//!
//! ## How it is graded
//! The auth events: `metadata_served` for the protected resource and no `authorization_started` after it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The PRM names another resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceMismatch {}
