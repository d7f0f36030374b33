//! The tool surface under faults: a tool list that drifts between two listings, pages whose cursors break, and
//! structured results that break their `outputSchema`.
//!
//! Every tool here arms the catalogue's own faults (`list_drift`, `unknown_tool`, `broken_pagination`,
//! `page_error`, `list_changed_storm` and the four structured-output faults), so the server shows a client what
//! the proxy shows it over a real server. A list that drifts lasts: the drift and pagination tools arm *standing*
//! faults ([`faultlab_engine::Standing`]) on every later `tools/list` (and on calls to the tool that is gone) of the
//! connection, which is why they need a connection that outlives a call (stdio, 2025-11-25 HTTP sessions).
//!
//! The drift acts on [`PROBE`], a tool that exists only to be changed; its renamed twin [`PROBE_RENAMED`] answers
//! only once the list renamed it, and is never listed by the server itself.

use super::{FaultServer, offered, request_id, text_result, tool_error};
use faultlab_engine::catalogue::list_drift::{DRIFT_PROPERTY, Drift};
use faultlab_engine::catalogue::{
    BrokenPagination, ContentStructuredMismatch, ErrorStructuredContent, ListChangedStorm, ListDrift, ListName,
    MissingStructuredContent, OutputSchemaViolation, PageError, PaginationVariant, UnknownTool,
};
use faultlab_engine::{Engine, FaultKind, Standing};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// The tool the drift changes.
pub const PROBE: &str = "surface_probe";
/// What `renamed` drift calls [`PROBE`] (the catalogue's `_v2` suffix).
pub const PROBE_RENAMED: &str = "surface_probe_v2";
/// The tools that arm standing faults: they need a connection that outlives a call.
pub const STANDING_TOOLS: &[&str] = &["tool_list_drift", "list_pagination", PROBE, PROBE_RENAMED];
/// Tools the server answers but never lists itself (a drifted list may show them).
pub const UNLISTED: &[&str] = &[PROBE_RENAMED];
/// Largest `pageSize`.
pub const MAX_PAGE_SIZE: u32 = faultlab_engine::catalogue::broken_pagination::MAX_PAGE_SIZE;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// The item is gone from later lists; calling, reading or getting it gets an error.
    Removed,
    /// Later lists add `_v2` to its name (a resource's URI too); the old name gets an error, the new one answers.
    Renamed,
    /// Tools: its `inputSchema` gains the required string `confirm`; a call without it gets -32602.
    InputSchema,
    /// Prompts: its `arguments` gain the required `confirm`; a get without it gets -32602.
    Arguments,
    /// Nothing changes (with `notify`: a list_changed notification for a list that is the same).
    Unchanged,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DriftArgs {
    /// How later listings change their item (surface_probe, note-12, lab_prompt_12): removed, renamed,
    /// input-schema (tools), arguments (prompts), or unchanged.
    pub change: Change,
    /// Which list drifts: tools (default), resources, or prompts.
    #[serde(default)]
    #[schemars(schema_with = "paged_list_schema")]
    pub list: ListName,
    /// Send the list's list_changed notification before this result (default true). false: the list changes
    /// silently.
    #[serde(default = "yes")]
    pub notify: bool,
}

fn yes() -> bool {
    true
}

/// A `list_pagination` variant: the catalogue's `broken_pagination` ones, `page-error`, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Paging {
    Broken(PaginationVariant),
    Other(OtherPaging),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OtherPaging {
    /// Page 2 is answered with a JSON-RPC error.
    PageError,
    /// Pages are right again (ends the pagination fault).
    Off,
}

/// Every `list_pagination` variant's name, as `Paging` reads it.
pub const PAGING_NAMES: [&str; 8] =
    ["stuck", "cycle", "empty-continuation", "empty-end", "repeated-name", "endless", "page-error", "off"];

/// `variant` as one string enum with a `type`, not the `anyOf` of two enums schemars derives: agent frameworks that
/// convert a tool's schema read `type` on every `anyOf` branch (smolagents 1.x raises `KeyError: 'type'` on a `$ref`
/// there and cannot list the server at all).
fn paging_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": PAGING_NAMES})
}

