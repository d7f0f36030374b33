//! The tool surface as the reference client keeps it: the tool list (fetched page by page, bounded), listed again
//! after `notifications/tools/list_changed` or a -32602 for a tool it had listed, and each call held to what the
//! list says: is the tool still listed, do the arguments fit its `inputSchema`, does the result fit its
//! `outputSchema`.
//!
//! Listing stops, keeping what it has, at the page limit, at a cursor it has already followed, and at an error;
//! the [`Listing`] says which. When asked, the client keeps the resources and prompts lists the same way (paged,
//! bounded, listed again after `notifications/resources/list_changed` or `prompts/list_changed`). `""` is a cursor like any other in 2026-07-28 sessions and the end of the list in
//! 2025-11-25 ones (each era's reading of the spec).

use crate::connection::{Connection, Era};
use crate::outcome::{Observation, Outcome};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

/// Pages one listing fetches at most, unless the scenario says otherwise.
pub const DEFAULT_PAGE_LIMIT: u32 = 20;
/// Largest page limit a scenario may set.
pub const MAX_PAGE_LIMIT: u32 = 1000;
/// The notification that makes the client list the tools again.
pub const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// A list the client keeps: the tools always, the resources and prompts when asked.
pub use faultlab_wire::ListName;

/// `list` as the enum it is (the type lives in the wire crate, which builds no schemas).
fn list_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::try_from(ListName::schema_json()).unwrap_or_default()
}

/// Why the client listed tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListReason {
    /// The first listing of the connection.
    Initial,
    /// `notifications/tools/list_changed` arrived since the last listing.
    ListChanged,
    /// A call to a listed tool was answered -32602 (a tool the server no longer knows, or arguments that no
    /// longer fit its schema).
    InvalidParams,
}

/// How a listing ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListEnd {
    /// A page without a next cursor (or, in 2025-11-25, with `""`).
    Complete,
    /// The page limit was reached with a next cursor still to follow.
    PageLimit,
    /// A next cursor the listing had already followed: the pages loop.
    RepeatedCursor,
    /// A page was answered with an error, or not at all.
    Error,
}

/// One listing: why, how many pages, how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    /// The list: tools (not written), resources or prompts.
    #[serde(default, skip_serializing_if = "ListName::is_tools")]
    #[schemars(schema_with = "list_schema")]
    pub list: ListName,
    pub reason: ListReason,
    pub pages: u32,
    /// Distinct items the listing kept: tools, or for `list` resources (by URI) or prompts.
    pub tools: u32,
    pub end: ListEnd,
    /// Names listed more than once (kept once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub duplicate_names: Vec<String>,
    /// What ended a listing that did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What the client made of a result against the tool's `outputSchema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Validation {
    /// `structuredContent` conforms.
    Valid,
    /// `structuredContent` does not conform: a strict client rejects the result.
    Invalid,
    /// The tool declares an `outputSchema` and the result has no `structuredContent`.
    Missing,
    /// `isError: true`: an error result is not held to the schema.
    SkippedIsError,
    /// The tool listed no `outputSchema` (or is not listed).
    NoSchema,
}

/// What the tool surface said about one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceObservation {
    /// Listings made before the call (the first, and each after a change was announced or noticed).
    pub listings: Vec<Listing>,
    /// The called tool is in the latest list.
    pub listed: bool,
    /// The called tool was listed earlier and is not in the latest list.
    pub vanished: bool,
    /// The arguments fit the latest listed `inputSchema` (absent for a tool not listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_valid: Option<bool>,
    /// The result against the listed `outputSchema` (absent without a result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Validation>,
    /// Why the result is invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_detail: Option<String>,
    /// A text block that is JSON and differs from `structuredContent` (MCP: the text SHOULD be its serialization).
    pub content_disagrees: bool,
    /// The resources (URIs) and prompts (names) the client holds after the listings, for each list it keeps.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, Vec<String>>")]
    pub held: BTreeMap<ListName, Vec<String>>,
}

impl SurfaceObservation {
    /// Tools listings made because of a change (all but the first).
    pub fn relists(&self) -> u32 {
        self.relists_of(ListName::Tools)
    }

