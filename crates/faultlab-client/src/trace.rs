//! OpenAI-message-shaped traces: an assistant message with `tool_calls` and a `tool` message per attempt, so the
//! run can be read by any tool that reads agent traces (and by `faultlab diagnose`).

use crate::outcome::{Observation, Outcome};
use serde_json::{Value, json};

/// The messages for one retried call of `tool` with `args`, opened by a user message stating the `goal`.
pub fn messages(goal: &str, tool: &str, args: &Value, attempts: &[Observation]) -> Vec<Value> {
    let calls: Vec<(&str, &Value, &Observation)> = attempts.iter().map(|a| (tool, args, a)).collect();
    calls_messages(goal, &calls)
}

/// The messages for a sequence of calls `(tool, arguments, observation)`, opened by a user message.
pub fn calls_messages(goal: &str, calls: &[(&str, &Value, &Observation)]) -> Vec<Value> {
    let mut messages = vec![json!({"role": "user", "content": goal})];
    for (i, (tool, args, observation)) in calls.iter().enumerate() {
        let call_id = format!("call_{}", i + 1);
        messages.push(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]
        }));
        messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": tool_message(observation)}));
    }
    messages
}

/// What the tool message says: the result text, or the failure as the client saw it.
fn tool_message(observation: &Observation) -> String {
    match observation.outcome {
        Outcome::Success => observation.text(),
        Outcome::Error => format!("Error: {}", observation.message()),
        Outcome::Timeout => format!("Error: timed out after {:.0} ms", observation.duration_ms),
        Outcome::Cancelled => "Error: cancelled".into(),
        Outcome::TransportLoss => format!("Error: connection lost: {}", observation.message()),
    }
}
