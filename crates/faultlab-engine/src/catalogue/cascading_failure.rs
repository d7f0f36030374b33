//! `cascading_failure`: one failure takes the next requests down with it.
//!
//! **What it does on the wire.** The reply is replaced by "service unavailable": HTTP 503 with a JSON-RPC error
//! body; stdio the same error as the reply line (`code -32030`, `data.httpStatus: 503`, `data.fault:
//! "cascading_failure"`). The triggering request fails, and the failure spreads to the next `spread` requests
//! whatever their tool (a dependency that fails takes its callers down with it).
//!
//! **What a robust client should do.** Back off, keep a bound on attempts across tools (not per tool), and report
//! the failure rather than claiming success.
//!
//! **Example.** `{"type": "cascading_failure", "spread": 4}`
//!
//! **How it is graded.** The calls inside the cascade fail with 503; the client's retries are bounded and spaced;
//! a call after it succeeds.

use super::{ServeTool, Applied, Category, Earlier, Effect, Fault, MAX_BURST, Reply, http_status, within};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// 503 for this request, and the failure spreads: the next `spread` requests fail too, whatever their tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CascadingFailure {
    pub spread: u32,
}

impl Fault for CascadingFailure {
    const EXAMPLES: &[&str] = &[r#"{"type": "cascading_failure", "spread": 4}"#];
    const CATEGORY: Category = Category::Systemic;
    const EFFECT: Effect = Effect::Error;
    const SERVE_TOOL: Option<ServeTool> = None;

    fn validate(&self) -> Result<(), String> {
        within("spread", self.spread, 0, MAX_BURST)
    }
    fn apply(&self, reply: Reply<'_>, _earlier: &Earlier) -> Applied {
        Applied::done(http_status::unavailable(reply, "cascading_failure"))
    }
}
