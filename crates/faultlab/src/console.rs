//! What the console shows a person: verdicts in colour on a terminal (never in a pipe or under `NO_COLOR`:
//! `anstream` strips the styles there), errors as one line, each cause said once.

use anstyle::{AnsiColor, Style};

/// The verdict words that open a line of command output, and their colours.
const VERDICTS: [(&str, Style); 5] = [
    ("PASS", AnsiColor::Green.on_default()),
    ("FAIL", AnsiColor::Red.on_default().bold()),
    ("ERROR", AnsiColor::Red.on_default().bold()),
    ("EXPECTED", AnsiColor::Yellow.on_default()),
    ("SKIP", AnsiColor::Cyan.on_default()),
];

/// `text` with the verdict word that opens a line (after its indent, followed by a space) styled. Whether the
/// styles reach the screen is the output stream's choice.
pub fn colour_verdicts(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            let rest = line.trim_start();
            let indent = &line[..line.len() - rest.len()];
            let styled = VERDICTS.iter().find_map(|(word, style)| {
                let after = rest.strip_prefix(word).filter(|after| after.starts_with(' '))?;
                Some(format!("{indent}{style}{word}{style:#}{after}"))
            });
            styled.unwrap_or_else(|| line.to_owned())
        })
        .collect()
}

/// `n` and the noun that agrees with it: `1 run`, `2 runs` (every count the binary prints goes through here, so
/// no message says `run(s)`).
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `faultlab:` in bold red, for the one line an error gets on stderr.
pub fn error_prefix() -> String {
    let style = AnsiColor::Red.on_default().bold();
    format!("{style}faultlab:{style:#}")
}

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
