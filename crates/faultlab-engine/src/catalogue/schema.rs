//! JSON Schema work the faults that must keep a result valid share (`wrong_value`, `contradictory`): a validator
//! for a tool's output schema that never fetches anything, and the subschemas that apply at a place in an
//! instance.

use super::OutputSchema;
use serde_json::Value;

/// A validator for a tool's output schema (and the schema), or why the schema cannot be used to check a result.
pub(super) fn output_validator(schema: &OutputSchema) -> Result<(jsonschema::Validator, &serde_json::Value), String> {
    let OutputSchema::Listed(schema) = schema else {
        return Err("the tool's outputSchema is too large to keep, so a changed result cannot be checked".into());
    };
    // The draft follows the schema's `$schema` (2020-12 without one, as MCP says). External `$ref`s are refused
    // whatever features other crates turn on: the proxy never fetches a URL or reads a file an upstream names.
    jsonschema::options()
        .with_retriever(NoRetrieval)
        .build(schema)
        .map(|validator| (validator, schema.as_ref()))
        .map_err(|e| format!("the tool's outputSchema cannot be used to check a changed result: {e}"))
}

/// Why `instance` is invalid against `validator` (the first error and where), or `Ok`.
pub(super) fn check(validator: &jsonschema::Validator, instance: &serde_json::Value) -> Result<(), String> {
    validator.validate(instance).map_err(|e| {
        let at = e.instance_path().to_string();
        if at.is_empty() { e.to_string() } else { format!("at {at}: {e}") }
    })
}

/// A `$ref` retriever that retrieves nothing: only references inside the schema itself resolve.
struct NoRetrieval;

impl jsonschema::Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {uri} is not fetched").into())
    }
}

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Step {
    Key(String),
    Index(usize),
}

pub(super) fn at_mut<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |value, step| match step {
        Step::Key(key) => value.get_mut(key.as_str()),
        Step::Index(index) => value.get_mut(*index),
    })
}

/// Most subschemas gathered for one location, and deepest `$ref`/combinator nesting followed: a bound for
/// recursive or very branchy schemas.
const MAX_SUBSCHEMAS: usize = 256;
const MAX_SCHEMA_DEPTH: usize = 16;

/// Every subschema of `root` that may apply at `path` of an instance: through `properties`, `patternProperties`,
/// `additionalProperties`, `prefixItems` and `items` (both drafts' forms), expanded through local `$ref`s and
/// `allOf`/`anyOf`/`oneOf`/`then`/`else`. Over-inclusive on purpose: it only decides which changes are worth
/// trying (and which strings to leave alone); validation has the last word.
pub(super) fn schemas_at<'s>(root: &'s Value, path: &[Step]) -> Vec<&'s Value> {
    let mut here = Vec::new();
    expand(root, root, 0, &mut here);
    for step in path {
        let mut next = Vec::new();
        for schema in here {
            for child in children(schema, step) {
                expand(root, child, 0, &mut next);
            }
        }
        here = next;
    }
    here
}

/// The subschemas of `schema` that apply to its instance's child at `step` (before expansion).
fn children<'s>(schema: &'s Value, step: &Step) -> Vec<&'s Value> {
    let mut out = Vec::new();
    match step {
        Step::Key(key) => {
            let named = schema.get("properties").and_then(|p| p.get(key.as_str()));
            out.extend(named);
            if let Some(Value::Object(patterns)) = schema.get("patternProperties") {
                out.extend(patterns.values());
            }
            if named.is_none() {
                out.extend(schema.get("additionalProperties"));
            }
        }
        Step::Index(index) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            match (prefix.and_then(|p| p.get(*index)), schema.get("items")) {
                (Some(item), _) => out.push(item),
                // Drafts before 2020-12 write a tuple as an `items` array, and the rest as `additionalItems`.
                (None, Some(Value::Array(tuple))) => match tuple.get(*index) {
                    Some(item) => out.push(item),
                    None => out.extend(schema.get("additionalItems")),
                },
                (None, Some(items)) if prefix.is_none_or(|p| *index >= p.len()) => out.push(items),
                _ => {}
            }
        }
    }
    out
}

/// Adds `schema` and every subschema it brings in at the same location to `out`.
fn expand<'s>(root: &'s Value, schema: &'s Value, depth: usize, out: &mut Vec<&'s Value>) {
    if depth > MAX_SCHEMA_DEPTH || out.len() >= MAX_SUBSCHEMAS || !schema.is_object() {
        return;
    }
    out.push(schema);
    if let Some(target) = schema.get("$ref").and_then(Value::as_str).and_then(|r| local_ref(root, r)) {
        expand(root, target, depth + 1, out);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for branch in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            expand(root, branch, depth + 1, out);
        }
    }
    for key in ["then", "else"] {
        if let Some(branch) = schema.get(key) {
            expand(root, branch, depth + 1, out);
        }
    }
}

/// The target of a `$ref` that points inside the schema itself (`#`, `#/$defs/x`); `None` for anything else.
fn local_ref<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    // A `$ref` is a URI, so its fragment may percent-encode characters of the pointer.
    root.pointer(&percent_decoded(pointer)?)
}

fn percent_decoded(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let [first, tail @ ..] = rest {
        if *first == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(*first);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// Most changes tried by [`violating`]: each is one validation walking the whole value.
const MAX_VIOLATIONS_TRIED: usize = 128;

/// A value close to `structured` that `validator` rejects, and the validator's reason; `None` when the schema
/// accepts every change tried (a schema of `{}` or `true`). Tried in order: each property the root's `required`
/// lists removed; each member's value replaced by one of another JSON type (a string by `42`, anything else by
/// the string `"42"`), then by `null`; the whole value replaced by `[]`, `"42"` and `null`. A close change is
/// preferred: it reads like a server whose handler drifted from its declared schema, not like garbage.
pub(super) fn violating(
    validator: &jsonschema::Validator,
    root: &Value,
    structured: &Value,
) -> Option<(Value, String)> {
    let mut changes = Vec::new();
    if let Value::Object(members) = structured {
        let required = root.get("required").and_then(Value::as_array).into_iter().flatten();
        for name in required.filter_map(Value::as_str).filter(|name| members.contains_key(*name)) {
            let mut copy = members.clone();
            copy.remove(name);
            changes.push(Value::Object(copy));
        }
        for (key, value) in members {
            let other = if value.is_string() { Value::from(42) } else { Value::from("42") };
            for replacement in [other, Value::Null] {
                let mut copy = members.clone();
                copy.insert(key.clone(), replacement);
                changes.push(Value::Object(copy));
            }
            if changes.len() >= MAX_VIOLATIONS_TRIED {
                break;
            }
        }
    }
    changes.extend([Value::Array(Vec::new()), Value::from("42"), Value::Null]);
    changes
        .into_iter()
        .filter(|change| change != structured)
        .take(MAX_VIOLATIONS_TRIED)
        .find_map(|change| check(validator, &change).err().map(|reason| (change, reason)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoded_refs_decode() {
        assert_eq!(percent_decoded("/$defs/a%20b%25"), Some("/$defs/a b%".into()));
        assert_eq!(percent_decoded("%2"), None);
    }
}
