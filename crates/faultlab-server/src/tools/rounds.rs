//! `input_rounds`: a multi-round-trip `tools/call` (2026-07-28, SEP-2322, as rmcp 3.11 implements it), and the
//! catalogue's `input_required` faults.
//!
//! The first call answers `resultType: "input_required"` with one form-mode `elicitation/create` (key
//! [`CONFIRM_KEY`], a boolean `confirm`) and a `requestState`; the client retries the same call with
//! `inputResponses` and that `requestState`, and the call finishes with a normal result. On 2025-11-25 the tool
//! answers a tool error saying why (there, a server asks during the call instead: `ask_client`).
//!
//! The `requestState` is an opaque handle (a random UUID behind a prefix); what it stands for stays in the
//! connection's [`RoundBook`], so nothing a client could change is trusted. A handle is single-use: the retry
//! that presents it consumes it. Bounds: an echoed `requestState` longer than [`MAX_REQUEST_STATE_BYTES`] is
//! refused unread; a book holds at most [`MAX_ROUNDS`] issued handles (a stdio connection's, a 2025-11-25
//! session's; the 2026-07-28 stateless requests of one process share one book of [`MAX_STATELESS_ROUNDS`]); when
//! full, the oldest handle is forgotten, so its retry is refused like any unknown handle. A refused handle is
//! JSON-RPC error -32602 whose message names `requestState`.

use super::{FaultServer, is_modern, text_result, tool_error};
use faultlab_engine::catalogue::InputVariant;
use faultlab_engine::catalogue::input_required::UNKNOWN_RESULT_TYPE;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, InputRequest, InputRequests, InputRequiredResult, ResultType};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

/// The `inputRequests` key of the one elicitation the tool asks.
pub const CONFIRM_KEY: &str = "confirm";
/// Longest `requestState` the server reads, in bytes (its own are 48).
pub const MAX_REQUEST_STATE_BYTES: usize = 256;
/// Most handles one connection's book holds at once.
pub const MAX_ROUNDS: usize = 32;
/// Most handles the stateless (2026-07-28) requests of one process hold at once.
pub const MAX_STATELESS_ROUNDS: usize = 256;
/// What every handle the server issues starts with.
const STATE_PREFIX: &str = "faultlab-rounds-";

#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoundsArgs {
    /// The catalogue's `input_required` variant the rounds commit (none when absent): endless, tampered_state or
    /// unknown_result_type.
    #[serde(default)]
    #[schemars(with = "InputVariant")]
    pub fault: Option<InputVariant>,
}

/// One issued handle: the round it answered and the fault the call was made with.
#[derive(Debug, Clone)]
struct Issued {
    state: String,
    round: u32,
    fault: Option<InputVariant>,
}

/// A connection's issued `requestState` handles, oldest first, bounded.
pub struct RoundBook {
    issued: Mutex<VecDeque<Issued>>,
    cap: usize,
}

impl RoundBook {
    pub fn new(cap: usize) -> Self {
        Self { issued: Mutex::new(VecDeque::new()), cap }
    }

    /// The book the stateless requests of this process share.
    pub fn stateless() -> Arc<Self> {
        static BOOK: OnceLock<Arc<RoundBook>> = OnceLock::new();
        BOOK.get_or_init(|| Arc::new(Self::new(MAX_STATELESS_ROUNDS))).clone()
    }

    fn issued(&self) -> std::sync::MutexGuard<'_, VecDeque<Issued>> {
        self.issued.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new handle for `round`, forgetting the oldest when the book is full.
    fn issue(&self, round: u32, fault: Option<InputVariant>) -> String {
        let state = format!("{STATE_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let mut issued = self.issued();
        while issued.len() >= self.cap {
            issued.pop_front();
        }
        issued.push_back(Issued { state: state.clone(), round, fault });
        state
    }

    /// The handle's entry, consumed (a handle answers one retry).
    fn take(&self, state: &str) -> Option<Issued> {
        let mut issued = self.issued();
        let at = issued.iter().position(|i| i.state == state)?;
        issued.remove(at)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.issued().len()
    }
}

/// The round's answer: one form-mode elicitation for a boolean `confirm`, and the handle to echo.
fn ask_confirm(book: &RoundBook, round: u32, fault: Option<InputVariant>) -> Result<CallToolResponse, ErrorData> {
    let elicitation = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": format!("Round {round}: confirm to let input_rounds finish."),
            "requestedSchema": {
                "type": "object",
                "properties": {"confirm": {"type": "boolean", "description": "Let the call finish"}},
                "required": ["confirm"]
            }
        }
    });
    let request: InputRequest = serde_json::from_value(elicitation)
        .map_err(|e| ErrorData::internal_error(format!("the elicitation does not parse: {e}"), None))?;
    let requests = InputRequests::from([(CONFIRM_KEY.to_owned(), request)]);
    let state = book.issue(round, fault);
    Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
}

