//! `{{name}}` placeholders filled with values saved from earlier tool results: the control agents' plans
//! (`faultlab-eval`) and `faultlab model`'s scripts share them, so both read a placeholder the same way.
//!
//! A name is one or more ASCII letters, digits or `_`, with no spaces inside the braces. A placeholder whose name
//! was never saved is left as it is (so a typo reaches the server verbatim and the run shows it), and so is
//! anything that is not a placeholder. Inserted values are not scanned again.

use serde_json::Value;
use std::collections::BTreeMap;

/// Values saved by earlier steps, by name.
pub type Saved = BTreeMap<String, String>;

/// Whether `c` may stand in a placeholder's name.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` with every `{{name}}` saved replaced by its value.
pub fn text(text: &str, saved: &Saved) -> String {
    substitute(text, saved, |value| value.to_owned())
}

/// [`text`] applied to every string in a JSON value, at any depth: string values in objects and arrays, and
/// object keys. Numbers, booleans and nulls are kept.
pub fn value(value: &Value, saved: &Saved) -> Value {
    match value {
        Value::String(s) => Value::String(text(s, saved)),
        Value::Array(items) => Value::Array(items.iter().map(|v| self::value(v, saved)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (text(k, saved), self::value(v, saved))).collect()),
        other => other.clone(),
    }
}

/// [`text`] with each inserted value passed through `insert` first (e.g. escaped for a regex).
pub fn substitute(text: &str, saved: &Saved, insert: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((before, name, after)) = next(rest) {
        out.push_str(before);
        match name.and_then(|n| saved.get(n)) {
            Some(value) => out.push_str(&insert(value)),
            // Kept as written: a placeholder nothing was saved for, or the first brace of a `{{` that is not one.
            None => out.push_str(&rest[before.len()..rest.len() - after.len()]),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The names of the placeholders in `text`, in order.
pub fn names(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some((_, name, after)) = next(rest) {
        found.extend(name);
        rest = after;
    }
    found
}

/// The first `{{` in `text`: what stands before it; the name, when a placeholder starts there; and what follows
/// the placeholder, or else the first brace alone (so `{{{x}}` is read again from its second brace and fills
/// `{{x}}`).
fn next(text: &str) -> Option<(&str, Option<&str>, &str)> {
    let open = text.find("{{")?;
    let after = &text[open + 2..];
    let len = after.find(|c: char| !is_name_char(c)).unwrap_or(after.len());
    if len > 0 && after[len..].starts_with("}}") {
        Some((&text[..open], Some(&after[..len]), &after[len + 2..]))
    } else {
        Some((&text[..open], None, &text[open + 1..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_placeholders_and_only_they() {
        assert_eq!(names("{{a}} {{ b }} {{c_1}}{{}} {{{d}} {{e"), ["a", "c_1", "d"]);
    }
}
