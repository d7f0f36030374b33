//! Errors that point at the message (or line) to fix.

use std::path::PathBuf;

/// Where in a trace something is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (its shape), with the line and column of a JSON syntax error if there is one.
    Document { line: Option<(usize, usize)> },
    /// A message: its index in the array, from 0, and the line and column of a JSON syntax error inside it.
    Message { index: usize, line: Option<(usize, usize)> },
    /// A line of a JSON-lines trajectory, from 1, and the column of a JSON syntax error in it.
    Line { line: usize, column: Option<usize> },
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Document { line: None } => write!(f, "the document"),
            Location::Document { line: Some((l, c)) } => write!(f, "line {l}, column {c}"),
            Location::Message { index, line: None } => write!(f, "message {index}"),
            Location::Message { index, line: Some((l, c)) } => write!(f, "message {index} (line {l}, column {c})"),
            Location::Line { line, column: None } => write!(f, "line {line}"),
            Location::Line { line, column: Some(c) } => write!(f, "line {line}, column {c}"),
        }
    }
}

/// A trace that does not have the shape the parser expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {reason}")]
pub struct ParseError {
    pub location: Location,
    pub reason: String,
}

impl ParseError {
    pub fn document(reason: impl Into<String>) -> Self {
        Self { location: Location::Document { line: None }, reason: reason.into() }
    }

    pub fn message(index: usize, reason: impl Into<String>) -> Self {
        Self { location: Location::Message { index, line: None }, reason: reason.into() }
    }

    pub fn line(line: usize, reason: impl Into<String>) -> Self {
        Self { location: Location::Line { line, column: None }, reason: reason.into() }
    }

    /// A JSON syntax error in a messages array, placed in the message it falls in when the array can be followed
    /// that far.
    pub fn syntax(text: &str, error: &serde_json::Error) -> Self {
        let at = (error.line(), error.column());
        let location = match element_index(text, offset(text, error.line(), error.column())) {
            Some(index) => Location::Message { index, line: Some(at) },
            None => Location::Document { line: Some(at) },
        };
        Self { location, reason: format!("invalid JSON: {}", strip_position(error)) }
    }
}

/// A trace file that could not be read or parsed; names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {error}", path.display())]
    Parse { path: PathBuf, error: ParseError },
}

/// serde_json's message without its own " at line L column C" (the location says it already).
pub(crate) fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// The byte offset of a 1-based line and column (serde_json counts columns in bytes).
fn offset(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (start + column.saturating_sub(1)).min(text.len())
}

/// Which element of a top-level JSON array the byte `offset` falls in, following strings and nesting; `None` when
/// the text is not an array or the offset is outside its elements.
fn element_index(text: &str, offset: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    if bytes[start] != b'[' {
        return None;
    }
    let (mut depth, mut index, mut in_string, mut escaped) = (1usize, 0usize, false, false);
    for (i, &b) in bytes.iter().enumerate().take(offset.min(bytes.len())).skip(start + 1) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    // The array closed before the error: the error is after it, not in a message.
                    return (i + 1 >= offset).then_some(index);
                }
            }
            b',' if depth == 1 => index += 1,
            _ => {}
        }
    }
    Some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_is_placed_in_its_message() {
        let text = "[\n {\"role\": \"user\", \"content\": \"a, [b]\"},\n {\"role\": \"tool\" \"x\": 1}\n]";
        let error = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        let parsed = ParseError::syntax(text, &error);
        assert_eq!(parsed.location, Location::Message { index: 1, line: Some((3, 18)) });
        assert!(parsed.to_string().starts_with("message 1 (line 3, column 18): invalid JSON: expected"), "{parsed}");
    }

    #[test]
    fn a_document_that_is_not_an_array_has_no_message_index() {
        let error = serde_json::from_str::<serde_json::Value>("{\"a\": }").unwrap_err();
        assert!(matches!(ParseError::syntax("{\"a\": }", &error).location, Location::Document { .. }));
    }
}