fn refused_state(why: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_params(format!("requestState {why}"), Some(json!({"field": "requestState"})))
}

/// The client's answer to the `confirm` elicitation, as the result says it: accepted with a boolean, declined or
/// cancelled; anything else is -32602 naming `inputResponses.confirm`.
fn finish(responses: Option<&rmcp::model::InputResponses>, round: u32) -> Result<CallToolResponse, ErrorData> {
    let bad = |why: &str| ErrorData::invalid_params(format!("inputResponses.{CONFIRM_KEY} {why}"), None);
    let answer = responses.and_then(|r| r.get(CONFIRM_KEY)).ok_or_else(|| bad("is missing"))?;
    let text = match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let confirm = answer
                .pointer("/content/confirm")
                .and_then(Value::as_bool)
                .ok_or_else(|| bad("was accepted without a boolean content.confirm"))?;
            format!("input_rounds finished after {round} round(s): confirm = {confirm}")
        }
        Some(action @ ("decline" | "cancel")) => {
            format!("input_rounds finished after {round} round(s): the user chose {action}; nothing was done")
        }
        _ => return Err(bad("needs action accept, decline or cancel")),
    };
    Ok(text_result(text).into())
}

#[tool_router(router = rounds_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "A multi-round-trip call (2026-07-28 only): the first answer is resultType input_required \
                          with one form elicitation (inputRequests.confirm, a boolean) and a requestState; retry \
                          the same call with inputResponses and that requestState to get the result. fault none, \
                          endless, tampered_state or unknown_result_type (the catalogue's input_required \
                          variants).")]
    async fn input_rounds(
        &self,
        Parameters(args): Parameters<RoundsArgs>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !is_modern(&ctx) {
            let version = ctx.protocol_version().map_or_else(|| "none".to_owned(), |v| v.to_string());
            return Ok(tool_error(format!(
                "input_rounds needs protocol 2026-07-28 (multi-round-trip requests, SEP-2322); this connection \
                 negotiated {version}, where a server asks during the call instead (ask_client)"
            ))
            .into());
        }
        let book = &self.rounds;
        let Some(state) = state else {
            if args.fault == Some(InputVariant::UnknownResultType) {
                let mut result = text_result("input_rounds answered with a resultType no MCP version defines");
                result.result_type = Some(
                    serde_json::from_value::<ResultType>(json!(UNKNOWN_RESULT_TYPE))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
                );
                return Ok(result.into());
            }
            return ask_confirm(book, 1, args.fault);
        };
        if state.len() > MAX_REQUEST_STATE_BYTES {
            return Err(refused_state(format_args!(
                "is {} bytes; this server issues none longer than {MAX_REQUEST_STATE_BYTES}",
                state.len()
            )));
        }
        let Some(issued) = book.take(&state) else {
            return Err(refused_state("was not issued by this server, or was already used or forgotten"));
        };
        match issued.fault {
            // The state is the one it was given: the server refuses it anyway, as a server whose integrity key
            // rotated would.
            Some(InputVariant::TamperedState) => {
                Err(refused_state("failed the server's integrity check (treated as tampered)"))
            }
            Some(InputVariant::Endless) => ask_confirm(book, issued.round.saturating_add(1), issued.fault),
            _ => finish(responses.as_ref(), issued.round),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_book_forgets_its_oldest_handle_and_a_handle_answers_once() {
        let book = RoundBook::new(2);
        let first = book.issue(1, None);
        let second = book.issue(1, None);
        let third = book.issue(1, Some(InputVariant::Endless));
        assert_eq!(book.len(), 2);
        assert!(book.take(&first).is_none());
        assert_eq!(book.take(&third).map(|i| i.fault), Some(Some(InputVariant::Endless)));
        assert!(book.take(&third).is_none());
        assert!(book.take(&second).is_some());
        assert!(second.starts_with(STATE_PREFIX) && second.len() <= MAX_REQUEST_STATE_BYTES);
    }
}
