//! The script: which tool calls the model asks for, in order, and what it does when a tool result comes back
//! failed. The turn to give is a pure function of the script and the tool results the request carries back, so a
//! framework that retries a model request gets the same turn again, and one endpoint serves any number of
//! conversations at once.

use faultlab_wire::{config, template};
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
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
    /// when its text contains one of these (case-insensitive). Default: the words of the errors frameworks pass
    /// back to the model: `error`, `failed`, `timed out`, `timeout`, `http 4`, `http 5` (a 4xx/5xx status line),
    /// `forbidden`, `unauthorized`, `too many requests`, `rate limit`, `unavailable`, `not found`, `terminated`,
    /// `closed`, `disconnected`.
    #[serde(default = "default_markers")]
    pub failure_markers: Vec<String>,
    /// Each step's `save` patterns, compiled when the script is read.
    #[serde(skip)]
    patterns: Patterns,
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
    /// Values to keep from this call's result, by name: a regex over the result's text whose first capture group
    /// is the value. Later steps' `arguments` strings and `error_answer`, and the `answer`, say `{{name}}` for it.
    /// A result a pattern does not match counts as failed (the step's `on_error` applies).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub save: BTreeMap<String, String>,
}

/// The compiled `save` patterns, one list per step (compared by their text).
#[derive(Debug, Clone, Default)]
struct Patterns(Vec<Vec<(String, Regex)>>);

impl PartialEq for Patterns {
    fn eq(&self, other: &Self) -> bool {
        let text = |p: &Self| p.0.iter().flatten().map(|(n, r)| (n.clone(), r.as_str().to_owned())).collect::<Vec<_>>();
        text(self) == text(other)
    }
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

/// What a framework passes back to the model after an MCP fault, often with no "error" in it: `HTTP 403:
/// Forbidden`, `HTTP 429: Too many requests`, `Session terminated`, `Connection closed`. `http 4` and `http 5`
/// catch any 4xx/5xx status line written as `HTTP <status>`.
pub const DEFAULT_FAILURE_MARKERS: [&str; 15] = [
    "error",
    "failed",
    "timed out",
    "timeout",
    "http 4",
    "http 5",
    "forbidden",
    "unauthorized",
    "too many requests",
    "rate limit",
    "unavailable",
    "not found",
    "terminated",
    "closed",
    "disconnected",
];

fn default_markers() -> Vec<String> {
    DEFAULT_FAILURE_MARKERS.map(String::from).to_vec()
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

/// Where a conversation stands after the tool results a request carries back.
#[derive(Debug, Clone, PartialEq)]
pub struct Walk {
    /// The model's next turn.
    pub turn: Turn,
    /// Whether each result counted as failed (a `save` pattern that did not match included).
    pub failed: Vec<bool>,
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
        let mut script: Self = config::parse(text, json)?;
        // The names saved so far: a step's strings may use those of the steps before it, the answer all of them.
        let mut saved = BTreeSet::new();
        let mut patterns = Vec::with_capacity(script.steps.len());
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
            let mut strings = Vec::new();
            strings_of(&Value::Object(step.arguments.clone()), &format!("steps[{i}].arguments"), &mut strings);
            strings.extend(step.error_answer.iter().map(|t| (format!("steps[{i}].error_answer"), t.clone())));
            for (at, text) in strings {
                unsaved(&at, &text, &saved)?;
            }
            patterns.push(compile(i, &step.save)?);
            saved.extend(step.save.keys().cloned());
        }
        unsaved("answer", &script.answer, &saved)?;
        if let Some(text) = &script.give_up {
            // The step that gives up may come before any save: nothing is filled in here.
            unsaved("give_up", text, &BTreeSet::new())?;
        }
        script.patterns = Patterns(patterns);
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
        self.walk(results).turn
    }

