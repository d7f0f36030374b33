//! The script: which tool calls the model asks for, in order, and what it does when a tool result comes back
//! failed. The turn to give is a pure function of the script and the tool results the request carries back, so a
//! framework that retries a model request gets the same turn again, and one endpoint serves any number of
//! conversations at once.

use faultlab_wire::config;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;

/// A model script (YAML or JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The model name the answers carry; by default the `model` the request names.
    #[serde(default)]
    pub model: Option<String>,
    /// The tool calls to ask for, one per turn, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// The final answer, once every step has had its result.
    pub answer: String,
    /// The answer when a step's failure makes the script give up (`on_error: give_up`, or a retry that failed
    /// too). Default: a sentence naming the tool.
    #[serde(default)]
    pub give_up: Option<String>,
    /// A tool result counts as failed when the API flags it (Anthropic `is_error`), when its text is empty, or
    /// when its text contains one of these (case-insensitive). Default: `error`, `failed`, `timed out`, `timeout`.
    #[serde(default = "default_markers")]
    pub failure_markers: Vec<String>,
}

/// One tool call the model asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The tool's name as the framework declares it (a declared name ending in `_<call>`, `.<call>`, `-<call>`
    /// or `/<call>` is used when no tool has this exact name: frameworks prefix MCP tools with their server).
    pub call: String,
    /// The call's arguments.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// What to do when this call's result comes back failed.
    #[serde(default)]
    pub on_error: OnError,
    /// The text to answer with for `on_error: answer`.
    #[serde(default)]
    pub error_answer: Option<String>,
}

/// What the model does with a failed tool result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Go on to the next step as if the call had succeeded.
    #[default]
    Continue,
    /// Ask for the same call once more; if that fails too, give up.
    RetryOnce,
    /// Stop and answer with `give_up`.
    GiveUp,
    /// Stop and answer with the step's `error_answer`.
    Answer,
}

fn default_markers() -> Vec<String> {
    ["error", "failed", "timed out", "timeout"].map(String::from).to_vec()
}

/// A tool result a request carries back to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    /// The id of the call it answers, as the framework sent it.
    pub call_id: Option<String>,
    /// Its text (parts joined).
    pub text: String,
    /// The API's own error flag (Anthropic `is_error`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// The model's turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Turn {
    /// Ask for a tool call.
    Call {
        /// The step (0-based) and the attempt (0, or 1 for the retry).
        step: usize,
        attempt: u32,
        tool: String,
        arguments: Map<String, Value>,
    },
    /// Answer with text and end the conversation.
    Answer { text: String, because: Because },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Because {
    /// Every step has had its result.
    Done,
    /// A failed result and `give_up` (or a retry that failed too).
    GaveUp,
    /// A failed result and `on_error: answer`.
    Answered,
}

/// A model script that cannot be read or is invalid.
pub type ScriptError = config::FileError;

impl Script {
    /// Reads a script: JSON for a `.json` file, YAML otherwise; depth-limited before parsing, unknown keys refused.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        config::load(path, "model script", Self::parse)
    }

    /// Parses a script's text (`json`: JSON, else YAML).
    pub fn parse(text: &str, json: bool) -> Result<Self, String> {
        let script: Self = config::parse(text, json)?;
        for (i, step) in script.steps.iter().enumerate() {
            if step.call.trim().is_empty() {
                return Err(format!("steps[{i}].call: a tool name is required"));
            }
            match (&step.on_error, &step.error_answer) {
                (OnError::Answer, None) => return Err(format!("steps[{i}].error_answer: on_error: answer needs it")),
                (OnError::Continue | OnError::RetryOnce | OnError::GiveUp, Some(_)) => {
                    return Err(format!("steps[{i}].error_answer: only read with on_error: answer"));
                }
                _ => {}
            }
        }
        Ok(script)
    }

    /// Whether a tool result counts as failed.
    pub fn failed(&self, result: &ToolResult) -> bool {
        let text = result.text.to_lowercase();
        result.is_error
            || text.trim().is_empty()
            || self.failure_markers.iter().any(|m| !m.is_empty() && text.contains(&m.to_lowercase()))
    }

    /// The turn after these tool results (every result the conversation carries, oldest first). Each result
    /// answers the call the script asked for at that point, so walking them replays the conversation.
    pub fn turn(&self, results: &[ToolResult]) -> Turn {
        let (mut step, mut attempt) = (0, 0);
        for result in results {
            let Some(current) = self.steps.get(step) else { break };
            if !self.failed(result) {
                (step, attempt) = (step + 1, 0);
                continue;
            }
            match &current.on_error {
                OnError::Continue => (step, attempt) = (step + 1, 0),
                OnError::RetryOnce if attempt == 0 => attempt = 1,
                OnError::RetryOnce | OnError::GiveUp => return self.give_up(&current.call),
                OnError::Answer => {
                    let text = current.error_answer.clone().unwrap_or_default();
                    return Turn::Answer { text, because: Because::Answered };
                }
            }
        }
        match self.steps.get(step) {
            Some(s) => Turn::Call { step, attempt, tool: s.call.clone(), arguments: s.arguments.clone() },
            None => Turn::Answer { text: self.answer.clone(), because: Because::Done },
        }
    }

    fn give_up(&self, tool: &str) -> Turn {
        let text = self.give_up.clone().unwrap_or_else(|| format!("I could not finish: the tool `{tool}` failed."));
        Turn::Answer { text, because: Because::GaveUp }
    }
}

