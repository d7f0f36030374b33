//! Tools that arm a catalogue fault on their own response: the response leaves the handler intact and the wire
//! layer changes it on the way out (the same code path the proxy uses for its rules).

use super::{FaultServer, check_range, tool_error};
use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::{AskMethod, ElicitationCompleteUnknown, RequestAfterResult};
use faultlab_engine::catalogue::{
    Duplicate, Framing, FramingStyle, HtmlPage, HttpStatus, ListChangedStorm, MAX_OVERSIZED_BYTES, MAX_RETRY_AFTER_SEC,
    MAX_SPLIT_PARTS, MAX_STORM_COUNT, Malformed, MalformedVariant, MissingId, NonJsonLine, NotJsonrpc, Oversized,
    ProgressAfterResult, ProtocolError, SplitWrite, Truncated, WrongId,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct MalformedArgs {
    /// Which JSON-RPC rule the response breaks.
    pub variant: MalformedVariant,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FramingArgs {
    /// `crlf`: the line ends in CRLF. `bom`: a UTF-8 byte-order mark precedes the message.
    pub style: FramingStyle,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct OversizedArgs {
    /// How many bytes of padding to add to the response (1 to 67108864).
    pub bytes: u64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SplitArgs {
    /// Into how many separate writes the response is cut (2 to 64).
    pub parts: u64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StormArgs {
    /// How many list_changed notifications precede the response (1 to 10000).
    pub count: u64,
    /// Which list they announce: tools (default), resources, or prompts.
    #[serde(default)]
    #[schemars(schema_with = "super::surface::paged_list_schema")]
    pub list: faultlab_engine::catalogue::ListName,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpStatusArgs {
    /// The HTTP status to answer with: 401, 403, 404, 429, 500 or 503.
    pub status: u16,
    /// Seconds for the Retry-After header (429 and 503), 0 to 86400.
    // Typed as a plain integer, optional by not being required: "integer or null" makes form-filling clients (the
    // MCP Inspector) send the number as a string, which the tool then rejects.
    #[serde(default)]
    #[schemars(with = "u32")]
    pub retry_after_sec: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HtmlPageArgs {
    /// The status the page comes with: 200 (a sign-in page), 502, 503 or 504 (nginx's error page).
    pub status: u16,
    /// Seconds for the Retry-After header, 0 to 86400.
    #[serde(default)]
    #[schemars(with = "u32")]
    pub retry_after_sec: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct NotJsonrpcArgs {
    /// The status the JSON comes with: 200, 500, 502, 503 or 504.
    pub status: u16,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ProtocolErrorArgs {
    /// -32020 (header mismatch), -32021 (missing required client capability) or -32022 (unsupported protocol
    /// version, with `data.supported`).
    pub code: i32,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AskAfterArgs {
    /// Which request follows the result: `elicitation`, `sampling` or `roots`.
    pub method: AskMethod,
}

#[tool_router(router = wire_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Answer with valid JSON that is invalid JSON-RPC: variant missing-jsonrpc, \
                          invalid-jsonrpc-version or result-with-error. Only this response is changed.")]
    async fn malformed_message(
        &self,
        Parameters(args): Parameters<MalformedArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let text = json!({"status": "fault-activated", "variant": args.variant}).to_string();
        self.arm_own_response(&ctx, FaultKind::Malformed(Malformed { variant: args.variant }), text)
    }

    #[tool(description = "Send this response twice, with the same id.")]
    async fn duplicate_response(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(&ctx, FaultKind::Duplicate(Duplicate {}), "duplicate response activated".into())
    }

    #[tool(description = "Answer with an id that no request used.")]
    async fn wrong_id(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(&ctx, FaultKind::WrongId(WrongId {}), "wrong id activated".into())
    }

    #[tool(description = "Answer without an id.")]
    async fn missing_id(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(&ctx, FaultKind::MissingId(MissingId {}), "missing id activated".into())
    }

    #[tool(description = "Send only the first half of this response's bytes, then end the frame.")]
    async fn truncated_response(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(&ctx, FaultKind::Truncated(Truncated {}), "truncated response activated".into())
    }

    #[tool(description = "Write a line that is not JSON before this response.")]
    async fn non_json_line(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(&ctx, FaultKind::NonJsonLine(NonJsonLine {}), "non-JSON line activated".into())
    }

    #[tool(description = "Frame this response unusually: style crlf (CRLF line ending) or bom (byte-order mark).")]
    async fn framing(
        &self,
        Parameters(args): Parameters<FramingArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(&ctx, FaultKind::Framing(Framing { style: args.style }), "framing activated".into())
    }

    #[tool(description = "Pad this response with `bytes` bytes of text content (1 to 67108864).")]
    async fn oversized_response(
        &self,
        Parameters(args): Parameters<OversizedArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(error) = check_range("bytes", args.bytes, 1, MAX_OVERSIZED_BYTES as u64) {
            return Ok(tool_error(error));
        }
        let fault = FaultKind::Oversized(Oversized { bytes: args.bytes as usize });
        self.arm_own_response(&ctx, fault, "oversized response activated".into())
    }

    #[tool(description = "Write this response in `parts` separate writes (2 to 64).")]
    async fn split_response(
        &self,
        Parameters(args): Parameters<SplitArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(error) = check_range("parts", args.parts, 2, u64::from(MAX_SPLIT_PARTS)) {
            return Ok(tool_error(error));
        }
        let fault = FaultKind::SplitWrite(SplitWrite { parts: args.parts as u8 });
        self.arm_own_response(&ctx, fault, "split response activated".into())
    }

    #[tool(description = "After this call's result, send the client a request about the ended call: method \
                          elicitation (elicitation/create), sampling (sampling/createMessage) or roots (roots/list).")]
    async fn request_after_result(
        &self,
        Parameters(args): Parameters<AskAfterArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let text = json!({"status": "fault-activated", "method": args.method.method()}).to_string();
        self.arm_own_response(&ctx, FaultKind::RequestAfterResult(RequestAfterResult { method: args.method }), text)
    }

    #[tool(description = "Before this call's result, send notifications/elicitation/complete for an elicitation id \
                          no request carried.")]
    async fn elicitation_complete_unknown(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(
            &ctx,
            FaultKind::ElicitationCompleteUnknown(ElicitationCompleteUnknown {}),
            "elicitation completion for an unknown id activated".into(),
        )
    }

    #[tool(description = "Send a progress notification for this request after its result.")]
    async fn progress_after_result(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        self.arm_own_response(
            &ctx,
            FaultKind::ProgressAfterResult(ProgressAfterResult {}),
            "progress after result activated".into(),
        )
    }

    #[tool(description = "Send `count` notifications/tools/list_changed (with list, the resources or prompts one) \
                          before this response (1 to 10000).")]
    async fn list_changed_storm(
        &self,
        Parameters(args): Parameters<StormArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(error) = check_range("count", args.count, 1, u64::from(MAX_STORM_COUNT)) {
            return Ok(tool_error(error));
        }
        let fault = FaultKind::ListChangedStorm(ListChangedStorm { count: args.count as u32, list: args.list });
        self.arm_own_response(&ctx, fault, "list_changed storm activated".into())
    }

    #[tool(description = "Answer this request with an HTTP error status (401, 403, 404, 429, 500 or 503) and a \
                          JSON-RPC error body; 429 and 503 carry Retry-After when retryAfterSec is given.")]
    async fn http_status(
        &self,
        Parameters(args): Parameters<HttpStatusArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(secs) = args.retry_after_sec
            && let Err(error) = check_range("retryAfterSec", u64::from(secs), 0, u64::from(MAX_RETRY_AFTER_SEC))
        {
            return Ok(tool_error(error));
        }
        let fault =
            FaultKind::HttpStatus(HttpStatus { retry_after_sec: args.retry_after_sec, ..HttpStatus::new(args.status) });
        self.arm_own_response(&ctx, fault, format!("http status {} activated", args.status))
    }

    #[tool(description = "Answer this request as a reverse proxy would: a text/html page, nginx's error page with \
                          status 502, 503 or 504, or a sign-in page with 200; no JSON-RPC reply arrives.")]
    async fn html_page(
        &self,
        Parameters(args): Parameters<HtmlPageArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let fault = FaultKind::HtmlPage(HtmlPage { status: args.status, retry_after_sec: args.retry_after_sec });
        self.arm_own_response(&ctx, fault, format!("html page {} activated", args.status))
    }

    #[tool(description = "Answer this request with application/json that is not JSON-RPC \
                          ({\"message\": ..., \"status\": ...}) and the given status (200, 500, 502, 503 or 504).")]
    async fn not_jsonrpc(
        &self,
        Parameters(args): Parameters<NotJsonrpcArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let fault = FaultKind::NotJsonrpc(NotJsonrpc { status: args.status });
        self.arm_own_response(&ctx, fault, format!("not json-rpc {} activated", args.status))
    }

    #[tool(description = "Answer this request with a 2026-07-28 transport error: HTTP 400 and JSON-RPC -32020 \
                          (header mismatch), -32021 (missing required client capability) or -32022 (unsupported \
                          protocol version, data.supported listing the other era's version).")]
    async fn protocol_error(
        &self,
        Parameters(args): Parameters<ProtocolErrorArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let fault = FaultKind::ProtocolError(ProtocolError { code: args.code });
        self.arm_own_response(&ctx, fault, format!("protocol error {} activated", args.code))
    }
}
