//! `metadata_missing`: a metadata document answers 404.
//!
//! ## What it does on the wire
//! `document: "protected_resource"`: every `/.well-known/oauth-protected-resource…` path answers 404 while the 401
//! still names it in `resource_metadata`. `document: "authorization_server"`: the RFC 8414 and OpenID discovery
//! documents answer 404.
//!
//! ## What a robust client should do
//! Report that authorization cannot be discovered, naming the URL, and stop; not retry in a loop, not mark the
//! server "needs auth" forever once the document is back.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "metadata_missing", "document": "protected_resource"}'`
//!
//! ## How it is graded
//! The auth events: `metadata_refused` for the document, a bounded number of times; no `token_issued`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One metadata document answers 404.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetadataMissing {
    #[serde(default)]
    pub document: Document,
}

/// A metadata document.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Document {
    /// RFC 9728 protected resource metadata.
    #[default]
    ProtectedResource,
    /// RFC 8414 authorization server metadata (and the OpenID discovery document).
    AuthorizationServer,
}