/// `list` as one typed string enum (see [`paging_schema`] for why every branch needs a `type`).
pub(super) fn paged_list_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["tools", "resources", "prompts"], "default": "tools"})
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaginationArgs {
    /// How later replies of the list are paged: stuck, cycle, empty-continuation, empty-end, repeated-name,
    /// endless, page-error, or off.
    #[schemars(schema_with = "paging_schema")]
    pub variant: Paging,
    /// Which list is paged: tools (default), resources, or prompts.
    #[serde(default)]
    #[schemars(schema_with = "paged_list_schema")]
    pub list: ListName,
    /// Items per page, 1 to 1000 (default 5).
    #[serde(default)]
    #[schemars(with = "u32")]
    pub page_size: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ProbeArgs {
    /// Any text; it is echoed.
    #[serde(default)]
    #[schemars(with = "String")]
    pub text: Option<String>,
    /// Required once the list's input-schema drift made it so.
    #[serde(default)]
    #[schemars(with = "String")]
    pub confirm: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StructuredFault {
    /// A result that conforms to the outputSchema.
    None,
    /// structuredContent the outputSchema rejects.
    OutputSchemaViolation,
    /// isError: true with structuredContent that does not conform (a client must not validate it).
    ErrorStructuredContent,
    /// No structuredContent although the tool declares an outputSchema.
    MissingStructuredContent,
    /// structuredContent that conforms but disagrees with the text content.
    ContentStructuredMismatch,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StructuredArgs {
    /// Which structured-output fault this result gets (none: a conforming result).
    pub fault: StructuredFault,
}

/// Pages of 5 by default: the server lists about 50 tools, so a correct client fetches about 10 pages.
const DEFAULT_PAGE_SIZE: u32 = 5;

/// `structured_output`'s declared result: a stock level.
pub fn structured_schema() -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 0},
            "status": {"type": "string", "enum": ["in_stock", "sold_out"]}
        },
        "required": ["count", "status"],
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("a JSON object literal"),
    }
}

/// The item a drift of `list` changes: the probe tool, the last resource (by URI), the last prompt.
pub fn drift_target(list: ListName) -> String {
    match list {
        ListName::Tools => PROBE.into(),
        ListName::Resources => offered::uri(offered::ITEMS),
        ListName::Prompts => offered::prompt_name(offered::ITEMS),
    }
}

/// The standing faults `change` of `list` needs: the drifted list, and for tools -32602 for calls to a name that is
/// gone (reads of a resource and gets of a prompt that are gone are refused by the server itself, see
/// [`refuse_drifted`]). An error when the change does not fit the list.
fn drift_faults(change: Change, list: ListName) -> Result<Vec<Standing>, String> {
    let drift = match change {
        Change::Removed => Drift::Removed,
        Change::Renamed => Drift::Renamed,
        Change::InputSchema => Drift::InputSchema,
        Change::Arguments => Drift::Arguments,
        Change::Unchanged => return Ok(vec![]),
    };
    let fault = FaultKind::ListDrift(ListDrift { change: drift, tool: Some(drift_target(list)), list });
    fault.validate()?;
    let mut faults = vec![Standing { method: list.method().into(), tool: None, fault }];
    if list == ListName::Tools && matches!(drift, Drift::Removed | Drift::Renamed) {
        let gone = FaultKind::UnknownTool(UnknownTool {});
        faults.push(Standing { method: "tools/call".into(), tool: Some(PROBE.into()), fault: gone });
    }
    Ok(faults)
}

/// The drift the engine applies to later listings of `list` now, if any.
fn current_drift(engine: &Engine, list: ListName) -> Option<Drift> {
    match engine.standing_for(list.method(), None) {
        Some(FaultKind::ListDrift(drift)) => Some(drift.change),
        _ => None,
    }
}

/// Whether the server refuses a read of resource `name` (its URI) or a get of prompt `name` while the list drifted:
/// the item that is gone (or its old name) is an error, as is its `_v2` twin before a rename, and a get without
/// the argument an `arguments` drift made required. A renamed item is answered under its new name ([`undrifted`]).
pub(super) fn refuse_drifted(engine: &Engine, list: ListName, name: &str, has_confirm: bool) -> Result<(), ErrorData> {
    let target = drift_target(list);
    let missing = |message: String| match list {
        ListName::Resources => ErrorData::resource_not_found(message, None),
        _ => ErrorData::invalid_params(message, None),
    };
    match current_drift(engine, list) {
        Some(Drift::Removed | Drift::Renamed) if name == target => {
            Err(missing(format!("no {} {name:?} (the {} list changed)", item_word(list), list.key())))
        }
        Some(Drift::Renamed) => Ok(()),
        _ if name == format!("{target}_v2") => Err(missing(format!("no {} {name:?}", item_word(list)))),
        Some(Drift::Arguments) if name == target && !has_confirm => Err(ErrorData::invalid_params(
            format!("{name}: missing required argument {DRIFT_PROPERTY} (the prompt's arguments changed)"),
            None,
        )),
        _ => Ok(()),
    }
}

