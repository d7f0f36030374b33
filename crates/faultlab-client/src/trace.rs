//! OpenAI-message-shaped traces: an assistant message with `tool_calls` and a `tool` message per attempt, so the
//! run can be read by any tool that reads agent traces (and by `faultlab diagnose`).

use crate::outcome::{Observation, Outcome};
use serde_json::{Value, json};

/// The messages for one retried call of `tool` with `args`, opened by a user message stating the `goal`.
pub fn messages(goal: &str, tool: &str, args: &Value, attempts: &[Observation]) -> Vec<Value> {
    let calls: Vec<(&str, &Value, &Observation)> = attempts.iter().map(|a| (tool, args, a)).collect();
    calls_messages(goal, &calls)
}

/// The messages for a sequence of calls `(tool, arguments, observation)`, opened by a user message. Each message
/// has `ts_ms` (wall-clock ms since the Unix epoch) when the calls were timed: the call when its request was sent,
/// its result that plus the call's duration, the user message with the first call.
pub fn calls_messages(goal: &str, calls: &[(&str, &Value, &Observation)]) -> Vec<Value> {
    let first = calls.first().and_then(|(_, _, o)| o.started_ms);
    let mut messages = vec![stamped(json!({"role": "user", "content": goal}), first)];
    for (i, (tool, args, observation)) in calls.iter().enumerate() {
        let call_id = format!("call_{}", i + 1);
        let sent = observation.started_ms;
        messages.push(stamped(
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]
            }),
            sent,
        ));
        let answered = sent.map(|ms| ms + observation.duration_ms);
        messages.push(stamped(
            json!({"role": "tool", "tool_call_id": call_id, "content": tool_message(observation)}),
            answered,
        ));
    }
    messages
}

/// `message` with `ts_ms` when there is a time.
fn stamped(mut message: Value, ts_ms: Option<f64>) -> Value {
    if let (Some(ms), Some(fields)) = (ts_ms, message.as_object_mut()) {
        fields.insert("ts_ms".into(), json!((ms * 1000.0).round() / 1000.0));
    }
    message
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
