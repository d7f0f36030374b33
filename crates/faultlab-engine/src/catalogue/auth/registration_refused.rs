//! `registration_refused`: dynamic client registration is refused.
//!
//! ## What it does on the wire
//! `POST /register` answers `400 {"error": "invalid_client_metadata", "error_description": "registration is
//! closed"}` (RFC 7591 §3.2.2) whatever is sent.
//!
//! ## What a robust client should do
//! Report that it cannot register (and, if it has one, use a pre-registered client or a client ID metadata
//! document instead); not retry the registration in a loop.
//!
//! ## Example
//! `faultlab serve --transport http --auth --auth-fault '{"type": "registration_refused"}'`
//!
//! ## How it is graded
//! The auth events: a bounded number of `registration_refused`, no `authorization_started` with an unregistered
//! `client_id`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Registration answers `invalid_client_metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationRefused {}