/// The name the server's own list gives an item a renamed list calls `name` (its `_v2` twin), else `name`.
pub(super) fn undrifted(engine: &Engine, list: ListName, name: &str) -> String {
    let target = drift_target(list);
    if current_drift(engine, list) == Some(Drift::Renamed) && name == format!("{target}_v2") {
        return target;
    }
    name.to_owned()
}

fn item_word(list: ListName) -> &'static str {
    match list {
        ListName::Tools => "tool",
        ListName::Resources => "resource",
        ListName::Prompts => "prompt",
    }
}

/// Arms `list_changed_storm` (one notification of `list`) on this call's own reply, and answers `text`.
fn notify_and_answer(
    engine: &Engine,
    ctx: &RequestContext<RoleServer>,
    notify: Option<ListName>,
    text: Value,
) -> CallToolResult {
    if let Some(list) = notify {
        let storm = FaultKind::ListChangedStorm(ListChangedStorm { count: 1, list });
        if let Err(err) = engine.arm(request_id(ctx), storm) {
            return tool_error(err.to_string());
        }
    }
    text_result(text.to_string())
}

#[tool_router(router = surface_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(description = "Change what later listings show of one item: with list tools (default) surface_probe, \
                          resources note-12, prompts lab_prompt_12. change removed (using it then gets an error), \
                          renamed (adds _v2), input-schema (tools: a new required argument confirm), arguments \
                          (prompts: a new required argument confirm) or unchanged. notify (default true) sends the \
                          list's list_changed notification before this result. Lasts for the connection; a later \
                          call replaces it.")]
    async fn tool_list_drift(
        &self,
        Parameters(args): Parameters<DriftArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let list = args.list;
        let faults = match drift_faults(args.change, list) {
            Ok(faults) => faults,
            Err(error) => return Ok(tool_error(error)),
        };
        let engine = self.scope(&ctx)?.engine;
        if list == ListName::Tools {
            engine.disarm_standing("tools/call");
        }
        if current_drift(&engine, list).is_some() {
            engine.disarm_standing(list.method());
        }
        for standing in faults {
            if let Err(err) = engine.arm_standing(standing) {
                return Ok(tool_error(err.to_string()));
            }
        }
        let notify = args.notify;
        let text = json!({"status": "drift-armed", "list": list.key(), "item": drift_target(list),
                          "change": change_name(args.change), "notify": notify});
        Ok(notify_and_answer(&engine, &ctx, notify.then_some(list), text))
    }

    #[tool(description = "Page later tools/list (or, with list, resources/list or prompts/list) replies with \
                          broken cursors: variant stuck, cycle, empty-continuation, empty-end, repeated-name, \
                          endless, page-error, or off; pageSize items per page (1 to 1000, default 5). It sends \
                          the list's list_changed notification before this result, so a client lists again. Lasts \
                          for the connection.")]
    async fn list_pagination(
        &self,
        Parameters(args): Parameters<PaginationArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let page_size = args.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if let Err(error) = super::check_range("pageSize", u64::from(page_size), 1, u64::from(MAX_PAGE_SIZE)) {
            return Ok(tool_error(error));
        }
        let engine = self.scope(&ctx)?.engine;
        let fault = match args.variant {
            Paging::Broken(variant) => Some(FaultKind::BrokenPagination(BrokenPagination { variant, page_size })),
            Paging::Other(OtherPaging::PageError) => Some(FaultKind::PageError(PageError { page: 2, page_size })),
            Paging::Other(OtherPaging::Off) => None,
        };
        let method = args.list.method();
        // One standing fault per list: pagination replaces a drift of the list and the other way round.
        engine.disarm_standing(method);
        if let Some(fault) = fault
            && let Err(err) = engine.arm_standing(Standing { method: method.into(), tool: None, fault })
        {
            return Ok(tool_error(err.to_string()));
        }
        let text = json!({"status": "pagination-armed", "list": args.list.key(), "pageSize": page_size,
                          "variant": serde_json::to_value(args.variant).unwrap_or_default(), "notify": true});
        Ok(notify_and_answer(&engine, &ctx, Some(args.list), text))
    }

    #[tool(description = "The tool the list drift changes: echoes text. After input-schema drift it requires \
                          confirm.")]
    async fn surface_probe(
        &self,
        Parameters(args): Parameters<ProbeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let engine = self.scope(&ctx)?.engine;
        probe(&engine, PROBE, args)
    }

    #[tool(description = "surface_probe under the name renamed drift gives it (answers only after that drift).")]
    async fn surface_probe_v2(
        &self,
        Parameters(args): Parameters<ProbeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let engine = self.scope(&ctx)?.engine;
        if current_drift(&engine, ListName::Tools) != Some(Drift::Renamed) {
            // What a server says for a tool it does not have, as for any unlisted name.
            return Err(ErrorData::invalid_params(format!("Unknown tool: {PROBE_RENAMED}"), None));
        }
        probe(&engine, PROBE_RENAMED, args)
    }

    #[tool(
        description = "Answer a stock level as structuredContent that conforms to this tool's outputSchema, then \
                       break it as fault says: none, output_schema_violation, error_structured_content, \
                       missing_structured_content or content_structured_mismatch.",
        output_schema = structured_schema()
    )]
    async fn structured_output(
        &self,
        Parameters(args): Parameters<StructuredArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let fault = match args.fault {
            StructuredFault::None => None,
            StructuredFault::OutputSchemaViolation => Some(FaultKind::OutputSchemaViolation(OutputSchemaViolation {})),
            StructuredFault::ErrorStructuredContent => {
                Some(FaultKind::ErrorStructuredContent(ErrorStructuredContent {}))
            }
            StructuredFault::MissingStructuredContent => {
                Some(FaultKind::MissingStructuredContent(MissingStructuredContent {}))
            }
            StructuredFault::ContentStructuredMismatch => {
                Some(FaultKind::ContentStructuredMismatch(ContentStructuredMismatch {}))
            }
        };
        let result = CallToolResult::structured(json!({"count": 10, "status": "in_stock"}));
        let Some(fault) = fault else { return Ok(result) };
        let engine = self.scope(&ctx)?.engine;
        // The faults read the tool's schema from what the engine learnt; the client need not have listed.
        engine.learn_tools(&json!({"tools": [{"name": "structured_output", "outputSchema": *structured_schema()}]}));
        match engine.arm(request_id(&ctx), fault) {
            Ok(()) => Ok(result),
            Err(err) => Ok(tool_error(err.to_string())),
        }
    }
}

