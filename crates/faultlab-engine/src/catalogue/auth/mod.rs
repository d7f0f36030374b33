//! The auth faults: one file each (its parameters and its docs, printed by `faultlab faults NAME`), one line in
//! the list below. What each does is decided where it acts, in `faultlab-auth` (its authorization server and
//! protected resource), by matching on [`AuthFault`]. The types live here, beside the wire faults, so that a rules
//! file (`crate::rules::RulesFile::auth`) can hold one: the engine cannot depend on `faultlab-auth`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! auth_faults {
    ($($variant:ident($module:ident)),+ $(,)?) => {
        $(mod $module; pub use $module::$variant;)+

        /// An auth fault: `{"type": "<name>", ...}`, parameters left out at their defaults (`--auth-fault`: also a name).
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum AuthFault {
            $($variant($variant),)+
        }

        /// Every auth fault's name and its doc header (the module docs, compiled in).
        pub const DOCS: &[(&str, &str)] = &[$((stringify!($module), include_str!(concat!(stringify!($module), ".rs"))),)+];
    };
}

auth_faults! {
    TokenExpired(token_expired),
    TokenRevoked(token_revoked),
    RefreshInvalidGrant(refresh_invalid_grant),
    RefreshUnavailable(refresh_unavailable),
    RefreshSlow(refresh_slow),
    RefreshRotation(refresh_rotation),
    InsufficientScope(insufficient_scope),
    MetadataMissing(metadata_missing),
    IssuerMismatch(issuer_mismatch),
    ResourceMismatch(resource_mismatch),
    RegistrationRefused(registration_refused),
    AccessDenied(access_denied),
    ClockSkew(clock_skew),
}

pub use metadata_missing::Document;

/// The scope every token gets unless it asks for more: what the MCP endpoint needs.
pub const READ_SCOPE: &str = "mcp:read";
/// The scope `insufficient_scope` asks for by default.
pub const WRITE_SCOPE: &str = "mcp:write";
/// Every scope the authorization server knows.
pub const SCOPES: [&str; 3] = [READ_SCOPE, WRITE_SCOPE, "mcp:admin"];

fn one() -> u32 {
    1
}

/// Why an `--auth-fault` value was refused.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    #[error("--auth-fault: {0}")]
    Json(serde_json::Error),
    #[error("--auth-fault: unknown auth fault {0:?}; `faultlab faults` lists them (auth faults at the end)")]
    Unknown(String),
    #[error("--auth-fault: {0}")]
    Range(String),
}

