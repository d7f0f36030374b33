//! `list_drift`: a list changes between two listings: a tool, resource or prompt is removed, renamed, or its
//! `inputSchema` (a tool) or `arguments` (a prompt) change.
//!
//! **What it does on the wire.** It acts on the replies of the list `list` names: `tools/list` (the default),
//! `resources/list` or `prompts/list` (match the rule on that method; `after: 1` leaves the first listing as the
//! server sent it, so the drift is between two listings). In the list the upstream returned, the item named `tool`
//! (a tool or prompt by name, a resource by URI or name; default: the last one listed) is changed as `change`
//! says: `removed` (gone from the list), `renamed` (its name, and a resource's URI, get the suffix `_v2`),
//! `input-schema` (tools: its `inputSchema` gains a required string property `confirm`, so arguments of the old
//! schema no longer validate) or `arguments` (prompts: a required argument `confirm` is added). Everything else in
//! the reply is kept. A reply that is not that list, or a list without that item, passes unchanged with a
//! `fault_skipped` reason.
//!
//! Drift is a scenario of three rules, each a real fault: `list_drift` on the listings, `list_changed_storm`
//! (`count: 1`, the same `list`) on a call to announce it (leave it out for drift without
//! `notifications/tools/list_changed`, `resources/list_changed` or `prompts/list_changed`; give it alone for the
//! notification with an unchanged list), and, for tools, `unknown_tool` on calls to the tool that is gone, which
//! answers what a server says for a tool it does not have (-32602).
//!
//! **What a robust client should do.** Re-list after the list's `list_changed` notification (and on an unknown-tool
//! error), stop offering an item that is gone, use a renamed one by its new name, and build arguments from the new
//! `inputSchema` or prompt `arguments`; when the list did not change, a re-list is all it costs.
//!
//! **Example.** `{"type": "list_drift", "change": "removed"}`
//!
//! **How it is graded.** On the calls after the drift: a call to the vanished tool (a read of the vanished resource,
//! a get of the vanished prompt), or arguments of the old schema, after the client was told (notification or error)
//! fail; a re-list followed by calls that fit the new list passes.

