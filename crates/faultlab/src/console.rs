//! What the console shows a person: errors as one line, each cause said once.

/// An error and its causes as one line (`what: why: why`), leaving out a cause the line already says: a message
/// that embeds its source (`cannot read rules file x: No such file or directory (os error 2)`) is not followed by
/// the same OS error again.
pub fn error_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}
