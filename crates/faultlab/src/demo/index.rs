//! The demo's `index.html`: one page linking every file the demo wrote, so its output folder is a static site
//! publishable as is (the release workflow puts it on GitHub Pages) and opens without installing anything.

use anyhow::Context as _;
use faultlab_wire::markup::{Markup, escape};
use std::path::{Path, PathBuf};

/// The page's name in the output folder.
pub const NAME: &str = "index.html";

/// What each top-level entry of the demo's folder holds, in the order the page shows them; a folder not named
/// here is still listed, under its own name, so no report is left out when the demo grows a part.
const SECTIONS: &[(&str, &str)] = &[
    ("eval", "Agents graded on the idempotency task through `faultlab proxy` (open report.html)"),
    ("explore", "The blind retrier's resilience map from `faultlab explore` (open report.html)"),
    ("", "The reference client in each lab_probe scenario: verdicts (demo.json) and JUnit XML"),
    ("traces", "The probe runs' traces (OpenAI messages; `faultlab diagnose` reads them)"),
    ("suite", "The built-in scenario suite over stdio and HTTP, both protocol eras: report, JUnit XML, traces"),
];

/// Writes `out/index.html` linking every file under `out` (relative links, so the folder can move).
pub fn write(out: &Path, verdict: &str) -> anyhow::Result<()> {
    let mut files = Vec::new();
    walk(out, out, &mut files)?;
    files.retain(|f| f.as_os_str() != NAME);
    files.sort();
    std::fs::write(out.join(NAME), render(&files, verdict))
        .with_context(|| format!("cannot write {}", out.join(NAME).display()))
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        // Symbolic links are not followed: the page lists what the demo wrote, nothing it points at.
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(root, &path, files)?;
        } else if kind.is_file() {
            files.push(path.strip_prefix(root).expect("walked beneath the root").to_path_buf());
        }
    }
    Ok(())
}

/// The page: the demo's verdict line, then one list per section; the reports (HTML) first within each.
fn render(files: &[PathBuf], verdict: &str) -> String {
    let top = |f: &PathBuf| {
        if f.components().count() == 1 {
            String::new()
        } else {
            f.components().next().map_or(String::new(), |c| c.as_os_str().to_string_lossy().into_owned())
        }
    };
    let mut folders: Vec<String> = files.iter().map(top).collect();
    folders.sort();
    folders.dedup();
    let known: Vec<&str> = SECTIONS.iter().map(|(folder, _)| *folder).collect();
    let order = SECTIONS
        .iter()
        .map(|(folder, about)| ((*folder).to_owned(), (*about).to_owned()))
        .chain(folders.iter().filter(|f| !known.contains(&f.as_str())).map(|f| (f.clone(), format!("{f}/"))));
    let mut body = String::new();
    for (folder, about) in order {
        let mut mine: Vec<&PathBuf> = files.iter().filter(|f| top(f) == folder).collect();
        if mine.is_empty() {
            continue;
        }
        // HTML reports before the rest, then by path.
        mine.sort_by_key(|f| (f.extension().is_none_or(|e| e != "html"), f.to_path_buf()));
        body.push_str(&format!("<h2>{}</h2>\n<ul>\n", escape(&about, Markup::Html)));
        for f in mine {
            let shown = f.to_string_lossy().replace('\\', "/");
            body.push_str(&format!(
                "<li><a href=\"{}\">{}</a></li>\n",
                escape(&href(&shown), Markup::Html),
                escape(&shown, Markup::Html)
            ));
        }
        body.push_str("</ul>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>MCP Failure Lab — demo</title>\n\
         <style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}\
         li{{font-family:ui-monospace,monospace}}</style>\n</head>\n<body>\n<h1>MCP Failure Lab — demo</h1>\n\
         <p>Recorded by <code>faultlab demo</code> (faultlab {}): real faults on the MCP wire, and what each client \
         and agent did about them.</p>\n<p class=\"verdict\">{}</p>\n{body}</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        escape(verdict, Markup::Html)
    )
}

/// A relative URL for a path: every byte outside the unreserved set and `/` percent-encoded.
fn href(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_linked_once_with_its_name_escaped_and_its_url_encoded() {
        let files: Vec<PathBuf> = ["demo.json", "eval/report.html", "eval/runs/a b.json", "new/x<y>.json"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let page = render(&files, "Verdict: as expected");
        for link in [
            "href=\"demo.json\"",
            "href=\"eval/report.html\"",
            "href=\"eval/runs/a%20b.json\"",
            "href=\"new/x%3Cy%3E.json\"",
        ] {
            assert_eq!(page.matches(link).count(), 1, "{link} in {page}");
        }
        assert!(page.contains("<h2>new/</h2>"), "a folder no section names still gets one: {page}");
        assert!(page.contains("x&lt;y&gt;.json</a>"));
        // The eval section (its HTML report first) comes before the probe runs.
        assert!(page.find("eval/report.html").unwrap() < page.find("demo.json").unwrap());
    }
}
