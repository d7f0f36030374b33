//! Responses' `previous_response_id`: a request that names an earlier response continues its conversation, so the
//! endpoint keeps the turns it answered in this run (the input each response was given and its output items),
//! bounded in count and bytes, oldest forgotten first. A request naming a response it never gave, or one it has
//! forgotten, is refused naming the id.

use serde_json::{Value, json};
use std::collections::VecDeque;

/// Most responses kept.
pub const MAX_RESPONSES: usize = 256;
/// Most bytes of conversation kept (their JSON text), over all responses (16 MiB).
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

#[derive(Default)]
pub struct Chain {
    /// (response id, the whole conversation after it: input items then output items, its JSON size in bytes).
    kept: VecDeque<(String, Vec<Value>, usize)>,
    bytes: usize,
}

impl Chain {
    /// The request with its `input` grown by the conversation `previous_response_id` names (and that key
    /// removed); `None` when it names none.
    pub fn expand(&self, body: &Value) -> Result<Option<Value>, String> {
        let Some(previous) = body.get("previous_response_id").filter(|v| !v.is_null()) else { return Ok(None) };
        let id = previous.as_str().ok_or("previous_response_id: a string is required")?;
        let Some((_, before, _)) = self.kept.iter().find(|(kept, _, _)| kept == id) else {
            return Err(format!(
                "previous_response_id: Previous response with id '{id}' not found (faultlab model keeps the last \
                 {MAX_RESPONSES} responses of this run, {} MiB at most)",
                MAX_BYTES / (1024 * 1024)
            ));
        };
        let mut input = before.clone();
        match body.get("input") {
            Some(Value::String(text)) => input.push(json!({"role": "user", "content": text})),
            Some(Value::Array(items)) => input.extend(items.iter().cloned()),
            _ => return Err("input: a string or an array of items is required".into()),
        }
        let mut expanded = body.clone();
        if let Some(fields) = expanded.as_object_mut() {
            fields.remove("previous_response_id");
            fields.insert("input".into(), Value::Array(input));
        }
        Ok(Some(expanded))
    }

    /// Keeps response `id`'s conversation: `input` (the request's, expanded) and the `output` items it answered.
    /// A conversation larger than [`MAX_BYTES`] is not kept (chaining on it is then refused, naming the id).
    pub fn keep(&mut self, id: String, input: &Value, output: Vec<Value>) {
        let mut items = match input {
            Value::String(text) => vec![json!({"role": "user", "content": text})],
            Value::Array(items) => items.clone(),
            _ => Vec::new(),
        };
        items.extend(output);
        let size = items.iter().map(|i| i.to_string().len()).sum::<usize>();
        if size > MAX_BYTES {
            return;
        }
        while self.kept.len() >= MAX_RESPONSES || self.bytes + size > MAX_BYTES {
            let Some((_, _, freed)) = self.kept.pop_front() else { break };
            self.bytes -= freed;
        }
        self.bytes += size;
        self.kept.push_back((id, items, size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chained_request_gets_the_conversation_before_it_and_the_oldest_is_forgotten() {
        let mut chain = Chain::default();
        chain.keep("resp_1".into(), &json!("hi"), vec![json!({"type": "function_call", "call_id": "c1"})]);
        let next = json!({"previous_response_id": "resp_1",
            "input": [{"type": "function_call_output", "call_id": "c1", "output": "ok"}]});
        let expanded = chain.expand(&next).unwrap().unwrap();
        assert_eq!(expanded["input"].as_array().unwrap().len(), 3);
        assert!(expanded.get("previous_response_id").is_none());
        assert_eq!(chain.expand(&json!({"input": "x"})).unwrap(), None);
        for i in 0..MAX_RESPONSES {
            chain.keep(format!("r{i}"), &json!("x"), Vec::new());
        }
        let error = chain.expand(&next).unwrap_err();
        assert!(error.contains("'resp_1' not found"), "{error}");
    }
}