/// The name to call `wanted` by among the tools a request declares: the exact name, else a declared name that
/// ends in `wanted` after a separator (`server_echo`, `server.echo`), else `wanted` itself (the framework then
/// reports an unknown tool, which the recording shows).
pub fn resolve<'a>(wanted: &'a str, declared: &'a [String]) -> &'a str {
    if declared.iter().any(|d| d == wanted) {
        return wanted;
    }
    declared
        .iter()
        .find(|d| d.strip_suffix(wanted).is_some_and(|head| head.ends_with(['_', '.', '-', '/']) && head.len() > 1))
        .map_or(wanted, String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(text: &str) -> ToolResult {
        ToolResult { call_id: None, text: text.into(), is_error: false }
    }

    const SCRIPT: &str = "\
steps:
  - call: read
    arguments: {path: a.txt}
    on_error: retry_once
  - call: write
    on_error: answer
    error_answer: could not write
  - call: list
answer: all done
";

    #[test]
    fn results_walk_the_script_retry_once_then_give_up() {
        let script = Script::parse(SCRIPT, false).unwrap();
        let call = |results: &[ToolResult]| match script.turn(results) {
            Turn::Call { step, attempt, .. } => (step, attempt),
            other => panic!("{other:?}"),
        };
        assert_eq!(call(&[]), (0, 0));
        assert_eq!(call(&[result("Error: boom")]), (0, 1), "a failed read is asked for once more");
        assert_eq!(call(&[result("Error: boom"), result("hello")]), (1, 0));
        assert!(matches!(
            script.turn(&[result("Error"), result("timed out")]),
            Turn::Answer { because: Because::GaveUp, .. }
        ));
        assert_eq!(
            script.turn(&[result("ok"), result("")]),
            Turn::Answer { text: "could not write".into(), because: Because::Answered },
            "an empty result is a failure"
        );
        assert_eq!(call(&[result("ok"), result("ok")]), (2, 0));
        let done = script.turn(&[result("ok"), result("ok"), result("Error")]);
        assert_eq!(done, Turn::Answer { text: "all done".into(), because: Because::Done }, "list continues");
        let flagged = ToolResult { is_error: true, ..result("fine") };
        assert_eq!(call(&[flagged]), (0, 1), "the API's error flag counts");
    }

    #[test]
    fn unknown_keys_and_deep_nesting_are_refused() {
        let err = Script::parse("answer: x\nstep: []\n", false).unwrap_err();
        assert!(err.contains("unknown field `step`"), "{err}");
        let deep =
            format!("answer: x\nsteps: [{{call: a, arguments: {{x: {}1{}}}}}]\n", "[".repeat(200), "]".repeat(200));
        assert!(Script::parse(&deep, false).unwrap_err().contains("nest"));
        assert!(Script::parse("answer: x\nsteps: [{call: ' '}]\n", false).unwrap_err().contains("steps[0].call"));
        let lacking = Script::parse("answer: x\nsteps: [{call: a, on_error: answer}]\n", false).unwrap_err();
        assert!(lacking.contains("steps[0].error_answer"), "{lacking}");
    }

    #[test]
    fn prefixed_tool_names_resolve() {
        let declared = vec!["fs_read".to_owned(), "other".to_owned()];
        assert_eq!(resolve("read", &declared), "fs_read");
        assert_eq!(resolve("other", &declared), "other");
        assert_eq!(resolve("missing", &declared), "missing");
    }
}
