//! `token_quota` on the model hop: a one-minute window of requests and tokens per rule, and the provider's
//! rate-limit headers and 429 bodies.

use crate::api::Api;
use faultlab_engine::catalogue::TokenQuota;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// The window a quota counts in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Bytes of request body counted as one token (the providers' rule of thumb for English text).
pub const BYTES_PER_TOKEN: usize = 4;

/// The windows, one per rule (the rules file bounds how many).
#[derive(Default)]
pub struct Windows {
    by_rule: HashMap<String, Window>,
}

struct Window {
    /// Since the endpoint started.
    started: Duration,
    requests: u32,
    tokens: u64,
}

/// What the quota says about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `requests` or `tokens` when this request is over the quota (it is then not counted).
    pub refused: Option<&'static str>,
    pub quota: TokenQuota,
    /// Left in the window after this request.
    pub requests_left: u32,
    pub tokens_left: u64,
    /// This request's tokens.
    pub tokens: u64,
    /// Until the window ends.
    pub reset: Duration,
}

/// A request body's size in tokens: its bytes over [`BYTES_PER_TOKEN`], rounded up.
pub fn tokens(body_bytes: usize) -> u64 {
    u64::try_from(body_bytes.div_ceil(BYTES_PER_TOKEN)).unwrap_or(u64::MAX)
}

impl Windows {
    /// Counts one request of `tokens` under `rule`'s quota at `now` (since the endpoint started).
    pub fn count(&mut self, rule: &str, quota: &TokenQuota, now: Duration, tokens: u64) -> Verdict {
        let window = self.by_rule.entry(rule.to_owned()).or_insert(Window { started: now, requests: 0, tokens: 0 });
        if now.saturating_sub(window.started) >= WINDOW {
            *window = Window { started: now, requests: 0, tokens: 0 };
        }
        let max_requests = quota.requests_per_minute.unwrap_or(u32::MAX);
        let max_tokens = quota.tokens_per_minute.map_or(u64::MAX, u64::from);
        let refused = if window.requests >= max_requests {
            Some("requests")
        } else if window.tokens.saturating_add(tokens) > max_tokens {
            Some("tokens")
        } else {
            window.requests += 1;
            window.tokens = window.tokens.saturating_add(tokens);
            None
        };
        Verdict {
            refused,
            quota: quota.clone(),
            requests_left: max_requests.saturating_sub(window.requests),
            tokens_left: max_tokens.saturating_sub(window.tokens),
            tokens,
            reset: WINDOW.saturating_sub(now.saturating_sub(window.started)),
        }
    }
}

impl Verdict {
    /// Whole seconds until the window ends, at least 1 (`Retry-After`).
    pub fn retry_after_sec(&self) -> u64 {
        self.reset.as_secs() + u64::from(self.reset.subsec_nanos() > 0)
    }

    /// The provider's rate-limit headers for the quotas set (Gemini sends none).
    pub fn headers(&self, api: Api) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let mut put = |name: String, value: String| {
            if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
                headers.insert(name, value);
            }
        };
        let reset_at = || {
            let at = SystemTime::now() + self.reset;
            chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        };
        let quotas = [
            ("requests", self.quota.requests_per_minute.map(u64::from), u64::from(self.requests_left)),
            ("tokens", self.quota.tokens_per_minute.map(u64::from), self.tokens_left),
        ];
        for (what, limit, left) in quotas {
            let Some(limit) = limit else { continue };
            match api {
                Api::Messages => {
                    put(format!("anthropic-ratelimit-{what}-limit"), limit.to_string());
                    put(format!("anthropic-ratelimit-{what}-remaining"), left.to_string());
                    put(format!("anthropic-ratelimit-{what}-reset"), reset_at());
                }
                // Gemini sends no rate-limit headers (its 429 body carries the retry delay).
                Api::Gemini => {}
                Api::ChatCompletions | Api::Responses => {
                    put(format!("x-ratelimit-limit-{what}"), limit.to_string());
                    put(format!("x-ratelimit-remaining-{what}"), left.to_string());
                    put(format!("x-ratelimit-reset-{what}"), format!("{}s", self.retry_after_sec()));
                }
            }
        }
        if self.refused.is_some() {
            put("retry-after".into(), self.retry_after_sec().to_string());
        }
        headers
    }

    /// The provider's 429 body.
    pub fn body(&self, api: Api, model: &str) -> Value {
        let which = self.refused.unwrap_or("requests");
        let limit = match which {
            "requests" => self.quota.requests_per_minute.map_or(0, u64::from),
            _ => self.quota.tokens_per_minute.map_or(0, u64::from),
        };
        let wait = self.retry_after_sec();
        match api {
            Api::Gemini => {
                let mut body = crate::api::gemini_error(
                    429,
                    &format!("Resource has been exhausted: quota of {limit} {which} per minute (faultlab fault)."),
                );
                body["error"]["details"] = json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": format!("{wait}s")}]);
                body
            }
            Api::Messages => {
                let unit = if which == "requests" { "requests" } else { "input tokens" };
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": format!(
                    "This request would exceed the rate limit for your organization of {limit} {unit} per minute. \
                     Please try again in {wait}s (faultlab fault)."
                )}})
            }
            Api::ChatCompletions | Api::Responses => {
                let (unit, used) = if which == "requests" {
                    ("requests per min (RPM)", limit.saturating_sub(u64::from(self.requests_left)))
                } else {
                    ("tokens per min (TPM)", limit.saturating_sub(self.tokens_left))
                };
                let requested = if which == "requests" { 1 } else { self.tokens };
                json!({"error": {"message": format!(
                    "Rate limit reached for {model} in organization org-faultlab on {unit}: Limit {limit}, Used {used}, \
                     Requested {requested}. Please try again in {wait}s. (faultlab fault)"
                ), "type": which, "param": null, "code": "rate_limit_exceeded"}})
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_refuses_beyond_its_quota_and_opens_again_after_a_minute() {
        let quota = TokenQuota { requests_per_minute: Some(2), tokens_per_minute: Some(100) };
        let mut windows = Windows::default();
        let at = Duration::from_secs;
        assert_eq!(windows.count("r", &quota, at(0), 10).refused, None);
        let second = windows.count("r", &quota, at(10), 10);
        assert_eq!((second.refused, second.requests_left, second.tokens_left), (None, 0, 80));
        let third = windows.count("r", &quota, at(15), 10);
        assert_eq!((third.refused, third.retry_after_sec()), (Some("requests"), 45));
        assert_eq!(windows.count("r", &quota, at(60), 10).refused, None, "a new window");
        assert_eq!(windows.count("r", &quota, at(61), 91).refused, Some("tokens"), "10 + 91 > 100");
        assert_eq!(windows.count("other", &quota, at(61), 91).refused, None, "each rule its own window");
        assert_eq!(tokens(9), 3);
    }
}