    /// The turn after these tool results, and which of them counted as failed. The values the steps `save` are
    /// taken again from the results on every walk: the endpoint keeps nothing between requests.
    pub fn walk(&self, results: &[ToolResult]) -> Walk {
        let (mut step, mut attempt) = (0, 0);
        let mut saved = template::Saved::new();
        let mut ended = None;
        let mut failed = Vec::with_capacity(results.len());
        for result in results {
            let current = self.steps.get(step).filter(|_| ended.is_none());
            let Some(current) = current else {
                failed.push(self.failed(result));
                continue;
            };
            if let Some(values) = self.captures(step, result) {
                saved.extend(values);
                (step, attempt) = (step + 1, 0);
                failed.push(false);
                continue;
            }
            failed.push(true);
            match &current.on_error {
                OnError::Continue => (step, attempt) = (step + 1, 0),
                OnError::RetryOnce if attempt == 0 => attempt = 1,
                OnError::RetryOnce | OnError::GiveUp => ended = Some(self.give_up(&current.call)),
                OnError::Answer => {
                    let text = template::text(current.error_answer.as_deref().unwrap_or_default(), &saved);
                    ended = Some(Turn::Answer { text, because: Because::Answered });
                }
            }
        }
        let turn = ended.unwrap_or_else(|| match self.steps.get(step) {
            Some(s) => {
                let arguments =
                    s.arguments.iter().map(|(k, v)| (template::text(k, &saved), template::value(v, &saved))).collect();
                Turn::Call { step, attempt, tool: s.call.clone(), arguments }
            }
            None => Turn::Answer { text: template::text(&self.answer, &saved), because: Because::Done },
        });
        Walk { turn, failed }
    }

    /// The values step `step` saves from a result, or `None` when the result failed: flagged, empty, a failure
    /// marker, or a `save` pattern that does not match.
    fn captures(&self, step: usize, result: &ToolResult) -> Option<Vec<(String, String)>> {
        if self.failed(result) {
            return None;
        }
        let patterns = self.patterns.0.get(step).map_or(&[][..], Vec::as_slice);
        patterns
            .iter()
            .map(|(name, re)| Some((name.clone(), re.captures(&result.text)?.get(1)?.as_str().to_owned())))
            .collect()
    }

    fn give_up(&self, tool: &str) -> Turn {
        let text = self.give_up.clone().unwrap_or_else(|| format!("I could not finish: the tool `{tool}` failed."));
        Turn::Answer { text, because: Because::GaveUp }
    }
}

/// A step's `save` patterns compiled; each name usable as `{{name}}`, each pattern with a group to capture.
fn compile(i: usize, save: &BTreeMap<String, String>) -> Result<Vec<(String, Regex)>, String> {
    save.iter()
        .map(|(name, pattern)| {
            let at = format!("steps[{i}].save.{name}");
            if name.is_empty() || !name.chars().all(template::is_name_char) {
                return Err(format!("{at}: a name is letters, digits and '_' (it is used as {{{{{name}}}}})"));
            }
            let re = Regex::new(pattern).map_err(|e| format!("{at}: not a valid regex: {e}"))?;
            if re.captures_len() < 2 {
                return Err(format!("{at}: the regex needs a group, ( ), around the value to save"));
            }
            Ok((name.clone(), re))
        })
        .collect()
}

/// Every string in `value`, with where it is (`steps[1].arguments.content`).
fn strings_of(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) => out.push((at.to_owned(), s.clone())),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| strings_of(v, &format!("{at}[{i}]"), out)),
        Value::Object(fields) => fields.iter().for_each(|(k, v)| strings_of(v, &format!("{at}.{k}"), out)),
        _ => {}
    }
}

