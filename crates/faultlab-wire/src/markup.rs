//! Text made safe for the reports' markup: HTML pages (eval, diagnose) and JUnit XML (run, eval).

/// Which markup the text goes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    /// HTML element content and attribute values.
    Html,
    /// XML 1.0 (JUnit): also replaces the characters XML 1.0 does not allow (control characters other than tab,
    /// newline and carriage return; U+FFFE, U+FFFF) with U+FFFD, since a consumer refuses the whole file over one.
    Xml10,
}

/// `text` with the markup characters as entities (and, for XML 1.0, its forbidden characters replaced).
pub fn escape(text: &str, markup: Markup) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' if markup == Markup::Html => out.push_str("&#39;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if markup == Markup::Xml10 && ((c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}') => {
                out.push('\u{FFFD}')
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_keeps_control_characters_and_xml_replaces_them() {
        assert_eq!(escape("a<b>&\"'\u{1}\t", Markup::Html), "a&lt;b&gt;&amp;&quot;&#39;\u{1}\t");
        assert_eq!(escape("a<b>&\"'\u{1}\t\u{FFFE}", Markup::Xml10), "a&lt;b&gt;&amp;&quot;&apos;\u{FFFD}\t\u{FFFD}");
    }
}
