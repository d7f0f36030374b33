//! The side-effect ledger: one JSON object per line, written by the built-in workspace server
//! (`faultlab workspace-server --ledger`) and read back by eval as evidence. One type for both sides, so the
//! writer cannot drift from the reader (which denies unknown fields).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One side effect the built-in workspace server performed (or refused): one line of the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SideEffect {
    /// 1-based, in the order the server performed them.
    pub seq: u64,
    /// The tool that asked for it.
    pub tool: String,
    pub op: Op,
    /// Workspace-relative path (as the agent gave it, when it was refused).
    pub path: String,
    /// The destination of a move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// False when the server refused (path escape, missing file); nothing changed then.
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// SHA-256 (hex) of the file after a successful write or append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// The kinds of side effect, as the ledger names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Write,
    Append,
    Delete,
    Move,
    MakeDir,
}

impl Op {
    /// The workspace server's tool for the op (each op has exactly one).
    pub fn tool(self) -> &'static str {
        match self {
            Op::Write => "write_file",
            Op::Append => "append_file",
            Op::Delete => "delete_file",
            Op::Move => "move_file",
            Op::MakeDir => "make_dir",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the server writes is what eval reads, and a field eval does not know is refused, not skipped.
    #[test]
    fn a_line_reads_back_as_written_and_an_unknown_field_is_refused() {
        let effect = SideEffect {
            seq: 1,
            tool: Op::Move.tool().into(),
            op: Op::Move,
            path: "a.txt".into(),
            to: Some("b.txt".into()),
            ok: true,
            error: None,
            sha256: None,
        };
        let line = serde_json::to_string(&effect).unwrap();
        assert_eq!(line, r#"{"seq":1,"tool":"move_file","op":"move","path":"a.txt","to":"b.txt","ok":true}"#);
        assert_eq!(serde_json::from_str::<SideEffect>(&line).unwrap(), effect);
        let extra = line.replace("\"ok\":true", "\"ok\":true,\"undone\":false");
        assert!(serde_json::from_str::<SideEffect>(&extra).is_err());
    }
}
