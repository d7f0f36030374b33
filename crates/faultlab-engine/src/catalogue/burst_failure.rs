//! `burst_failure`: the service fails several times in a row, then recovers.
//!
//! **What it does on the wire.** The reply is replaced by "service unavailable": HTTP 503 with a JSON-RPC error
//! body; stdio the same error as the reply line (`code -32030`, `data.httpStatus: 503`, `data.fault:
//! "burst_failure"`). The request that triggers it and the next `count - 1` requests matching the same rule fail
//! in a row (the rules keep firing it; the fault itself only answers one reply).
//!
//! **What a robust client should do.** Back off instead of hammering (a burst ends), keep a bound on attempts,
//! and report the failure rather than claiming success.
//!
//! **Example.** `{"type": "burst_failure", "count": 3}`
//!
//! **How it is graded.** The calls inside the burst fail with 503; the client's retries are bounded and spaced;
//! a call after the burst succeeds.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, MAX_BURST, Reply, http_status, within};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// 503 for this and the next `count - 1` requests matching the same rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BurstFailure {
    pub count: u32,
}

impl Fault for BurstFailure {
    const EXAMPLES: &[&str] = &[r#"{"type": "burst_failure", "count": 3}"#];
    const CATEGORY: Category = Category::Systemic;
    const EFFECT: Effect = Effect::Error;
    const SERVE_TOOL: Option<ServeTool> = None;

    fn validate(&self) -> Result<(), String> {
        within("count", self.count, 1, MAX_BURST)
    }
    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(http_status::unavailable(reply, "burst_failure"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::WireAction;
    use serde_json::json;

    #[test]
    fn a_503_error_with_the_request_id_naming_the_fault() {
        let reply = frame(RESULT);
        let applied = BurstFailure { count: 2 }.apply(Reply { frame: &reply, request: None }, &Earlier::default());
        let WireAction::HttpStatus { status, body, .. } = &applied.actions[0] else { panic!("{applied:?}") };
        assert_eq!(*status, 503);
        let body: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!((body["id"].clone(), body["error"]["data"]["fault"].clone()), (json!(7), json!("burst_failure")));
    }
}