    /// Pages the tools listings fetched.
    pub fn pages(&self) -> u32 {
        self.pages_of(ListName::Tools)
    }

    /// The latest tools listing.
    pub fn last(&self) -> Option<&Listing> {
        self.last_of(ListName::Tools)
    }

    /// Listings of `list` made because of a change.
    pub fn relists_of(&self, list: ListName) -> u32 {
        self.of(list).filter(|l| l.reason != ListReason::Initial).count() as u32
    }

    /// Pages the listings of `list` fetched.
    pub fn pages_of(&self, list: ListName) -> u32 {
        self.of(list).map(|l| l.pages).sum()
    }

    pub fn last_of(&self, list: ListName) -> Option<&Listing> {
        self.of(list).last()
    }

    fn of(&self, list: ListName) -> impl Iterator<Item = &Listing> {
        self.listings.iter().filter(move |l| l.list == list)
    }
}

/// A resources or prompts list the client keeps beside the tools.
#[derive(Debug)]
struct Kept {
    list: ListName,
    items: BTreeMap<String, Value>,
    changes_seen: u32,
    due: Option<ListReason>,
}

/// The tool list the client holds, and what it needs to know to list again.
#[derive(Debug)]
pub struct Surface {
    page_limit: u32,
    /// The latest listing's tools, by name.
    tools: BTreeMap<String, Value>,
    /// Every name any listing showed.
    ever: BTreeSet<String>,
    /// The count of [`LIST_CHANGED`] notifications at the last listing.
    changes_seen: u32,
    /// Why to list before the next call, if it must.
    due: Option<ListReason>,
    /// The resources and prompts lists kept beside the tools (none unless asked).
    kept: Vec<Kept>,
}

impl Surface {
    pub fn new(page_limit: u32) -> Self {
        Self {
            page_limit: page_limit.clamp(1, MAX_PAGE_LIMIT),
            tools: BTreeMap::new(),
            ever: BTreeSet::new(),
            changes_seen: 0,
            due: Some(ListReason::Initial),
            kept: Vec::new(),
        }
    }

    /// Also keeps `list` (resources or prompts): listed before the first call and again after its `list_changed`.
    pub fn keeping(mut self, list: ListName) -> Self {
        if !list.is_tools() && !self.kept.iter().any(|k| k.list == list) {
            self.kept.push(Kept { list, items: BTreeMap::new(), changes_seen: 0, due: Some(ListReason::Initial) });
        }
        self
    }

    /// Lists again if it must (first use, a change announced or noticed), each page within `deadline`.
    pub async fn before_call(&mut self, connection: &Connection, deadline: Duration) -> Vec<Listing> {
        let notifications = connection.anomalies().notifications;
        let count = |list: ListName| notifications.get(list.notification()).copied().unwrap_or(0);
        let mut listings = Vec::new();
        let changes = count(ListName::Tools);
        let reason = self.due.take().or((changes > self.changes_seen).then_some(ListReason::ListChanged));
        if let Some(reason) = reason {
            // Counted before listing: a notification that arrives during the listing may be about a later change.
            self.changes_seen = changes;
            let (listing, tools) = Self::list(connection, ListName::Tools, reason, self.page_limit, deadline).await;
            self.ever.extend(tools.keys().cloned());
            // What an incomplete listing fetched is kept: better some tools than none.
            if listing.pages > 0 {
                self.tools = tools;
            }
            listings.push(listing);
        }
        for kept in &mut self.kept {
            let changes = count(kept.list);
            let reason = kept.due.take().or((changes > kept.changes_seen).then_some(ListReason::ListChanged));
            let Some(reason) = reason else { continue };
            kept.changes_seen = changes;
            let (listing, items) = Self::list(connection, kept.list, reason, self.page_limit, deadline).await;
            if listing.pages > 0 {
                kept.items = items;
            }
            listings.push(listing);
        }
        listings
    }

