//! `unknown_tool_call`: the model asks for a tool that does not exist (model hop only).
//!
//! **What it does on the wire.** `faultlab model` answers with a well-formed tool call (each API's own shape, JSON
//! and streamed) naming `name` (by default `faultlab_no_such_tool`), a tool the request did not declare; its
//! arguments are the scripted call's, or `{}` when the scripted turn is a text answer. The proxy refuses this
//! fault.
//!
//! **What a robust client should do.** Not crash and not call anything on the MCP server; tell the model the
//! tool does not exist (a tool result saying so) and let it choose again.
//!
//! **Example.** `{"type": "unknown_tool_call", "name": "delete_everything"}`
//!
//! **How it is graded.** The recording shows the next request carrying back a result for the unknown call (an
//! error naming the tool is recovery); the MCP side shows no call of that name.

use super::within;

/// Longest tool name, in bytes (the providers allow 64 characters).
pub const MAX_TOOL_NAME_BYTES: usize = 64;
/// The name when none is given.
pub const DEFAULT_TOOL_NAME: &str = "faultlab_no_such_tool";

model_fault! {
    /// A tool call naming a tool the request did not declare (`name`, by default `faultlab_no_such_tool`).
    pub struct UnknownToolCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub name: Option<String>,
    }
    category: Data,
    effect: WrongData,
    examples: [r#"{"type": "unknown_tool_call"}"#, r#"{"type": "unknown_tool_call", "name": "delete_everything"}"#],
    validate: |fault| fault.name.as_ref().map_or(Ok(()), |name| {
        within("name's length in bytes", name.len(), 1, MAX_TOOL_NAME_BYTES)
    }),
}

impl UnknownToolCall {
    /// The tool the call names.
    pub fn tool(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_TOOL_NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Fault as _;

    #[test]
    fn the_name_defaults_and_is_bounded() {
        assert_eq!(UnknownToolCall { name: None }.tool(), DEFAULT_TOOL_NAME);
        assert!(UnknownToolCall { name: Some(String::new()) }.validate().unwrap_err().starts_with("name"));
        assert!(UnknownToolCall { name: Some("x".repeat(65)) }.validate().is_err());
    }
}