impl AuthFault {
    /// Reads `--auth-fault`: a JSON object, or a bare name for its defaults. Checks the limits.
    pub fn parse(text: &str) -> Result<Self, FaultError> {
        let text = text.trim();
        let fault: Self = if text.starts_with('{') {
            // Depth-checked before parsing like every other input.
            faultlab_wire::nesting::check_with_limit(text, faultlab_wire::nesting::Syntax::Json, 16)
                .map_err(|e| FaultError::Json(serde::de::Error::custom(e)))?;
            serde_json::from_str(text).map_err(FaultError::Json)?
        } else {
            if !DOCS.iter().any(|(name, _)| *name == text) {
                return Err(FaultError::Unknown(text.into()));
            }
            serde_json::from_value(serde_json::json!({"type": text})).map_err(FaultError::Json)?
        };
        fault.validate().map_err(FaultError::Range)?;
        Ok(fault)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::TokenExpired(_) => "token_expired",
            Self::TokenRevoked(_) => "token_revoked",
            Self::RefreshInvalidGrant(_) => "refresh_invalid_grant",
            Self::RefreshUnavailable(_) => "refresh_unavailable",
            Self::RefreshSlow(_) => "refresh_slow",
            Self::RefreshRotation(_) => "refresh_rotation",
            Self::InsufficientScope(_) => "insufficient_scope",
            Self::MetadataMissing(_) => "metadata_missing",
            Self::IssuerMismatch(_) => "issuer_mismatch",
            Self::ResourceMismatch(_) => "resource_mismatch",
            Self::RegistrationRefused(_) => "registration_refused",
            Self::AccessDenied(_) => "access_denied",
            Self::ClockSkew(_) => "clock_skew",
        }
    }

    /// Checks the limits serde cannot; the message names the parameter (`token_expired.after`) and its range.
    pub fn validate(&self) -> Result<(), String> {
        let name = self.name();
        let range = |param: &str, ok: bool, range: &str, value: String| {
            if ok { Ok(()) } else { Err(format!("{name}.{param} must be {range}, not {value}")) }
        };
        match self {
            Self::TokenExpired(TokenExpired { after }) | Self::TokenRevoked(TokenRevoked { after }) => {
                range("after", (1..=1_000_000).contains(after), "1 to 1000000", after.to_string())
            }
            Self::InsufficientScope(f) => {
                range("after", f.after <= 1_000_000, "0 to 1000000", f.after.to_string())?;
                let known = SCOPES.contains(&f.scope.as_str()) && f.scope != READ_SCOPE;
                range("scope", known, "\"mcp:write\" or \"mcp:admin\"", format!("{:?}", f.scope))
            }
            Self::RefreshInvalidGrant(RefreshInvalidGrant { times }) | Self::AccessDenied(AccessDenied { times }) => {
                range("times", (1..=1000).contains(times), "1 to 1000", times.to_string())
            }
            Self::RefreshUnavailable(f) => {
                range(
                    "status",
                    matches!(f.status, 429 | 500 | 502 | 503 | 504),
                    "429, 500, 502, 503 or 504",
                    f.status.to_string(),
                )?;
                range("times", (1..=1000).contains(&f.times), "1 to 1000", f.times.to_string())?;
                let retry = f.retry_after.unwrap_or(0);
                range("retry_after", retry <= 3600, "0 to 3600", retry.to_string())
            }
            Self::RefreshSlow(f) => {
                range("delay_ms", (1..=600_000).contains(&f.delay_ms), "1 to 600000", f.delay_ms.to_string())?;
                range("times", (1..=1000).contains(&f.times), "1 to 1000", f.times.to_string())
            }
            Self::ClockSkew(ClockSkew { seconds }) => {
                range("seconds", (1..=86_400).contains(seconds), "1 to 86400", seconds.to_string())
            }
            Self::RefreshRotation(_)
            | Self::MetadataMissing(_)
            | Self::IssuerMismatch(_)
            | Self::ResourceMismatch(_)
            | Self::RegistrationRefused(_) => Ok(()),
        }
    }

    /// Where a fault that acts at the authorization server acts (`None`: it acts at a request to the MCP endpoint,
    /// `token_expired`, `token_revoked` and `insufficient_scope`, so a rules file's `auth.match` can aim it).
    pub fn acts_elsewhere(&self) -> Option<&'static str> {
        match self {
            Self::TokenExpired(_) | Self::TokenRevoked(_) | Self::InsufficientScope(_) => None,
            Self::RefreshInvalidGrant(_)
            | Self::RefreshUnavailable(_)
            | Self::RefreshSlow(_)
            | Self::RefreshRotation(_) => Some("at the token endpoint's refresh grants"),
            Self::MetadataMissing(_) => Some("at a metadata document"),
            Self::IssuerMismatch(_) => Some("at the authorization server's metadata"),
            Self::ResourceMismatch(_) => Some("at the protected resource's metadata"),
            Self::RegistrationRefused(_) => Some("at dynamic client registration"),
            Self::AccessDenied(_) => Some("at the authorization endpoint"),
            Self::ClockSkew(_) => Some("when a token is issued"),
        }
    }

    /// How many requests an access token authorizes before it is expired, when this fault expires tokens by use.
    /// The refresh faults expire each token after one request, so that their refresh happens at once.
    pub fn uses_per_token(&self) -> Option<u32> {
        match self {
            Self::TokenExpired(f) => Some(f.after),
            Self::RefreshInvalidGrant(_)
            | Self::RefreshUnavailable(_)
            | Self::RefreshSlow(_)
            | Self::RefreshRotation(_) => Some(1),
            _ => None,
        }
    }
}

/// The doc header of an auth fault: its module docs without the `//! ` prefixes.
pub fn doc(name: &str) -> Option<String> {
    let (_, source) = DOCS.iter().find(|(n, _)| *n == name)?;
    Some(
        source
            .lines()
            .map_while(|line| line.strip_prefix("//!"))
            .map(|line| line.strip_prefix(' ').unwrap_or(line))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_has_the_four_sections_and_an_example_that_parses() {
        for (name, _) in DOCS {
            let doc = doc(name).unwrap();
            assert!(doc.starts_with(&format!("`{name}`: ")), "{name}: first line");
            for section in [
                "## What it does on the wire",
                "## What a robust client should do",
                "## Example",
                "## How it is graded",
            ] {
                assert!(doc.contains(section), "{name}: {section}");
            }
            let example = doc.lines().find(|l| l.contains("--auth-fault '")).unwrap();
            let json = example.split('\'').nth(1).unwrap();
            assert_eq!(AuthFault::parse(json).unwrap().name(), *name);
            assert_eq!(AuthFault::parse(name).unwrap().name(), *name, "the bare name takes the defaults");
        }
    }

    #[test]
    fn bad_values_are_refused_naming_the_parameter() {
        let e = AuthFault::parse(r#"{"type": "refresh_unavailable", "status": 404}"#).unwrap_err().to_string();
        assert!(e.contains("refresh_unavailable.status") && e.contains("404"), "{e}");
        let e = AuthFault::parse(r#"{"type": "token_expired", "after": 1, "extra": 2}"#).unwrap_err().to_string();
        assert!(e.contains("extra"), "{e}");
        let e = AuthFault::parse("no_such_fault").unwrap_err().to_string();
        assert!(e.contains("no_such_fault"), "{e}");
        let e = AuthFault::parse(r#"{"type": "insufficient_scope", "scope": "mcp:read"}"#).unwrap_err().to_string();
        assert!(e.contains("insufficient_scope.scope"), "{e}");
    }
}
