//! What the authorization server remembers: registered clients, authorization codes, access and refresh tokens
//! (each secret under its digest only), and the counts the faults act on. Everything is bounded: past a cap,
//! expired entries are swept, and if none are, the new one is refused (the caller answers 503).

use crate::secret::Digest;
use std::collections::HashMap;
use tokio::time::Instant;

/// Registered clients kept at most.
pub const MAX_CLIENTS: usize = 1024;
/// Codes, access tokens and refresh tokens kept at most, each.
pub const MAX_LIVE: usize = 4096;

#[derive(Debug, Clone)]
pub struct Client {
    pub redirect_uris: Vec<String>,
    /// The digest of its secret, for a confidential client (`client_secret_post` / `client_secret_basic`).
    pub secret: Option<Digest>,
    pub auth_method: String,
}

#[derive(Debug, Clone)]
pub struct Code {
    pub client_id: String,
    pub redirect_uri: String,
    /// Whether the authorization request named its `redirect_uri` (then the token request must repeat it).
    pub redirect_uri_sent: bool,
    pub challenge: String,
    pub scopes: Vec<String>,
    pub expires: Instant,
}

#[derive(Debug, Clone)]
pub struct Access {
    pub grant: u64,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub expires: Instant,
    pub not_before: Instant,
    /// Requests it has authorized.
    pub uses: u32,
    pub revoked: bool,
}

#[derive(Debug, Clone)]
pub struct Refresh {
    pub grant: u64,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub revoked: bool,
    /// Replaced by a newer refresh token (`refresh_rotation`).
    pub rotated_out: bool,
}

#[derive(Debug, Default)]
pub struct Store {
    pub clients: HashMap<String, Client>,
    pub codes: HashMap<Digest, Code>,
    pub access: HashMap<Digest, Access>,
    pub refresh: HashMap<Digest, Refresh>,
    /// Grants (authorization-code exchanges) so far; a grant's tokens carry its number.
    pub grants: u64,
    /// Refresh grants a fault has acted on so far (`times`).
    pub refresh_faulted: u32,
    /// Authorization requests denied so far (`access_denied`).
    pub denied: u32,
    /// Requests the resource has authorized (`insufficient_scope`'s `after`).
    pub authorized: u64,
    /// Whether `token_revoked` has fired.
    pub revoked_once: bool,
    /// Requests that met the rules file's `auth.match` with an otherwise valid token (its `nth`, `after`, `every`).
    pub matched: u64,
}

/// A map is full and nothing in it has expired.
#[derive(Debug)]
pub struct Full;

impl Store {
    /// Makes room for one more code (sweeping expired ones).
    pub fn room_for_code(&mut self, now: Instant) -> Result<(), Full> {
        if self.codes.len() >= MAX_LIVE {
            self.codes.retain(|_, c| c.expires > now);
        }
        if self.codes.len() >= MAX_LIVE { Err(Full) } else { Ok(()) }
    }

    /// Makes room for one more access and refresh token (sweeping expired and revoked ones).
    pub fn room_for_tokens(&mut self, now: Instant) -> Result<(), Full> {
        if self.access.len() >= MAX_LIVE {
            self.access.retain(|_, a| a.expires > now && !a.revoked);
        }
        if self.refresh.len() >= MAX_LIVE {
            self.refresh.retain(|_, r| !r.revoked && !r.rotated_out);
        }
        if self.access.len() >= MAX_LIVE || self.refresh.len() >= MAX_LIVE { Err(Full) } else { Ok(()) }
    }

    /// Revokes every token of `grant`.
    pub fn revoke_grant(&mut self, grant: u64) {
        self.access.values_mut().filter(|a| a.grant == grant).for_each(|a| a.revoked = true);
        self.refresh.values_mut().filter(|r| r.grant == grant).for_each(|r| r.revoked = true);
    }
}