/// Refuses a `{{name}}` in `text` that no step before it saves.
fn unsaved(at: &str, text: &str, saved: &BTreeSet<String>) -> Result<(), String> {
    match template::names(text).into_iter().find(|name| !saved.contains(*name)) {
        Some(name) => Err(format!(
            "{at}: {{{{{name}}}}} is not saved by an earlier step (a step's `save: {{{name}: REGEX}}` keeps a value \
             from its result)"
        )),
        None => Ok(()),
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

    const SAVING: &str = r#"
steps:
  - call: read_file
    on_error: retry_once
    save: {nonce: "nonce: ([0-9a-f]{16})"}
  - call: write_file
    arguments: {content: "{{nonce}}", also: ["at {{nonce}}"]}
answer: "{{nonce}}"
"#;

    #[test]
    fn a_saved_value_fills_later_arguments_and_the_answer_and_a_result_it_misses_is_a_failure() {
        let script = Script::parse(SAVING, false).unwrap();
        let text = "Release notes.\nnonce: 0123456789abcdef\n";
        let walk = script.walk(&[result(text)]);
        let Turn::Call { step: 1, tool, arguments, .. } = walk.turn else { panic!("{walk:?}") };
        assert_eq!(tool, "write_file");
        assert_eq!(arguments["content"], "0123456789abcdef");
        assert_eq!(arguments["also"][0], "at 0123456789abcdef", "strings nested in arguments are filled too");
        assert_eq!(walk.failed, [false]);
        let done = script.turn(&[result(text), result("wrote output.txt")]);
        assert_eq!(done, Turn::Answer { text: "0123456789abcdef".into(), because: Because::Done });

        // A result with no nonce (what a framework passes back for an empty read: "[]") is asked for once more.
        let empty = script.walk(&[result("[]")]);
        assert!(matches!(empty.turn, Turn::Call { step: 0, attempt: 1, .. }), "{empty:?}");
        assert_eq!(empty.failed, [true], "the recording shows the unmatched result as failed");
        let retried = script.turn(&[result("[]"), result(text)]);
        let Turn::Call { step: 1, arguments, .. } = retried else { panic!("{retried:?}") };
        assert_eq!(arguments["content"], "0123456789abcdef", "the value comes from the result that matched");
        let twice = script.turn(&[result("[]"), result("nonce: nothing")]);
        assert!(matches!(twice, Turn::Answer { because: Because::GaveUp, .. }), "{twice:?}");
    }

    #[test]
    fn a_placeholder_nothing_saves_before_it_is_refused_naming_the_step_and_key() {
        let refused = |text: &str| Script::parse(text, false).unwrap_err();
        let err = refused("steps: [{call: w, arguments: {content: '{{nonce}}'}}]\nanswer: x\n");
        assert!(err.starts_with("steps[0].arguments.content: {{nonce}} is not saved by an earlier step"), "{err}");
        // A step cannot use what it saves itself: the value comes from its own result.
        let err = refused("steps: [{call: r, save: {v: '(x)'}, arguments: {a: ['{{v}}']}}]\nanswer: x\n");
        assert!(err.starts_with("steps[0].arguments.a[0]: {{v}}"), "{err}");
        assert!(refused("steps: [{call: r}]\nanswer: '{{v}}'\n").starts_with("answer: {{v}}"));
        let err = refused("steps: [{call: r, save: {v: '(x)'}}]\nanswer: a\ngive_up: '{{v}}'\n");
        assert!(err.starts_with("give_up: {{v}}"), "{err}");
        let err = refused("steps: [{call: r, save: {v: 'x'}}]\nanswer: a\n");
        assert!(err.starts_with("steps[0].save.v: the regex needs a group"), "{err}");
        assert!(
            refused("steps: [{call: r, save: {v: '(x'}}]\nanswer: a\n").starts_with("steps[0].save.v: not a valid")
        );
        assert!(
            refused("steps: [{call: r, save: {a-b: '(x)'}}]\nanswer: a\n").starts_with("steps[0].save.a-b: a name")
        );
        assert!(refused("steps: [{call: r, sav: {}}]\nanswer: a\n").contains("unknown field `sav`"));
    }

    #[test]
    fn prefixed_tool_names_resolve() {
        let declared = vec!["fs_read".to_owned(), "other".to_owned()];
        assert_eq!(resolve("read", &declared), "fs_read");
        assert_eq!(resolve("other", &declared), "other");
        assert_eq!(resolve("missing", &declared), "missing");
    }
}
