//! The lists an MCP server offers that can change under a client: tools, resources, prompts. The fault engine
//! drifts and announces them (`list_drift`, `list_changed_storm`); the reference client keeps them.

use serde::{Deserialize, Serialize};

/// One of a server's changing lists, written `tools`, `resources` or `prompts`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListName {
    #[default]
    Tools,
    Resources,
    Prompts,
}

impl ListName {
    pub const ALL: [ListName; 3] = [ListName::Tools, ListName::Resources, ListName::Prompts];

    pub fn is_tools(&self) -> bool {
        *self == ListName::Tools
    }

    /// The result member that holds the list, and its name as written.
    pub fn key(self) -> &'static str {
        match self {
            ListName::Tools => "tools",
            ListName::Resources => "resources",
            ListName::Prompts => "prompts",
        }
    }

    /// The method that lists it.
    pub fn method(self) -> &'static str {
        match self {
            ListName::Tools => "tools/list",
            ListName::Resources => "resources/list",
            ListName::Prompts => "prompts/list",
        }
    }

    /// The notification that announces a change of it.
    pub fn notification(self) -> &'static str {
        match self {
            ListName::Tools => "notifications/tools/list_changed",
            ListName::Resources => "notifications/resources/list_changed",
            ListName::Prompts => "notifications/prompts/list_changed",
        }
    }

    /// The member that names an item: a resource's URI, a tool's or prompt's name.
    pub fn id(self) -> &'static str {
        match self {
            ListName::Resources => "uri",
            _ => "name",
        }
    }

    /// The JSON Schema of a `ListName` (for a field of a type that derives one: `#[schemars(schema_with = ...)]`
    /// with a function returning this), built by the crates that generate schemas.
    pub fn schema_json() -> serde_json::Value {
        serde_json::json!({"type": "string", "enum": ["tools", "resources", "prompts"]})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_and_write_as_the_list_keys() {
        for list in ListName::ALL {
            assert_eq!(serde_json::to_value(list).unwrap(), list.key());
            assert_eq!(serde_json::from_value::<ListName>(list.key().into()).unwrap(), list);
            assert!(list.notification().contains(list.key()) && list.method().starts_with(list.key()));
        }
        assert_eq!(ListName::schema_json()["enum"], serde_json::json!(ListName::ALL.map(ListName::key)));
    }
}
