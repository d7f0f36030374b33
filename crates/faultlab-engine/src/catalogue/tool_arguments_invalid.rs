//! `tool_arguments_invalid`: the model asks for a tool call whose arguments are not valid JSON (model hop only).
//!
//! **What it does on the wire.** `faultlab model` answers with the scripted tool call, complete by every other
//! sign (`finish_reason: "tool_calls"`, `stop_reason: "tool_use"`), but its arguments are written the way models
//! get JSON wrong: single quotes and a trailing comma (`{'text': 'hello',}`). Chat Completions and Responses carry
//! the arguments as a string, JSON and streamed; Anthropic Messages only when streamed (the `input_json_delta`s
//! join into the broken text). An Anthropic JSON answer, a Gemini answer (whose `args` is an object) and a scripted
//! text answer cannot carry it: the answer goes out unchanged and the recording says the fault was skipped. The
//! proxy refuses this fault.
//!
//! **What a robust client should do.** Not run the tool with arguments it could not parse (nor with `{}` in
//! their place); tell the model its arguments were invalid so it can try again, or fail the run saying so.
//!
//! **Example.** `{"type": "tool_arguments_invalid"}`
//!
//! **How it is graded.** The recording shows what the framework sent back: an error result naming the parse
//! failure is recovery; an MCP call with `{}` or a crash is not.

model_fault! {
    /// A tool call whose arguments are not valid JSON (single quotes, a trailing comma).
    pub struct ToolArgumentsInvalid {}
    category: Data,
    effect: Invalid,
    examples: [r#"{"type": "tool_arguments_invalid"}"#],
}

/// The arguments as a model that gets JSON wrong writes them: single quotes for double, a trailing comma before
/// the last brace. Never valid JSON (the quote swap alone breaks any string).
pub fn broken(arguments: &str) -> String {
    let swapped = arguments.replace('"', "'");
    match swapped.rfind('}') {
        Some(at) if swapped.len() > 2 => format!("{},{}", &swapped[..at], &swapped[at..]),
        _ => "{'input': ,}".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_arguments_never_parse() {
        for arguments in [r#"{"text":"hello"}"#, "{}", r#"{"a":1,"b":[2]}"#] {
            let out = broken(arguments);
            assert!(serde_json::from_str::<serde_json::Value>(&out).is_err(), "{out}");
        }
        assert_eq!(broken(r#"{"text":"hello"}"#), "{'text':'hello',}");
    }
}