fn change_name(change: Change) -> &'static str {
    match change {
        Change::Removed => "removed",
        Change::Renamed => "renamed",
        Change::InputSchema => "input-schema",
        Change::Arguments => "arguments",
        Change::Unchanged => "unchanged",
    }
}

/// The probe's answer, or -32602 when the list now requires `confirm` and the call did not send it.
fn probe(engine: &Engine, name: &str, args: ProbeArgs) -> Result<CallToolResult, ErrorData> {
    if current_drift(engine, ListName::Tools) == Some(Drift::InputSchema) && args.confirm.is_none() {
        let message = format!("{name}: missing required argument {DRIFT_PROPERTY} (the tool's inputSchema changed)");
        return Err(ErrorData::invalid_params(message, None));
    }
    Ok(text_result(json!({"tool": name, "text": args.text.unwrap_or_default()}).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_arms_the_catalogue_faults_it_needs() {
        let faults = |change| {
            let faults = drift_faults(change, ListName::Tools).unwrap();
            faults.into_iter().map(|s| (s.method, s.fault.name())).collect::<Vec<_>>()
        };
        assert_eq!(
            faults(Change::Removed),
            [("tools/list".into(), "list_drift"), ("tools/call".into(), "unknown_tool")]
        );
        assert_eq!(faults(Change::Renamed)[1].1, "unknown_tool");
        assert_eq!(faults(Change::InputSchema), [("tools/list".into(), "list_drift")]);
        assert!(faults(Change::Unchanged).is_empty());
        // A resource or prompt that is gone is refused by the server's own handlers, not by unknown_tool.
        let prompts = drift_faults(Change::Removed, ListName::Prompts).unwrap();
        assert_eq!(prompts.iter().map(|s| s.method.as_str()).collect::<Vec<_>>(), ["prompts/list"]);
        assert!(drift_faults(Change::Arguments, ListName::Tools).unwrap_err().contains("needs list prompts"));
        assert!(drift_faults(Change::InputSchema, ListName::Resources).unwrap_err().contains("needs list tools"));
    }

    #[test]
    fn the_structured_schema_accepts_the_answer_and_rejects_a_missing_member() {
        use faultlab_engine::catalogue::observe::{Ending, seen};
        let schema = Value::Object((*structured_schema()).clone());
        let reply = |structured: Value| {
            let result = json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": structured});
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 2, "result": result})).unwrap()
        };
        let effect = |bytes: Vec<u8>| seen(&[bytes.as_slice()], &json!(2), Ending::Done, None, Some(&schema));
        assert_eq!(effect(reply(json!({"count": 10, "status": "in_stock"}))).name(), "result");
        assert_eq!(effect(reply(json!({"status": "in_stock"}))).name(), "invalid");
    }
}
