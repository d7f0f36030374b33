//! JSON: totals, the thresholds used, and every trace with its findings (positions, evidence, counts).

use super::totals;
use crate::detect::Diagnosis;
use crate::thresholds::Thresholds;
use serde_json::{Map, Value, json};

pub fn render(diagnoses: &[Diagnosis], thresholds: &Thresholds) -> String {
    let by_kind: Map<String, Value> =
        totals(diagnoses).into_iter().map(|(k, n)| (k.name().to_owned(), n.into())).collect();
    let report = json!({
        "findings": by_kind.values().filter_map(Value::as_u64).sum::<u64>(),
        "byKind": by_kind,
        "thresholds": thresholds,
        "traces": diagnoses,
    });
    serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
}
