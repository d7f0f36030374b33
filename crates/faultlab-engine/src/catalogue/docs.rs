//! Each fault's documentation as data, read from the `//!` header of its own file (compiled in, so the text
//! `faultlab faults` prints is the text beside the code, never a copy): a one-line summary and the sections
//! *What it does on the wire*, *What a robust client should do*, *Example* and *How it is graded*, with the
//! fault's category, effect, examples and the `faultlab serve` tool that arms it.

use super::{Category, Effect, FaultKind, ServeTool};

/// The sections every fault's file must have (the catalogue's tests check each is there and not empty).
pub const WIRE: &str = "What it does on the wire";
pub const ROBUST: &str = "What a robust client should do";
pub const EXAMPLE: &str = "Example";
pub const GRADED: &str = "How it is graded";
pub const REQUIRED: [&str; 4] = [WIRE, ROBUST, EXAMPLE, GRADED];

/// One fault or preset, as its file documents it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// As written in rules (`latency`, `auth_expired`).
    pub name: &'static str,
    /// For a preset, the fault it is read (and recorded) as.
    pub preset_of: Option<&'static str>,
    /// Other spellings it is read under (`delayed` for `latency`).
    pub aliases: Vec<String>,
    /// Of its first example (`http_status`'s depends on the status).
    pub category: Category,
    pub effect: Effect,
    /// The header's first sentence, after the name: what the fault is, in one line.
    pub summary: String,
    /// Titled sections in file order; a section's paragraphs are separated by a blank line, its lines kept as
    /// written.
    pub sections: Vec<Section>,
    /// As users write them (JSON); every one is checked on the wire by the catalogue's tests.
    pub examples: &'static [&'static str],
    /// The `faultlab serve` tool that arms it (on its own reply or on later ones), if one does.
    pub serve_tool: Option<ServeTool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub title: String,
    pub text: String,
}

impl Entry {
    /// The text of the section titled `title`, if the file has it.
    pub fn section(&self, title: &str) -> Option<&str> {
        self.sections.iter().find(|s| s.title == title).map(|s| s.text.as_str())
    }
}

/// Every fault, then every preset, in catalogue order.
pub fn entries() -> Vec<Entry> {
    let examples = FaultKind::examples();
    FaultKind::sources()
        .into_iter()
        .zip(examples)
        .map(|((name, source), (_, examples))| entry(name, source, examples))
        .collect()
}

/// The entry named `name`, or read under `name` (an alias such as `delayed`).
pub fn find(name: &str) -> Option<Entry> {
    entries().into_iter().find(|e| e.name == name || e.aliases.iter().any(|a| a == name))
}

fn entry(name: &'static str, source: &'static str, examples: &'static [&'static str]) -> Entry {
    // Every example parses (the catalogue's tests check it); the first stands for the fault's category and effect.
    let first = examples.first().and_then(|e| serde_json::from_str::<FaultKind>(e).ok());
    let aliases = examples
        .iter()
        .filter_map(|e| serde_json::from_str::<serde_json::Value>(e).ok()?["type"].as_str().map(str::to_owned))
        .filter(|spelled| spelled != name)
        .fold(Vec::new(), |mut all, spelled| {
            if !all.contains(&spelled) {
                all.push(spelled);
            }
            all
        });
    let (summary, sections) = parse(name, source);
    Entry {
        name,
        preset_of: first.as_ref().map(FaultKind::name).filter(|read_as| *read_as != name),
        aliases,
        category: first.as_ref().map_or(Category::Protocol, FaultKind::category),
        effect: first.as_ref().map_or(Effect::Result, FaultKind::effect),
        summary,
        sections,
        examples,
        serve_tool: first.as_ref().and_then(FaultKind::serve_tool),
    }
}

/// The summary and the sections of a file's `//!` header.
fn parse(name: &str, source: &str) -> (String, Vec<Section>) {
    let header: Vec<&str> = source
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let mut paragraphs = header.split(|line| line.trim().is_empty()).filter(|p| !p.is_empty());
    let summary = paragraphs.next().map(|p| p.join(" ")).unwrap_or_default();
    let summary = summary.strip_prefix(&format!("`{name}`:")).unwrap_or(&summary).trim().to_owned();
    let mut sections: Vec<Section> = Vec::new();
    for paragraph in paragraphs {
        let text = paragraph.join("\n");
        // A section opens with its bold title (`**Example.**`); a paragraph without one continues the last.
        let titled = text.strip_prefix("**").and_then(|rest| rest.split_once(".**"));
        match (titled, sections.last_mut()) {
            (Some((title, rest)), _) => sections.push(Section { title: title.into(), text: rest.trim().into() }),
            (None, Some(last)) => {
                last.text.push_str("\n\n");
                last.text.push_str(&text);
            }
            (None, None) => sections.push(Section { title: String::new(), text }),
        }
    }
    (summary, sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_a_summary_and_the_four_sections() {
        let entries = entries();
        let faults = <FaultKind as strum::VariantNames>::VARIANTS;
        assert_eq!(entries.len(), faults.len() + 5, "every fault and the five presets are documented");
        for entry in &entries {
            assert!(
                entry.summary.ends_with('.') && entry.summary.len() > 10,
                "{}: summary {:?}",
                entry.name,
                entry.summary
            );
            assert!(!entry.summary.contains('\n'), "{}: the summary is one line", entry.name);
            for title in REQUIRED {
                let text = entry.section(title).unwrap_or_default();
                assert!(!text.is_empty(), "{}.rs does not document **{title}.**", entry.name);
            }
            assert!(!entry.examples.is_empty(), "{} has no examples", entry.name);
            let scheduled = serde_json::from_str::<FaultKind>(entry.examples[0]).unwrap().schedule().is_some();
            assert!(
                faults.contains(&entry.name) || entry.preset_of.is_some() || scheduled,
                "{}: neither fault nor preset",
                entry.name
            );
        }
    }

    #[test]
    fn names_aliases_and_presets() {
        let latency = find("delayed").unwrap();
        assert_eq!((latency.name, latency.category, latency.effect), ("latency", Category::Transport, Effect::Result));
        assert!(latency.summary.starts_with("the reply is held back"), "{}", latency.summary);
        assert!(latency.section(WIRE).unwrap().starts_with("Nothing is written for `delay_ms`"));
        assert_eq!(find("malformed_response").unwrap().name, "malformed");
        let expired = find("auth_expired").unwrap();
        assert_eq!((expired.preset_of, expired.category), (Some("http_status"), Category::Authorization));
        assert_eq!(expired.serve_tool, Some(ServeTool::http_only("http_status")));
        assert_eq!(find("stale").unwrap().serve_tool, None);
        assert!(find("nonsense").is_none());
        // A section's later paragraphs stay in it.
        assert!(find("server_outage").unwrap().section(WIRE).unwrap().contains("With `restart: true`"));
    }
}
