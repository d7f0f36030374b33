//! The trace clinic behind `faultlab diagnose`: reads what an agent did and names what went wrong, with evidence.
//!
//! Where to start reading:
//! - [`model`]: the one shape every input becomes — a timeline of entries and the tool calls in it.
//! - [`openai`] and [`trajectory`]: the two parsers (OpenAI chat messages; `faultlab proxy --record` JSON lines),
//!   strict, with errors that name the message index or line ([`error`]).
//! - [`detect`]: the detectors, one file each, documented as heuristics with their false positives; [`thresholds`]
//!   holds their numbers and [`language`] the word lists they read text with.
//! - [`render`]: console, JSON, Markdown and a self-contained HTML report, one small file each.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod detect;
pub mod error;
pub mod finding;
pub mod lab;
pub mod language;
pub mod model;
pub mod openai;
pub mod render;
pub mod thresholds;
pub mod timestamp;
pub mod trajectory;

pub use detect::{Diagnosis, NotChecked, diagnose};
pub use error::{LoadError, Location, ParseError};
pub use finding::{Finding, FindingKind, Severity};
pub use model::Trace;
pub use thresholds::Thresholds;

use std::path::Path;

/// Parses a trace, telling the two formats apart by their content: a JSON array (or an object with `messages`) is
/// OpenAI messages; lines of objects with an `event` field are a proxy trajectory. `jsonl` in the file name's
/// extension picks the trajectory parser whatever the content.
pub fn parse(text: &str, path: Option<&Path>) -> Result<Trace, ParseError> {
    faultlab_wire::nesting::check(text, faultlab_wire::nesting::Syntax::Json).map_err(|e| {
        ParseError::line(
            e.line,
            format!("nested deeper than {} levels (flatten it; the limit keeps parsing fast)", e.limit),
        )
    })?;
    let jsonl = path.and_then(Path::extension).is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
    let start = text.trim_start();
    if jsonl || (start.starts_with('{') && first_line_is_event(start)) {
        trajectory::parse(text)
    } else if start.is_empty() {
        Err(ParseError::document("the file is empty: expected a JSON array of messages or trajectory lines"))
    } else {
        openai::parse(text)
    }
}

fn first_line_is_event(text: &str) -> bool {
    let line = text.lines().next().unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.get("event").is_some())
}

/// Reads and parses the trace at `path`; errors name the file. The lab's verdict on the run is looked up beside
/// it ([`lab::find`]).
pub fn load(path: &Path) -> Result<Trace, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read { path: path.to_owned(), source })?;
    let mut trace = parse(&text, Some(path)).map_err(|error| LoadError::Parse { path: path.to_owned(), error })?;
    trace.lab = lab::find(path);
    Ok(trace)
}