    /// One listing of `list`, page by page, at most `page_limit` pages, each within `deadline`; what it kept, by
    /// name (a resource by URI).
    async fn list(
        connection: &Connection,
        list: ListName,
        reason: ListReason,
        page_limit: u32,
        deadline: Duration,
    ) -> (Listing, BTreeMap<String, Value>) {
        let mut listing =
            Listing { list, reason, pages: 0, tools: 0, end: ListEnd::Complete, duplicate_names: vec![], detail: None };
        let (mut tools, mut followed) = (BTreeMap::new(), HashSet::new());
        let mut cursor: Option<String> = None;
        loop {
            if listing.pages >= page_limit {
                listing.end = ListEnd::PageLimit;
                listing.detail = Some(format!("stopped at the page limit ({page_limit} pages)"));
                break;
            }
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = match connection.request_result(list.method(), params, deadline).await {
                Ok(page) => page,
                Err(why) => {
                    listing.end = ListEnd::Error;
                    listing.detail = Some(format!("page {}: {why}", listing.pages + 1));
                    break;
                }
            };
            listing.pages += 1;
            for item in page.get(list.key()).and_then(Value::as_array).into_iter().flatten() {
                let Some(name) = item.get(list.id()).and_then(Value::as_str) else { continue };
                if tools.insert(name.to_owned(), item.clone()).is_some()
                    && !listing.duplicate_names.iter().any(|n| n == name)
                {
                    listing.duplicate_names.push(name.to_owned());
                }
            }
            let next = match page.get("nextCursor").and_then(Value::as_str) {
                None => break,
                // 2025-11-25 servers end a list with "" (and some SDKs send it); since 2026-07-28 it is a cursor.
                Some("") if connection.era() == Era::Legacy => break,
                Some(next) => next.to_owned(),
            };
            if !followed.insert(next.clone()) {
                listing.end = ListEnd::RepeatedCursor;
                listing.detail = Some(format!("the next cursor {next:?} was already followed"));
                break;
            }
            cursor = Some(next);
        }
        listing.tools = tools.len() as u32;
        (listing, tools)
    }

    /// Whether the last listing that fetched a page holds `tool`.
    pub fn lists(&self, tool: &str) -> bool {
        self.tools.contains_key(tool)
    }

    /// Holds `arguments` to the tool's listed `inputSchema`.
    pub fn arguments_valid(&self, tool: &str, arguments: &Value) -> Option<bool> {
        let schema = self.tools.get(tool)?.get("inputSchema")?;
        Some(validator(schema).is_ok_and(|v| v.is_valid(arguments)))
    }

    /// What the call came to against the list: listed or vanished, its result against the `outputSchema`; and
    /// whether the next call must list again (a -32602 for a tool the list still shows).
    pub fn after_call(
        &mut self,
        tool: &str,
        arguments: &Value,
        observation: &Observation,
        listings: Vec<Listing>,
    ) -> SurfaceObservation {
        let listed = self.tools.contains_key(tool);
        let mut seen = SurfaceObservation {
            listings,
            listed,
            vanished: !listed && self.ever.contains(tool),
            arguments_valid: self.arguments_valid(tool, arguments),
            validation: None,
            validation_detail: None,
            content_disagrees: false,
            held: self.kept.iter().map(|k| (k.list, k.items.keys().cloned().collect())).collect(),
        };
        let code = observation.error.as_ref().and_then(|e| e.get("code")).and_then(Value::as_i64);
        if observation.outcome == Outcome::Error && code == Some(-32602) && listed {
            self.due = Some(ListReason::InvalidParams);
        }
        if let Some(result) = &observation.result {
            let (validation, detail) = self.validate(tool, result);
            seen.validation = Some(validation);
            seen.validation_detail = detail;
            seen.content_disagrees = disagrees(result);
        }
        seen
    }

