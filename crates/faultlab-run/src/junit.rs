//! JUnit XML: one `<testsuite>` of `<testcase>`s, escaped so any text is valid XML 1.0.

use faultlab_wire::markup::{self, Markup};
use std::fmt::Write as _;

/// One test case.
pub struct Case {
    pub name: String,
    pub classname: String,
    pub seconds: f64,
    /// `None` when it passed; otherwise the failure message and details.
    pub failure: Option<(String, String)>,
    /// The failure was an error (the test could not run) rather than an unmet expectation.
    pub error: bool,
    /// Not run, and why (a sentence for people).
    pub skipped: Option<String>,
    pub system_out: Option<String>,
}

/// Renders a suite.
pub fn render(suite: &str, cases: &[Case]) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some() && !c.error).count();
    let errors = cases.iter().filter(|c| c.failure.is_some() && c.error).count();
    let skipped = cases.iter().filter(|c| c.skipped.is_some()).count();
    let time: f64 = cases.iter().map(|c| c.seconds).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    // `skipped` only when there are any, so a suite without reads as before.
    let skipped_attribute = if skipped > 0 { format!(" skipped=\"{skipped}\"") } else { String::new() };
    let _ = writeln!(
        out,
        "<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\"{skipped_attribute} time=\"{time:.3}\">",
        escape(suite),
        cases.len()
    );
    for case in cases {
        let _ = write!(
            out,
            "  <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
            escape(&case.name),
            escape(&case.classname),
            case.seconds
        );
        if case.failure.is_none() && case.skipped.is_none() && case.system_out.is_none() {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        if let Some((message, details)) = &case.failure {
            let element = if case.error { "error" } else { "failure" };
            let _ = writeln!(out, "    <{element} message=\"{}\">{}</{element}>", escape(message), escape(details));
        }
        if let Some(why) = &case.skipped {
            let _ = writeln!(out, "    <skipped message=\"{}\"/>", escape(why));
        }
        if let Some(text) = &case.system_out {
            let _ = writeln!(out, "    <system-out>{}</system-out>", escape(text));
        }
        out.push_str("  </testcase>\n");
    }
    out.push_str("</testsuite>\n");
    out
}

/// Escapes markup characters and replaces characters XML 1.0 does not allow with U+FFFD.
pub fn escape(text: &str) -> String {
    markup::escape(text, Markup::Xml10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_invalid_characters() {
        assert_eq!(escape("a<b>&\"'\u{1}"), "a&lt;b&gt;&amp;&quot;&apos;\u{FFFD}");
    }

    #[test]
    fn counts_failures() {
        let cases = [
            Case {
                name: "ok".into(),
                classname: "c".into(),
                seconds: 0.5,
                failure: None,
                error: false,
                skipped: None,
                system_out: None,
            },
            Case {
                name: "bad".into(),
                classname: "c".into(),
                seconds: 0.25,
                failure: Some(("boom".into(), "details".into())),
                error: false,
                skipped: None,
                system_out: None,
            },
        ];
        let xml = render("suite", &cases);
        assert!(xml.contains("tests=\"2\" failures=\"1\"") && xml.contains("time=\"0.750\""));
        assert!(xml.contains("<failure message=\"boom\">details</failure>"));
    }
}
