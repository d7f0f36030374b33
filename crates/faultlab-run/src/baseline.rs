//! A baseline: the known failures of a client, checked into its repository and reviewed in PRs, so that CI fails
//! only on what changed. A listed check that fails is expected; a check that fails and is not listed is a new
//! failure; a listed check that now passes is stale and fails the run too until it is removed (the way the
//! official conformance suite treats its expected failures). Listed checks that did not run (another shard, a
//! scenario not given) are neither.
//!
//! The file is plain YAML (`schemas/baseline.schema.json`), strict: an unknown key, a blank or repeated entry is
//! refused naming the file.

use faultlab_wire::config;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The known failures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The checks known to fail, by id: for `faultlab run` "SCENARIO NAME [PROTOCOL VERSION]", for `faultlab eval`
    /// "TASK × AGENT" (failed when any repeat failed), as the command prints them.
    #[serde(default)]
    pub failures: Vec<String>,
}

/// A baseline file that cannot be read or is invalid.
pub type LoadError = config::FileError;

/// The results measured against a baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Check {
    /// Failed and not listed.
    pub new: Vec<String>,
    /// Listed and passed.
    pub stale: Vec<String>,
    /// Listed and failed.
    pub expected: Vec<String>,
}

impl Check {
    /// Nothing new failed and nothing listed passes.
    pub fn passed(&self) -> bool {
        self.new.is_empty() && self.stale.is_empty()
    }
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        // YAML whatever the name (JSON is YAML too).
        config::load(path, "baseline file", |text, _| Self::parse(text))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        // An empty file is an empty baseline, as `failures: []` is.
        if text.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')) {
            return Ok(Self::default());
        }
        let baseline: Self = config::parse(text, false)?;
        let mut seen = BTreeSet::new();
        for (i, id) in baseline.failures.iter().enumerate() {
            if id.trim().is_empty() {
                return Err(format!("failures[{i}]: an entry must name a check"));
            }
            if !seen.insert(id) {
                return Err(format!("failures[{i}]: {id:?} is listed twice"));
            }
        }
        Ok(baseline)
    }

    /// The baseline of a run: every check that failed, sorted.
    pub fn of<'a>(results: impl IntoIterator<Item = (&'a str, bool)>) -> Self {
        let failures = merged(results).into_iter().filter(|(_, passed)| !passed).map(|(id, _)| id.to_owned());
        Self { failures: failures.collect() }
    }

    /// The file's text: a comment saying what it is, then the list.
    pub fn to_yaml(&self) -> String {
        let mut text = String::from(
            "# faultlab baseline: the checks known to fail. A new failure, or a check listed here that now passes,\n\
             # fails the run (schemas/baseline.schema.json). Written by --update-baseline; review it like code.\n",
        );
        if self.failures.is_empty() {
            text.push_str("failures: []\n");
            return text;
        }
        text.push_str("failures:\n");
        for id in &self.failures {
            // JSON strings are valid YAML scalars: any id comes back as written.
            text.push_str(&format!("  - {}\n", serde_json::Value::from(id.as_str())));
        }
        text
    }

    /// Measures `results` (check id, passed; an id given more than once failed if any failed) against the list.
    pub fn check<'a>(&self, results: impl IntoIterator<Item = (&'a str, bool)>) -> Check {
        let listed: BTreeSet<&str> = self.failures.iter().map(String::as_str).collect();
        let mut check = Check::default();
        for (id, passed) in merged(results) {
            match (listed.contains(id), passed) {
                (true, true) => check.stale.push(id.to_owned()),
                (true, false) => check.expected.push(id.to_owned()),
                (false, false) => check.new.push(id.to_owned()),
                (false, true) => {}
            }
        }
        check
    }
}

/// One verdict per id, sorted: failed when any result with that id failed.
fn merged<'a>(results: impl IntoIterator<Item = (&'a str, bool)>) -> BTreeMap<&'a str, bool> {
    let mut merged = BTreeMap::new();
    for (id, passed) in results {
        *merged.entry(id).or_insert(true) &= passed;
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_stale_expected_and_not_run() {
        let baseline = Baseline::parse("failures: [a, b, gone]\n").unwrap();
        let check = baseline.check([("a", false), ("b", true), ("c", false), ("d", true), ("a", true)]);
        assert_eq!(check.expected, ["a"]);
        assert_eq!(check.stale, ["b"]);
        assert_eq!(check.new, ["c"]);
        assert!(!check.passed());
        assert!(baseline.check([("a", false), ("b", false)]).passed(), "a listed check that did not run is fine");
    }

    #[test]
    fn written_baselines_read_back_and_bad_ones_say_why() {
        let written = Baseline::of([("x: y [2026-07-28]", false), ("ok", true), ("'q' × \"r\"", false)]);
        assert_eq!(Baseline::parse(&written.to_yaml()).unwrap(), written);
        assert_eq!(written.failures.len(), 2);
        assert_eq!(Baseline::parse(&Baseline::default().to_yaml()).unwrap(), Baseline::default());
        assert_eq!(Baseline::parse("# nothing yet\n").unwrap(), Baseline::default());
        assert!(Baseline::parse("failure: [a]\n").unwrap_err().contains("failure"));
        assert!(Baseline::parse("failures: [a, a]\n").unwrap_err().contains("listed twice"));
        assert!(Baseline::parse("failures: ['  ']\n").unwrap_err().contains("failures[0]"));
    }
}
