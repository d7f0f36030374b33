//! The contract between `faultlab eval` and an agent process.
//!
//! The agent is started with these environment variables and its working directory set to a scratch folder (not
//! the workspace: the workspace is reached only through the MCP server):
//! - [`ENV_MCP_CONFIG`]: path of an `mcpServers` JSON file naming the proxy as the agent's one server;
//! - [`ENV_GOAL`]: the task's goal, in words;
//! - [`ENV_TASK`]: path of what the agent is told of its task ([`AgentTask`]: the goal, the tools, the deadline;
//!   never the faults, the grader or the witness; the `plan` the control agents follow, when there is one);
//! - [`ENV_RESULT`]: path where the agent writes its final [`Claim`] as JSON before it exits.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const ENV_MCP_CONFIG: &str = "FAULTLAB_MCP_CONFIG";
pub const ENV_GOAL: &str = "FAULTLAB_GOAL";
pub const ENV_TASK: &str = "FAULTLAB_TASK";
pub const ENV_RESULT: &str = "FAULTLAB_RESULT";
/// For a task with a `model`: the base URL of the run's model endpoint, ending in `/v1` (as OpenAI clients take it).
pub const ENV_MODEL_URL: &str = "FAULTLAB_MODEL_URL";

/// What an agent is told of its task (the file `FAULTLAB_TASK` names): what a user would tell it. Never the task's
/// `faults` (which call fails, when), `grader`, `witness`, `recovery` or description: an agent that could read them
/// could adapt to the test rather than to the failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTask {
    /// What to do, in words (also `FAULTLAB_GOAL`).
    pub goal: String,
    /// Tools the agent may use (globs).
    pub allowed_tools: Vec<String>,
    /// Tools the agent must never call (globs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbidden_actions: Vec<String>,
    /// The run's deadline in milliseconds, counted from the agent's first connection to its server.
    pub deadline_ms: u64,
    /// How long the agent may take to start before the deadline counts, in milliseconds.
    pub start_ms: u64,
    /// The steps the built-in control agents follow, when the task has them: the task author's script for a
    /// scripted agent (which calls to make), never which of them will fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::task::Plan>,
}

impl AgentTask {
    /// The agent's view of `task`, with the deadline it really has.
    pub fn of(task: &crate::task::Task, deadline_ms: u64) -> Self {
        AgentTask {
            goal: task.goal.clone(),
            allowed_tools: task.allowed_tools.clone(),
            forbidden_actions: task.forbidden_actions.clone(),
            deadline_ms,
            start_ms: task.start_ms,
            plan: task.plan.clone(),
        }
    }
}

/// The name of the server entry in the `mcpServers` file.
pub const SERVER_NAME: &str = "workspace";

/// The agent's final word: what it says it achieved. Graded against the workspace and the witness, never by
/// keywords in `message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub status: ClaimStatus,
    /// Free text for humans; not graded.
    #[serde(default)]
    pub message: String,
    /// The answer the task asked for, if it asked for one (a `content_match` witness on `claim` looks here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// The task is done.
    Success,
    /// Done in part; the message says what is missing.
    Partial,
    /// Not done; the agent stopped on purpose.
    Failure,
}

/// The `mcpServers` file, in the shape Claude Desktop, Cline and most agent frameworks read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpConfig {
    pub mcp_servers: BTreeMap<String, ServerEntry>,
}

/// One server of the `mcpServers` file: a command to start (stdio), or, with `"type": "http"`, a URL (the shape of
/// a Streamable HTTP server in Claude Code's `.mcp.json`; Cursor's `mcp.json` needs only `url`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerEntry {
    /// `http` for a Streamable HTTP server; absent for a stdio one.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The Streamable HTTP endpoint (with `"type": "http"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The stdio server's program (empty for an HTTP server).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl McpConfig {
    /// A file naming one stdio server, [`SERVER_NAME`].
    pub fn single(command: String, args: Vec<String>) -> Self {
        let entry = ServerEntry { kind: None, url: None, command, args, env: BTreeMap::new() };
        McpConfig { mcp_servers: BTreeMap::from([(SERVER_NAME.to_owned(), entry)]) }
    }

    /// A file naming one Streamable HTTP server, [`SERVER_NAME`], at `url`.
    pub fn http(url: String) -> Self {
        let entry = ServerEntry {
            kind: Some("http".into()),
            url: Some(url),
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
        };
        McpConfig { mcp_servers: BTreeMap::from([(SERVER_NAME.to_owned(), entry)]) }
    }

    /// The single server entry (the proxy).
    pub fn server(&self) -> Option<&ServerEntry> {
        self.mcp_servers.get(SERVER_NAME).or_else(|| self.mcp_servers.values().next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_server_is_written_in_the_shape_agents_read() {
        let text = serde_json::to_value(McpConfig::http("http://127.0.0.1:4000/mcp".into())).unwrap();
        assert_eq!(
            text,
            serde_json::json!({"mcpServers": {"workspace": {"type": "http", "url": "http://127.0.0.1:4000/mcp"}}})
        );
        let stdio = serde_json::to_value(McpConfig::single("faultlab".into(), vec!["connect".into(), "s".into()]));
        assert_eq!(
            stdio.unwrap(),
            serde_json::json!({"mcpServers": {"workspace": {"command": "faultlab", "args": ["connect", "s"]}}})
        );
    }
}