use super::{Applied, Reply, rewrite_result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fault! {
    /// A `tools/list`, `resources/list` or `prompts/list` reply with one item removed, renamed (`_v2`), or given a
    /// new required argument.
    pub struct ListDrift {
        pub change: Drift,
        /// The item changed: a tool or prompt by name, a resource by URI or name (default: the last one listed).
        #[serde(default)]
        pub tool: Option<String>,
        /// The list that drifts: `tools` (default), `resources` or `prompts`.
        #[serde(default, skip_serializing_if = "ListName::is_tools")]
        #[schemars(schema_with = "list_schema")]
        pub list: ListName,
    }
    category: Protocol,
    effect: WrongData,
    serve_tool: Some(ServeTool::standing("tool_list_drift")),
    examples: [
        r#"{"type": "list_drift", "change": "removed"}"#,
        r#"{"type": "list_drift", "change": "renamed"}"#,
        r#"{"type": "list_drift", "change": "input-schema", "tool": "probe"}"#,
        r#"{"type": "list_drift", "change": "removed", "list": "resources"}"#,
        r#"{"type": "list_drift", "change": "arguments", "list": "prompts"}"#,
    ],
    validate: |fault| match (fault.change, fault.list) {
        (Drift::InputSchema, ListName::Tools) | (Drift::Arguments, ListName::Prompts) => Ok(()),
        (Drift::InputSchema, _) => Err("change input-schema needs list tools (a prompt's are `arguments`)".into()),
        (Drift::Arguments, _) => Err("change arguments needs list prompts (a tool's are `input-schema`)".into()),
        _ => Ok(()),
    },
    apply: |fault, reply, _| apply(reply, fault.list, fault.change, fault.tool.as_deref()),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Drift {
    /// The item is gone from the list.
    Removed,
    /// The item's name (and a resource's URI) gets the suffix `_v2`.
    Renamed,
    /// A tool's `inputSchema` gains a required string property `confirm`.
    InputSchema,
    /// A prompt's `arguments` gain a required argument `confirm`.
    Arguments,
}

pub use faultlab_wire::ListName;

/// `list` as the enum it is (the type lives in the wire crate, which builds no schemas).
pub(super) fn list_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::try_from(ListName::schema_json()).unwrap_or_default()
}

/// The property `input-schema` drift makes required, and the argument `arguments` drift adds to a prompt.
pub const DRIFT_PROPERTY: &str = "confirm";

/// Whether `item` is the one named `name` (a resource also by its URI).
fn is_named(item: &Value, list: ListName, name: &str) -> bool {
    item["name"] == name || (list == ListName::Resources && item["uri"] == name)
}

fn apply(reply: Reply<'_>, list: ListName, change: Drift, name: Option<&str>) -> Applied {
    let key = list.key();
    let items = reply.frame.value().and_then(|m| m.get("result")).and_then(|r| r.get(key)).and_then(Value::as_array);
    let Some(items) = items else {
        return Applied::skipped(reply, format!("the reply is not a {} result", list.method()));
    };
    let index = match name {
        Some(name) => items.iter().position(|item| is_named(item, list, name)),
        None => items.len().checked_sub(1),
    };
    let Some(index) = index else {
        let what = name.map_or("at all".into(), |name| format!("{name:?}"));
        return Applied::skipped(reply, format!("the {key} list has no item {what}"));
    };
    Applied::from(rewrite_result(reply, |result| {
        let Some(Value::Array(items)) = result.get_mut(key) else { return false };
        let item = &mut items[index];
        match change {
            Drift::Removed => {
                items.remove(index);
            }
            Drift::Renamed => {
                for member in ["name", "uri"] {
                    if let Some(old) = item.get(member).and_then(Value::as_str) {
                        item[member] = Value::String(format!("{old}_v2"));
                    }
                }
            }
            Drift::InputSchema => {
                let schema = &mut item["inputSchema"];
                if !schema.is_object() {
                    *schema = json!({"type": "object"});
                }
                schema["properties"][DRIFT_PROPERTY] =
                    json!({"type": "string", "description": "Required since the tool list changed."});
                match schema.get_mut("required").and_then(Value::as_array_mut) {
                    Some(required) => required.push(Value::from(DRIFT_PROPERTY)),
                    None => schema["required"] = json!([DRIFT_PROPERTY]),
                }
            }
            Drift::Arguments => {
                let argument = json!({"name": DRIFT_PROPERTY, "description": "Required since the prompt list changed.",
                                      "required": true});
                match item.get_mut("arguments").and_then(Value::as_array_mut) {
                    Some(arguments) => arguments.push(argument),
                    None => item["arguments"] = json!([argument]),
                }
            }
        }
        true
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    const TOOLS: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}]}}"#;

    fn tools(change: Drift, tool: Option<&str>) -> Value {
        let applied = apply(Reply { frame: &frame(TOOLS), request: None }, ListName::Tools, change, tool);
        assert_eq!(applied.skipped, None);
        sent(&applied.actions)[0].value().unwrap()["result"]["tools"].clone()
    }

    #[test]
    fn a_tool_is_removed_renamed_or_given_a_new_required_argument() {
        assert_eq!(tools(Drift::Removed, None), json!([{"name": "a", "inputSchema": {"type": "object"}}]));
        assert_eq!(tools(Drift::Renamed, Some("a"))[0]["name"], "a_v2");
        let changed = tools(Drift::InputSchema, None)[1]["inputSchema"].clone();
        assert_eq!(changed["required"], json!(["x", "confirm"]));
        assert_eq!(changed["properties"]["confirm"]["type"], "string");
        assert_eq!(tools(Drift::InputSchema, Some("a"))[0]["inputSchema"]["required"], json!(["confirm"]));
    }

    #[test]
    fn without_the_tool_or_a_list_nothing_changes() {
        let applied = apply(Reply { frame: &frame(TOOLS), request: None }, ListName::Tools, Drift::Removed, Some("zz"));
        assert_eq!(applied.actions, unchanged(Reply { frame: &frame(TOOLS), request: None }));
        assert!(applied.skipped.unwrap().contains("\"zz\""));
        let applied = apply(Reply { frame: &frame(RESULT), request: None }, ListName::Tools, Drift::Removed, None);
        assert!(applied.skipped.unwrap().contains("not a tools/list"));
    }

    fn drifted(reply: &str, list: ListName, change: Drift, name: Option<&str>) -> Value {
        let applied = apply(Reply { frame: &frame(reply), request: None }, list, change, name);
        assert_eq!(applied.skipped, None);
        sent(&applied.actions)[0].value().unwrap()["result"][list.key()].clone()
    }

    #[test]
    fn resources_and_prompts_drift_under_their_own_key() {
        let resources = r#"{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"x:/a","name":"a"},{"uri":"x:/b","name":"b"}]}}"#;
        assert_eq!(drifted(resources, ListName::Resources, Drift::Removed, Some("x:/a")), json!([{"uri": "x:/b", "name": "b"}]));
        let renamed = drifted(resources, ListName::Resources, Drift::Renamed, None);
        assert_eq!(renamed[1], json!({"uri": "x:/b_v2", "name": "b_v2"}), "a resource's URI changes with its name");
        let prompts = r#"{"jsonrpc":"2.0","id":3,"result":{"prompts":[{"name":"p","arguments":[{"name":"topic"}]},{"name":"q"}]}}"#;
        let changed = drifted(prompts, ListName::Prompts, Drift::Arguments, Some("p"));
        assert_eq!(changed[0]["arguments"][1]["name"], "confirm");
        assert_eq!(changed[0]["arguments"][1]["required"], true);
        assert_eq!(drifted(prompts, ListName::Prompts, Drift::Arguments, None)[1]["arguments"][0]["name"], "confirm");
        // A tools list is not the prompts list the fault was given.
        let applied = apply(Reply { frame: &frame(TOOLS), request: None }, ListName::Prompts, Drift::Removed, None);
        assert!(applied.skipped.unwrap().contains("not a prompts/list"));
    }

    #[test]
    fn a_change_that_does_not_fit_the_list_is_refused_and_tools_stays_the_written_default() {
        let read = |json: &str| serde_json::from_str::<crate::FaultKind>(json).unwrap();
        let wrong = read(r#"{"type": "list_drift", "change": "input-schema", "list": "prompts"}"#);
        assert!(wrong.validate().unwrap_err().contains("needs list tools"));
        let wrong = read(r#"{"type": "list_drift", "change": "arguments"}"#);
        assert!(wrong.validate().unwrap_err().contains("needs list prompts"));
        let tools = read(r#"{"type": "list_drift", "change": "removed"}"#);
        assert_eq!(serde_json::to_value(&tools).unwrap(), json!({"type": "list_drift", "change": "removed", "tool": null}));
    }
}
