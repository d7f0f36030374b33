//! The labelled corpus: `tests/corpus/labels.json` names, for every trace in `tests/corpus/`, the findings it must
//! have and the ones it is built to tempt the clinic into (`mustNot`). The clinic runs over every trace with the
//! default thresholds; any finding not in `must` is a false positive (listed in `mustNot` or not), any `must`
//! finding absent is a miss, and either fails the test. Precision and recall are counted per (trace, finding
//! kind), per origin and in all, and must match the table in `docs/diagnose.md`: rerun with `--nocapture` to
//! print the table.

use crate::util::{corpus, diagnose};
use faultlab_diagnose::FindingKind;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `labels.json`: strict (an unknown key, an unknown finding name or origin is an error naming it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Labels {
    traces: Vec<Label>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Label {
    /// The trace's path under `tests/corpus/`.
    trace: String,
    origin: Origin,
    must: Vec<String>,
    must_not: Vec<String>,
    /// What the trace records, and why the labels are right.
    why: String,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[serde(rename_all = "snake_case")]
enum Origin {
    /// Written by `faultlab demo`: the reference client against `faultlab serve`.
    Demo,
    /// Recorded by `faultlab proxy --record` in front of a server.
    Proxy,
    /// Written in the shapes agent frameworks log (content parts, RFC 3339 times, a `messages` object).
    Framework,
    /// Hand-made stories, a positive and a negative per finding.
    Handmade,
}

fn kinds(names: &[String], trace: &str) -> BTreeSet<FindingKind> {
    names
        .iter()
        .map(|n| FindingKind::from_name(n).unwrap_or_else(|| panic!("labels.json: {trace}: unknown finding `{n}`")))
        .collect()
}

fn load_labels() -> Vec<Label> {
    let text = std::fs::read_to_string(corpus("labels.json")).unwrap();
    faultlab_wire::nesting::check(&text, faultlab_wire::nesting::Syntax::Json).expect("labels.json: too deep");
    let labels: Labels = serde_json::from_str(&text).unwrap_or_else(|e| panic!("labels.json: {e}"));
    labels.traces
}

/// Every trace file under `dir` (`.json`, `.jsonl`), as paths relative to the corpus; `demo/demo.json` (the demo's
/// report, read for its verdicts) and `labels.json` are not traces.
fn trace_files(dir: &Path, root: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            trace_files(&path, root, out);
            continue;
        }
        let name = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        if name != "labels.json" && name != "demo/demo.json" {
            out.insert(name);
        }
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    traces: usize,
    expected: usize,
    true_positives: usize,
    false_positives: usize,
    misses: usize,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.traces += other.traces;
        self.expected += other.expected;
        self.true_positives += other.true_positives;
        self.false_positives += other.false_positives;
        self.misses += other.misses;
    }

    fn row(&self, name: &str) -> String {
        let ratio = |num: usize, den: usize| {
            if den == 0 { "—".to_owned() } else { format!("{:.2}", num as f64 / den as f64) }
        };
        format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            self.traces,
            self.expected,
            self.true_positives,
            self.false_positives,
            self.misses,
            ratio(self.true_positives, self.true_positives + self.false_positives),
            ratio(self.true_positives, self.true_positives + self.misses)
        )
    }
}

#[test]
fn the_labelled_corpus_has_no_false_positive_and_no_miss() {
    let labels = load_labels();
    let mut files = BTreeSet::new();
    let root = corpus("");
    trace_files(&root, &root, &mut files);
    let labelled: BTreeSet<String> = labels.iter().map(|l| l.trace.clone()).collect();
    assert_eq!(labelled.len(), labels.len(), "labels.json names a trace twice");
    assert_eq!(files, labelled, "every trace in the corpus is labelled, and every label names a trace");

    let mut by_origin: BTreeMap<Origin, Tally> = BTreeMap::new();
    let mut wrong: Vec<String> = Vec::new();
    for label in &labels {
        assert!(!label.why.trim().is_empty(), "labels.json: {}: say why", label.trace);
        let must = kinds(&label.must, &label.trace);
        let must_not = kinds(&label.must_not, &label.trace);
        assert!(must.is_disjoint(&must_not), "labels.json: {}: a finding both in must and mustNot", label.trace);
        let d = diagnose(&label.trace);
        let found: BTreeSet<FindingKind> = d.findings.iter().map(|f| f.kind).collect();
        let tally = Tally {
            traces: 1,
            expected: must.len(),
            true_positives: found.intersection(&must).count(),
            false_positives: found.difference(&must).count(),
            misses: must.difference(&found).count(),
        };
        for kind in found.difference(&must) {
            let tempted = if must_not.contains(kind) { " (listed in mustNot)" } else { "" };
            wrong.push(format!("{}: false positive {}{tempted}", label.trace, kind.name()));
        }
        for kind in must.difference(&found) {
            wrong.push(format!("{}: missed {}", label.trace, kind.name()));
        }
        by_origin.entry(label.origin).or_default().add(tally);
    }

    let mut table = vec![
        "| origin | traces | expected findings | found (true) | false positives | missed | precision | recall |"
            .to_owned(),
        "|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    let mut all = Tally::default();
    for (origin, tally) in &by_origin {
        table.push(tally.row(&format!("{origin:?}").to_lowercase()));
        all.add(*tally);
    }
    table.push(all.row("**all**"));
    let table = table.join("\n");
    println!("{table}");
    assert!(wrong.is_empty(), "{} wrong:\n{}\n\n{table}", wrong.len(), wrong.join("\n"));

    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnose.md")).unwrap();
    assert!(docs.contains(&table), "docs/diagnose.md does not hold the corpus table; it is now:\n{table}");
}