    fn validate(&self, tool: &str, result: &Value) -> (Validation, Option<String>) {
        if result.get("isError") == Some(&Value::Bool(true)) {
            return (Validation::SkippedIsError, None);
        }
        let Some(schema) = self.tools.get(tool).and_then(|t| t.get("outputSchema")) else {
            return (Validation::NoSchema, None);
        };
        let Some(structured) = result.get("structuredContent") else {
            return (
                Validation::Missing,
                Some("the tool declares an outputSchema; the result has no structuredContent".into()),
            );
        };
        match validator(schema) {
            Err(why) => (Validation::Invalid, Some(format!("the outputSchema cannot be used: {why}"))),
            Ok(validator) => match validator.validate(structured) {
                Ok(()) => (Validation::Valid, None),
                Err(error) => {
                    let at = error.instance_path().to_string();
                    (
                        Validation::Invalid,
                        Some(if at.is_empty() { error.to_string() } else { format!("at {at}: {error}") }),
                    )
                }
            },
        }
    }
}

/// A text block that parses as JSON and is not `structuredContent`.
fn disagrees(result: &Value) -> bool {
    let Some(structured) = result.get("structuredContent") else { return false };
    let blocks = result.get("content").and_then(Value::as_array).into_iter().flatten();
    blocks
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .any(|parsed| parsed.is_object() && &parsed != structured)
}

/// A validator that never fetches an external `$ref` (a server's schema names no URL the client reads).
fn validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options().with_retriever(NoRetrieval).build(schema).map_err(|e| e.to_string())
}

struct NoRetrieval;

impl jsonschema::Retrieve for NoRetrieval {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {uri} is not fetched").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn surface_with(tool: Value) -> Surface {
        let mut surface = Surface::new(5);
        let name = tool["name"].as_str().unwrap().to_owned();
        surface.ever.insert(name.clone());
        surface.tools.insert(name, tool);
        surface.due = None;
        surface
    }

    fn result(value: Value) -> Observation {
        let mut observation = Observation::new(Outcome::Success, json!(1), 1.0);
        observation.result = Some(value);
        observation
    }

    #[test]
    fn results_are_held_to_the_output_schema_unless_they_are_errors() {
        let schema = json!({"type": "object", "required": ["count"], "properties": {"count": {"type": "integer"}}});
        let mut surface = surface_with(json!({"name": "t", "inputSchema": {"type": "object"}, "outputSchema": schema}));
        let mut validation = |value: Value| {
            let seen = surface.after_call("t", &json!({}), &result(value), vec![]);
            (seen.validation.unwrap(), seen.content_disagrees)
        };
        let text = |t: &str| json!([{"type": "text", "text": t}]);
        assert_eq!(
            validation(json!({"content": text("{\"count\":1}"), "structuredContent": {"count": 1}})),
            (Validation::Valid, false)
        );
        assert_eq!(
            validation(json!({"content": [], "structuredContent": {"count": "1"}})),
            (Validation::Invalid, false)
        );
        assert_eq!(validation(json!({"content": []})), (Validation::Missing, false));
        let error = json!({"content": [], "isError": true, "structuredContent": {"error": "x"}});
        assert_eq!(validation(error), (Validation::SkippedIsError, false));
        assert_eq!(
            validation(json!({"content": text("{\"count\":2}"), "structuredContent": {"count": 1}})),
            (Validation::Valid, true)
        );
    }

    #[test]
    fn a_vanished_tool_and_arguments_of_an_old_schema_are_told_apart() {
        let schema = json!({"type": "object", "required": ["confirm"], "properties": {"confirm": {"type": "string"}}});
        let mut surface = surface_with(json!({"name": "probe", "inputSchema": schema}));
        assert_eq!(surface.arguments_valid("probe", &json!({})), Some(false));
        assert_eq!(surface.arguments_valid("probe", &json!({"confirm": "y"})), Some(true));
        surface.tools.clear();
        let mut error = Observation::new(Outcome::Error, json!(2), 1.0);
        error.error = Some(json!({"code": -32602, "message": "Unknown tool: probe"}));
        let seen = surface.after_call("probe", &json!({}), &error, vec![]);
        assert!(seen.vanished && !seen.listed && seen.arguments_valid.is_none());
        assert_eq!(surface.due, None, "a tool the list no longer shows needs no new listing");
        let mut listed = surface_with(json!({"name": "probe", "inputSchema": {"type": "object"}}));
        listed.after_call("probe", &json!({}), &error, vec![]);
        assert_eq!(listed.due, Some(ListReason::InvalidParams), "-32602 for a listed tool: list again");
    }
}
