//! Helpers: the corpus folder and a one-call diagnosis.

use faultlab_diagnose::{Diagnosis, FindingKind, Thresholds};
use std::path::PathBuf;

pub fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(name)
}

/// Loads `tests/corpus/NAME` and diagnoses it, naming it `NAME` in reports.
pub fn diagnose_with(name: &str, thresholds: &Thresholds) -> Diagnosis {
    let trace = faultlab_diagnose::load(&corpus(name)).unwrap_or_else(|e| panic!("{e}"));
    faultlab_diagnose::diagnose(name, trace, thresholds)
}

pub fn diagnose(name: &str) -> Diagnosis {
    diagnose_with(name, &Thresholds::default())
}

/// Diagnoses trace text given inline.
pub fn diagnose_text(text: &str, thresholds: &Thresholds) -> Diagnosis {
    let trace = faultlab_diagnose::parse(text, None).unwrap_or_else(|e| panic!("{e}"));
    faultlab_diagnose::diagnose("inline.json", trace, thresholds)
}

pub fn kinds(diagnosis: &Diagnosis) -> Vec<FindingKind> {
    diagnosis.findings.iter().map(|f| f.kind).collect()
}
