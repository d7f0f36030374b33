//! `list_drift`: the tool list changes between two listings: a tool is removed, renamed, or its `inputSchema`
//! changes.
//!
//! **What it does on the wire.** It acts on `tools/list` replies (match the rule on the method; `after: 1` leaves
//! the first listing as the server sent it, so the drift is between two listings). In the list the upstream
//! returned, the tool named `tool` (default: the last one listed) is changed as `change` says: `removed` (gone
//! from the list), `renamed` (its name gets the suffix `_v2`), or `input-schema` (its `inputSchema` gains a
//! required string property `confirm`, so arguments of the old schema no longer validate). Everything else in
//! the reply is kept. A reply that is not a tools list, or a list without that tool, passes unchanged with a
//! `fault_skipped` reason.
//!
//! Drift is a scenario of three rules, each a real fault: `list_drift` on the listings, `list_changed_storm`
//! (`count: 1`) on a call to announce it (leave it out for drift without `notifications/tools/list_changed`;
//! give it alone for the notification with an unchanged list), and `unknown_tool` on calls to the tool that is
//! gone, which answers what a server says for a tool it does not have (-32602).
//!
//! **What a robust client should do.** Re-list after `notifications/tools/list_changed` (and on an unknown-tool
//! error), stop offering a tool that is gone, call a renamed tool by its new name, and build arguments from the
//! new `inputSchema`; when the list did not change, a re-list is all it costs.
//!
//! **Example.** `{"type": "list_drift", "change": "removed"}`
//!
//! **How it is graded.** On the calls after the drift: a call to the vanished tool, or arguments of the old
//! schema, after the client was told (notification or error) fail; a re-list followed by calls that fit the new
//! list passes.

use super::{Applied, Reply, rewrite_result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fault! {
    /// A `tools/list` reply with one tool removed, renamed (`_v2`), or given a new required argument.
    pub struct ListDrift {
        pub change: Drift,
        /// The tool changed (default: the last one listed).
        #[serde(default)]
        pub tool: Option<String>,
    }
    facts: Protocol, WrongData, Some(ServeTool::standing("tool_list_drift")), [
        r#"{"type": "list_drift", "change": "removed"}"#,
        r#"{"type": "list_drift", "change": "renamed"}"#,
        r#"{"type": "list_drift", "change": "input-schema", "tool": "probe"}"#,
    ];
    apply: |fault, reply, _| apply(reply, fault.change, fault.tool.as_deref());
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Drift {
    /// The tool is gone from the list.
    Removed,
    /// The tool's name gets the suffix `_v2`.
    Renamed,
    /// The tool's `inputSchema` gains a required string property `confirm`.
    InputSchema,
}

/// The property `input-schema` drift makes required.
pub const DRIFT_PROPERTY: &str = "confirm";

fn apply(reply: Reply<'_>, change: Drift, tool: Option<&str>) -> Applied {
    let tools = reply.frame.value().and_then(|m| m.pointer("/result/tools")).and_then(Value::as_array);
    let Some(tools) = tools else {
        return Applied::skipped(reply, "the reply is not a tools/list result".into());
    };
    let index = match tool {
        Some(name) => tools.iter().position(|t| t["name"] == name),
        None => tools.len().checked_sub(1),
    };
    let Some(index) = index else {
        let reason = format!("the list has no tool {}", tool.map_or("at all".into(), |name| format!("{name:?}")));
        return Applied::skipped(reply, reason);
    };
    Applied::from(rewrite_result(reply, |result| {
        let Some(Value::Array(tools)) = result.get_mut("tools") else { return false };
        match change {
            Drift::Removed => {
                tools.remove(index);
            }
            Drift::Renamed => {
                let name = tools[index]["name"].as_str().unwrap_or_default().to_owned();
                tools[index]["name"] = Value::String(format!("{name}_v2"));
            }
            Drift::InputSchema => {
                let schema = &mut tools[index]["inputSchema"];
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
        let applied = apply(Reply { frame: &frame(TOOLS), request: None }, change, tool);
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
        let applied = apply(Reply { frame: &frame(TOOLS), request: None }, Drift::Removed, Some("zz"));
        assert_eq!(applied.actions, unchanged(Reply { frame: &frame(TOOLS), request: None }));
        assert!(applied.skipped.unwrap().contains("\"zz\""));
        let applied = apply(Reply { frame: &frame(RESULT), request: None }, Drift::Removed, None);
        assert!(applied.skipped.unwrap().contains("not a tools/list"));
    }
}
