//! What the lab itself concluded about the run a trace records, when the trace sits where the lab wrote it: a
//! `faultlab demo --out DIR` trace (`DIR/traces/NAME.json`, judged in `DIR/demo.json`) or an eval run's trajectory
//! (`EVAL/runs/TASK/AGENT/N/trajectory.jsonl`, graded in `EVAL/report.json`). A finding on a run the lab judged
//! correct then says why the clinic disagrees (see [`crate::FindingKind::disagreement`]).
//!
//! These reports are other commands' output, read leniently: a report that is missing, unreadable or shaped
//! otherwise only means the trace has no known verdict; it never makes the trace fail to load.

use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The lab's verdict on the run a trace records.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabVerdict {
    /// Whether the lab judged the run correct (demo PASS, eval verdict passed).
    pub passed: bool,
    /// Where the verdict was read: `demo.json, run "disconnect"`.
    pub source: String,
    /// What the lab said of the run, in its own words: the demo run's summary of what it expects, or the eval
    /// verdict's recovery detail.
    pub detail: String,
}

/// The lab's verdict on the run whose trace is at `path`, if a report beside it names the run.
pub fn find(path: &Path) -> Option<LabVerdict> {
    demo(path).or_else(|| eval(path))
}

/// `DIR/traces/NAME.json` with `DIR/demo.json` holding `results[]` with `run.name` NAME.
fn demo(path: &Path) -> Option<LabVerdict> {
    let name = path.file_stem()?.to_str()?;
    let traces = path.parent()?;
    if traces.file_name()? != "traces" {
        return None;
    }
    let report = read(&traces.parent()?.join("demo.json"))?;
    let result = report
        .get("results")?
        .as_array()?
        .iter()
        .find(|r| r.pointer("/run/name").and_then(Value::as_str) == Some(name))?;
    Some(LabVerdict {
        passed: result.get("passed")?.as_bool()?,
        source: format!("demo.json, run {name:?}"),
        detail: result.pointer("/run/summary").and_then(Value::as_str).unwrap_or_default().to_owned(),
    })
}

/// `EVAL/runs/.../trajectory.jsonl` with `EVAL/report.json` holding `runs[]` whose `dir` is the trajectory's folder.
fn eval(path: &Path) -> Option<LabVerdict> {
    let run = path.parent()?;
    // The run folder is EVAL/runs/TASK/AGENT/N: the report is four folders up.
    let root = run.ancestors().nth(4)?;
    let report = read(&root.join("report.json"))?;
    let entry = report
        .get("runs")?
        .as_array()?
        .iter()
        .find(|r| r.get("dir").and_then(Value::as_str).is_some_and(|dir| same_dir(&root.join(dir), run)))?;
    let passed = entry.pointer("/verdict/passed")?.as_bool()?;
    let who = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("?").to_owned();
    Some(LabVerdict {
        passed,
        source: format!("report.json, task {:?}, agent {:?}", who("task"), who("agent")),
        detail: entry.pointer("/verdict/recovery/detail").and_then(Value::as_str).unwrap_or_default().to_owned(),
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A report's JSON, or `None` (missing, unreadable, over the depth limit, not JSON).
fn read(path: &Path) -> Option<Value> {
    // A demo or eval report is at most a few MiB; anything far larger is not one.
    const MAX_BYTES: u64 = 64 << 20;
    if std::fs::metadata(path).ok()?.len() > MAX_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    faultlab_wire::nesting::check(&text, faultlab_wire::nesting::Syntax::Json).ok()?;
    serde_json::from_str(&text).ok()
}
