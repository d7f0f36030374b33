//! JSON values compared and named: canonical text, what two messages that mean the same are compared by (agents
//! need not serialise a tool's arguments with their keys in the same order twice), and the words for a value's
//! type in error messages.

use serde_json::Value;

/// JSON text with object keys sorted at every level (serde_json keeps insertion order in this workspace, so two
/// equal objects written in different orders would otherwise print differently).
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// "a number", "an object", … for messages about a value of the wrong type.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_at_any_depth_but_values_and_array_order_do() {
        let a = json!({"b": {"y": 1, "x": [2, {"q": 1, "p": 0}]}, "a": "s"});
        let b = json!({"a": "s", "b": {"x": [2, {"p": 0, "q": 1}], "y": 1}});
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(canonical(&a), r#"{"a":"s","b":{"x":[2,{"p":0,"q":1}],"y":1}}"#);
        assert_ne!(canonical(&json!([1, 2])), canonical(&json!([2, 1])));
        assert_ne!(canonical(&json!({"a": 1})), canonical(&json!({"a": "1"})));
    }
}
