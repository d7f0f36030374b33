//! Legacy session registry (placeholder until the HTTP front lands).
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, rmcp::schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LossActivation {
    DuringRequest,
    AfterResponse,
}

impl LossActivation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DuringRequest => "during_request",
            Self::AfterResponse => "after_response",
        }
    }
}

#[derive(Clone)]
pub struct SessionHandle;

impl SessionHandle {
    pub fn lose(&self, _activation: LossActivation) -> Result<(), String> {
        Err("not yet".into())
    }
}
