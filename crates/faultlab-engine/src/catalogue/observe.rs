//! What a client makes of what it read for one request: the [`Effect`] it saw. The catalogue's tests run every
//! example on every front and compare this with the fault's promised effect.

use super::Effect;
use serde_json::Value;

/// How reading for the request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The connection or the response stream closed (or failed) before a reply.
    Lost,
    /// The client stopped waiting.
    Waited,
    /// The exchange ended normally (the reply was read, or an HTTP response ended).
    Done,
}

/// A frame as a tolerant client parses it (a byte-order mark and a trailing line end allowed); `None` when it is
/// not JSON.
pub fn parse(bytes: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str(text.trim_start_matches('\u{feff}').trim_end_matches(['\r', '\n'])).ok()
}

/// What the client saw for request `id`, from the frames it read (in order) and how reading ended. `answer` is
/// the result the server meant to send; a valid result that differs from it is wrong data (with no `answer`,
/// any valid result counts as the result). A tool error result (`isError: true`) where the answer was none is an
/// error. `output_schema` is the called tool's listed `outputSchema`, if it has one: a successful result whose
/// `structuredContent` is missing or does not validate against it is invalid, as MCP says.
pub fn seen(
    frames: &[&[u8]],
    id: &Value,
    ended: Ending,
    answer: Option<&Value>,
    output_schema: Option<&Value>,
) -> Effect {
    let mut garbage = false;
    for bytes in frames {
        // JSON that is no JSON-RPC message (a gateway's `{"message": ...}`) is as unusable as bytes that are not JSON.
        let Some(message) = parse(bytes).filter(|m| m.get("jsonrpc").is_some() || m.get("id").is_some()) else {
            garbage = true;
            continue;
        };
        // Notifications, and replies to ids never sent or already answered, are not this request's answer.
        if message.get("id") == Some(id) {
            return reply(&message, answer, output_schema);
        }
    }
    match ended {
        Ending::Lost => Effect::TransportLoss,
        Ending::Waited | Ending::Done if garbage => Effect::Invalid,
        Ending::Waited | Ending::Done => Effect::Timeout,
    }
}

/// What one reply with the request's id amounts to.
fn reply(message: &Value, answer: Option<&Value>, output_schema: Option<&Value>) -> Effect {
    let (result, error) = (message.get("result"), message.get("error"));
    if message["jsonrpc"] != "2.0" || result.is_some() == error.is_some() {
        return Effect::Invalid;
    }
    let Some(result) = result else { return Effect::Error };
    // A list result (`tools/list` and the like) has its list where a tool result has its content blocks.
    let list = ["tools", "resources", "resourceTemplates", "prompts"].iter().any(|key| result[key].is_array());
    // A 2026-07-28 multi-round-trip answer (SEP-2322) carries what the client must fulfil instead of content.
    let input_required = result["resultType"] == "input_required"
        && (result["inputRequests"].is_object() || result["requestState"].is_string());
    let valid_blocks = list
        || input_required
        || result["content"].as_array().is_some_and(|blocks| {
            blocks.iter().all(|b| b["type"].is_string() && (b["type"] != "text" || b["text"].is_string()))
        });
    let tool_error = |result: &Value| result.get("isError") == Some(&Value::Bool(true));
    match answer {
        _ if !valid_blocks => Effect::Invalid,
        _ if tool_error(result) && !answer.is_some_and(tool_error) => Effect::Error,
        _ if !tool_error(result) && output_schema.is_some_and(|schema| !conforms(result, schema)) => Effect::Invalid,
        Some(answer) if answer != result => Effect::WrongData,
        _ => Effect::Result,
    }
}

/// Whether the result's `structuredContent` is there and valid against `schema` (a schema that cannot be compiled
/// is not held against the result).
fn conforms(result: &Value, schema: &Value) -> bool {
    let Some(structured) = result.get("structuredContent") else { return false };
    jsonschema::validator_for(schema).map_or(true, |validator| validator.is_valid(structured))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replies_errors_garbage_and_silence() {
        let id = json!(2);
        let answer = json!({"content": [{"type": "text", "text": "ok"}]});
        let good = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
        let other = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
        let error = br#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"no"}}"#;
        let old = br#"{"jsonrpc":"1.0","id":2,"result":{"content":[]}}"#;
        let seen_one = |frames: &[&[u8]], ended| seen(frames, &id, ended, Some(&answer), None);
        assert_eq!(seen_one(&[b"not json", good], Ending::Done), Effect::Result);
        assert_eq!(seen_one(&[other], Ending::Done), Effect::WrongData);
        assert_eq!(seen(&[other], &id, Ending::Done, None, None), Effect::Result);
        assert_eq!(seen_one(&[error], Ending::Done), Effect::Error);
        assert_eq!(seen_one(&[old], Ending::Done), Effect::Invalid);
        assert_eq!(seen_one(&[br#"{"message":"Bad Gateway","status":502}"#], Ending::Done), Effect::Invalid);
        assert_eq!(seen_one(&[b"{\"jsonrpc\":\"2.0\",\"id\":"], Ending::Waited), Effect::Invalid);
        assert_eq!(seen_one(&[br#"{"jsonrpc":"2.0","id":"2-wrong","result":{}}"#], Ending::Waited), Effect::Timeout);
        assert_eq!(seen_one(&[], Ending::Lost), Effect::TransportLoss);
    }

    #[test]
    fn tool_errors_and_structured_content_against_the_output_schema() {
        let id = json!(2);
        let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        let answer = json!({"content": [], "structuredContent": {"n": 1}});
        let seen_with = |frame: &[u8]| seen(&[frame], &id, Ending::Done, Some(&answer), Some(&schema));
        assert_eq!(
            seen_with(br#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"n":1}}}"#),
            Effect::Result
        );
        assert_eq!(
            seen_with(br#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"n":2}}}"#),
            Effect::WrongData
        );
        assert_eq!(
            seen_with(br#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"n":"1"}}}"#),
            Effect::Invalid
        );
        assert_eq!(seen_with(br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#), Effect::Invalid);
        let rounds = br#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","requestState":"s"}}"#;
        assert_eq!(seen(&[rounds], &id, Ending::Done, None, None), Effect::Result, "an input_required answer");
        let hollow = br#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required"}}"#;
        assert_eq!(seen(&[hollow], &id, Ending::Done, None, None), Effect::Invalid, "nothing to fulfil or echo");
        let error = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"n":"x"},"isError":true}}"#;
        assert_eq!(seen_with(error), Effect::Error, "an error result is not held to the success schema");
        let list = json!({"tools": [{"name": "a"}, {"name": "b"}]});
        let page = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}],"nextCursor":"n"}}"#;
        assert_eq!(seen(&[page], &id, Ending::Done, Some(&list), None), Effect::WrongData, "a page is not the list");
        let whole = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"},{"name":"b"}]}}"#;
        assert_eq!(seen(&[whole], &id, Ending::Done, Some(&list), None), Effect::Result);
    }
}
