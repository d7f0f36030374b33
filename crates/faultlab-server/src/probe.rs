//! The `lab_probe` harness mode: one tool whose behaviour is chosen at start-up by `LAB_SCENARIO`.
//!
//! | `LAB_SCENARIO` | what `lab_probe` does |
//! |---|---|
//! | `healthy` | answers normally |
//! | `tool-error` | answers with a tool error (`isError: true`) every time |
//! | `transient-error` | the first `LAB_FAILURES` calls are tool errors, then it answers normally |
//! | `delay` | waits `LAB_DELAY_MS`, then answers normally (cancelling stops the wait) |
//! | `malformed` | a valid JSON-RPC envelope whose text block holds a number (the `invalid_result` fault) |
//! | `disconnect` | the connection drops instead of the answer (the `disconnect` fault) |
//!
//! `LAB_DELAY_MS` is 0–10000 (default 1000) and `LAB_FAILURES` 0–10 (default 2), decimal digits only; unset or
//! empty means the default. Configuration is read once at start; the failure count is per process.

use crate::scope::Scope;
use crate::tools::{arm_own_response, text_result, tool_error};
use faultlab_engine::FaultKind;
use rmcp::handler::server::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Healthy,
    ToolError,
    TransientError,
    Delay,
    Malformed,
    Disconnect,
}

impl Scenario {
    pub const NAMES: [&'static str; 6] =
        ["healthy", "tool-error", "transient-error", "delay", "malformed", "disconnect"];

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "healthy" => Self::Healthy,
            "tool-error" => Self::ToolError,
            "transient-error" => Self::TransientError,
            "delay" => Self::Delay,
            "malformed" => Self::Malformed,
            "disconnect" => Self::Disconnect,
            _ => return None,
        })
    }
}

/// The probe's configuration, read from `LAB_*` variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeConfig {
    pub scenario: Scenario,
    pub delay_ms: u64,
    pub failures: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProbeConfigError {
    #[error("LAB_SCENARIO must be one of {names}; got {0:?}", names = Scenario::NAMES.join(", "))]
    UnknownScenario(String),
    #[error("{name} must be a decimal integer from {min} to {max}; got {value:?}")]
    BadNumber { name: &'static str, value: String, min: u64, max: u64 },
}

impl ProbeConfig {
    /// Reads the configuration through `var` (the process environment, or a map in tests). `Ok(None)` when
    /// `LAB_SCENARIO` is unset or empty: the server then runs in its normal mode.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ProbeConfigError> {
        let Some(name) = var("LAB_SCENARIO").filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let scenario = Scenario::parse(&name).ok_or(ProbeConfigError::UnknownScenario(name))?;
        let delay_ms = number(&var, "LAB_DELAY_MS", 1000, 10_000)?;
        let failures = number(&var, "LAB_FAILURES", 2, 10)? as u32;
        Ok(Some(Self { scenario, delay_ms, failures }))
    }
}

/// Parses an optional decimal variable: digits only (no sign, spaces, hex or exponent), within `0..=max`.
fn number(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: u64,
    max: u64,
) -> Result<u64, ProbeConfigError> {
    let Some(value) = var(name).filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    let bad = || ProbeConfigError::BadNumber { name, value: value.clone(), min: 0, max };
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    value.parse::<u64>().ok().filter(|n| *n <= max).ok_or_else(bad)
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ProbeArgs {
    /// Any text; echoed back by a healthy probe.
    pub message: String,
}

/// The probe server. Clones share the call counter, so `transient-error` counts per process.
#[derive(Clone)]
pub struct ProbeServer {
    router: ToolRouter<Self>,
    config: ProbeConfig,
    calls: Arc<AtomicU32>,
    scope: Option<Scope>,
}

impl ProbeServer {
    pub fn new(config: ProbeConfig, scope: Option<Scope>) -> Self {
        Self { router: Self::probe_router(), config, calls: Arc::default(), scope }
    }

    /// Another server (an HTTP session's or request's) sharing this one's configuration and call counter.
    pub fn sibling(&self) -> Self {
        Self { scope: None, ..self.clone() }
    }
}

#[tool_router(router = probe_router)]
impl ProbeServer {
    #[tool(description = "Probe the lab: behaves as the LAB_SCENARIO the server was started with.")]
    async fn lab_probe(
        &self,
        Parameters(args): Parameters<ProbeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let ok = || text_result(format!("lab_probe ok: {}", args.message));
        match self.config.scenario {
            Scenario::Healthy => Ok(ok()),
            Scenario::ToolError => Ok(tool_error("lab_probe failed: injected tool error")),
            Scenario::TransientError if call <= self.config.failures => {
                Ok(tool_error(format!("lab_probe failed: transient error {call} of {}", self.config.failures)))
            }
            Scenario::TransientError => Ok(ok()),
            Scenario::Delay => tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(self.config.delay_ms)) => Ok(ok()),
                () = ctx.ct.cancelled() => Ok(tool_error("The request was cancelled.")),
            },
            Scenario::Malformed => {
                let fault = FaultKind::InvalidResult(faultlab_engine::catalogue::InvalidResult {});
                arm_own_response(self.scope.as_ref(), &ctx, fault, format!("lab_probe ok: {}", args.message))
            }
            Scenario::Disconnect => {
                let fault = FaultKind::Disconnect(faultlab_engine::catalogue::Disconnect {});
                arm_own_response(self.scope.as_ref(), &ctx, fault, "lab_probe disconnecting".into())
            }
        }
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for ProbeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(crate::SERVER_NAME, env!("CARGO_PKG_VERSION")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> Result<Option<ProbeConfig>, ProbeConfigError> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ProbeConfig::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn unset_or_empty_scenario_means_normal_mode() {
        assert_eq!(parse(&[]), Ok(None));
        assert_eq!(parse(&[("LAB_SCENARIO", "")]), Ok(None));
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        let config = parse(&[("LAB_SCENARIO", "delay"), ("LAB_FAILURES", "")]).unwrap().unwrap();
        assert_eq!(config, ProbeConfig { scenario: Scenario::Delay, delay_ms: 1000, failures: 2 });
    }

    #[test]
    fn only_plain_decimal_digits_in_range_are_accepted() {
        for bad in ["0x10", "1e3", " 7", "7 ", "-1", "+1", "10001", "1.5"] {
            let err = parse(&[("LAB_SCENARIO", "delay"), ("LAB_DELAY_MS", bad)]).unwrap_err();
            assert!(err.to_string().starts_with("LAB_DELAY_MS must be"), "{bad}: {err}");
        }
        assert!(parse(&[("LAB_SCENARIO", "healthy"), ("LAB_FAILURES", "11")]).is_err());
        let ok = parse(&[("LAB_SCENARIO", "healthy"), ("LAB_DELAY_MS", "10000"), ("LAB_FAILURES", "0")]);
        assert_eq!(ok.unwrap().unwrap().delay_ms, 10_000);
    }

    #[test]
    fn an_unknown_scenario_is_named_in_the_error() {
        let err = parse(&[("LAB_SCENARIO", "flaky")]).unwrap_err();
        assert!(err.to_string().contains("LAB_SCENARIO") && err.to_string().contains("flaky"));
    }
}
