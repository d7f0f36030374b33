//! `token_quota`: a requests- and tokens-per-minute quota with the provider's rate-limit headers (model hop
//! only).
//!
//! **What it does on the wire.** Every request the rule fires on is counted in a one-minute window (from the first
//! such request; a new window starts when it ends): one request and its size in tokens, counted as its body's
//! bytes divided by 4 (rounded up). Within `requests_per_minute` and `tokens_per_minute` the answer goes out with
//! the provider's headers saying what is left: OpenAI `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`,
//! `x-ratelimit-reset-requests` (as `12s`) and the same for `-tokens`; Anthropic `anthropic-ratelimit-requests-limit`,
//! `-remaining`, `-reset` (RFC 3339) and the same for `tokens`; Gemini has none. A request beyond either quota is
//! answered `429` with those headers, `Retry-After` (seconds until the window ends) and the provider's body
//! (OpenAI `type: "requests"` or `"tokens"`, `code: "rate_limit_exceeded"`; Anthropic `rate_limit_error`; Gemini
//! `RESOURCE_EXHAUSTED`). The proxy refuses this fault.
//!
//! **What a robust client should do.** Read the headers: slow down before the quota is spent, and after a 429 wait
//! `Retry-After` before trying again (not retry at once, which the window refuses too).
//!
//! **Example.** `{"type": "token_quota", "requests_per_minute": 2}` or
//! `{"type": "token_quota", "tokens_per_minute": 1000}`
//!
//! **How it is graded.** The recording's `at_ms` shows whether retries waited for the window, and how many
//! requests the quota refused.

use super::within;

/// Largest quota, per minute (requests or tokens).
pub const MAX_QUOTA_PER_MINUTE: u32 = 100_000_000;

model_fault! {
    /// A one-minute quota of requests and/or tokens (bytes / 4), with the provider's rate-limit headers; `429`
    /// with `Retry-After` beyond it.
    pub struct TokenQuota {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub requests_per_minute: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tokens_per_minute: Option<u32>,
    }
    category: Transport,
    effect: Error,
    examples: [
        r#"{"type": "token_quota", "requests_per_minute": 2}"#,
        r#"{"type": "token_quota", "tokens_per_minute": 1000}"#,
    ],
    validate: |fault| {
        if fault.requests_per_minute.is_none() && fault.tokens_per_minute.is_none() {
            return Err("requests_per_minute or tokens_per_minute is required".into());
        }
        for (name, quota) in [("requests_per_minute", fault.requests_per_minute), ("tokens_per_minute", fault.tokens_per_minute)] {
            if let Some(quota) = quota {
                within(name, quota, 1, MAX_QUOTA_PER_MINUTE)?;
            }
        }
        Ok(())
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Fault as _;

    #[test]
    fn a_quota_names_what_it_counts() {
        let none = TokenQuota { requests_per_minute: None, tokens_per_minute: None };
        assert!(none.validate().unwrap_err().contains("requests_per_minute"));
        let zero = TokenQuota { requests_per_minute: Some(0), tokens_per_minute: None };
        assert!(zero.validate().unwrap_err().starts_with("requests_per_minute must be between 1"));
    }
}
