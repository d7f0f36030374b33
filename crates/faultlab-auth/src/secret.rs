//! Secrets: tokens, codes and client secrets drawn from the OS's random source, kept only as their SHA-256 digest,
//! and compared in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// Random bytes in a secret: 256 bits, as RFC 6749 §10.10 asks of tokens an attacker must not guess.
const SECRET_BYTES: usize = 32;

/// A fresh secret: 32 bytes from the OS's random source, base64url without padding (43 characters).
pub fn fresh() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The digest a secret is stored under: the store never holds a token itself, so a dump of it (or a timing leak
/// of a map lookup) gives nothing to present.
/// Equality is constant-time (`subtle`), so the store's map compares keys without an early exit.
#[derive(Debug, Clone, Copy, Eq)]
pub struct Digest([u8; 32]);

impl std::hash::Hash for Digest {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq for Digest {
    fn eq(&self, other: &Self) -> bool {
        self.matches(other)
    }
}

impl Digest {
    pub fn of(secret: &str) -> Self {
        Self(Sha256::digest(secret.as_bytes()).into())
    }

    /// Constant-time equality.
    pub fn matches(&self, other: &Digest) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

/// PKCE S256 (RFC 7636 §4.6): `BASE64URL(SHA256(verifier)) == challenge`, compared in constant time. The verifier
/// must be 43 to 128 unreserved characters (§4.1).
pub fn pkce_s256_ok(verifier: &str, challenge: &str) -> bool {
    let valid = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    let computed = challenge_s256(verifier);
    // Length first: ct_eq on slices of different lengths is false without comparing, and lengths are not secret.
    valid && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

/// The S256 code challenge of `verifier` (what a client sends with its authorization request).
pub fn challenge_s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Constant-time comparison of two presented strings (a client secret against the one issued).
pub fn same(a: &str, b: &str) -> bool {
    Digest::of(a).matches(&Digest::of(b))
}

/// Decodes standard base64 (HTTP Basic credentials).
pub fn decode_basic(value: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(value.trim()).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_distinct_43_character_base64url_strings() {
        let (a, b) = (fresh().unwrap(), fresh().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }

    #[test]
    fn pkce_s256_matches_the_rfc_7636_example_and_refuses_others() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_s256_ok(verifier, challenge));
        assert!(!pkce_s256_ok(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"));
        assert!(!pkce_s256_ok("short", challenge));
        // The plain method (challenge == verifier) is not accepted.
        assert!(!pkce_s256_ok(verifier, verifier));
    }

    #[test]
    fn digests_match_only_their_own_secret() {
        let s = fresh().unwrap();
        assert!(Digest::of(&s).matches(&Digest::of(&s)));
        assert!(!Digest::of(&s).matches(&Digest::of(&fresh().unwrap())));
    }
}
