//! `faultlab report merge`: joins the reports of a sharded batch (`faultlab eval --shard I/N`) into the report
//! the whole batch would have written, optionally checked against an oracle.
//!
//! Exit codes: 0 merged (with `--oracle`: every verdict as expected); 2 an oracle disagreement or a bad argument;
//! 1 an input that cannot be read, is not an eval report, or does not fit with the others (the error names the
//! files).

use crate::cli::{MergeArgs, ReportArgs, ReportCommand};
use crate::eval;
use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use faultlab_eval::builtin;
use faultlab_eval::merge::{self, Input};
use faultlab_eval::oracle::{ExpectedVerdict, Oracle};
use faultlab_eval::report::{self, Report};
use faultlab_explore::report as explore_report;
use faultlab_wire::nesting;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

pub fn run(args: ReportArgs) -> Result<(), Failure> {
    match args.command {
        ReportCommand::Merge(args) => run_merge(args),
    }
}

/// Reads an eval report (`report.json`); exit 1 naming the file when it cannot be read or is not one.
pub fn read(path: &Path) -> Result<Report, Failure> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))
        .map_err(Failure::runtime)?;
    nesting::check(&text, nesting::Syntax::Json).map_err(|e| {
        Failure::runtime(anyhow!("{} is not a faultlab eval report (a report.json): {e}", path.display()))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::runtime(anyhow!("{} is not a faultlab eval report (a report.json): {e}", path.display())))
}

fn run_merge(args: MergeArgs) -> Result<(), Failure> {
    let markdown_path = args.out.with_extension("md");
    if markdown_path == args.out {
        return Err(Failure::usage(anyhow!(
            "{}: name the JSON report to write (e.g. merged.json); the Markdown report goes beside it as .md",
            args.out.display()
        )));
    }
    let oracle = match args.oracle.as_deref() {
        None => None,
        Some("builtin") => Some(builtin::oracle()),
        Some(path) => Some(eval::load_oracle(Path::new(path))?),
    };
    let folder = match args.out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create the output folder {}", folder.display()))
        .map_err(Failure::runtime)?;
    if is_explore(&args.inputs[0]) {
        return merge_explore(&args);
    }
    let mut inputs = Vec::new();
    for path in &args.inputs {
        let mut report = read(path)?;
        rebase_dirs(&mut report, path, folder);
        inputs.push(Input { file: path.display().to_string(), report });
    }
    let merged = merge::merge(inputs, args.force).map_err(Failure::runtime)?;
    let info = merged.merged.as_ref().expect("a merged report says what it merged");
    for note in &info.forced {
        errln!("faultlab: warning: merged with --force despite: {note}");
    }
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display())).map_err(Failure::runtime)
    };
    write(&args.out, serde_json::to_string_pretty(&merged).expect("plain data serialises"))?;
    write(&markdown_path, report::markdown(&merged))?;
    write(&args.out.with_extension("xml"), eval::junit(&merged))?;
    write(&args.out.with_extension("html"), faultlab_eval::html::render(&merged))?;
    let o = &merged.stats.overall;
    outln!(
        "merged {}: {}, pass rate {:.0}% ({}/{}; 95% CI {:.0}–{:.0}%); {:.1} s of wall time in all",
        crate::console::count(info.inputs.len(), "report", "reports"),
        crate::console::count(merged.runs.len(), "run", "runs"),
        o.rate * 100.0,
        o.passed,
        o.runs,
        o.low * 100.0,
        o.high * 100.0,
        info.wall_ms_sum as f64 / 1000.0
    );
    outln!(
        "reports: {}, {} and {}",
        args.out.display(),
        markdown_path.display(),
        args.out.with_extension("html").display()
    );
    let Some(oracle) = oracle else { return Ok(()) };
    // A merge does not know which tasks the batch had, only which have runs: the oracle's other tasks are named
    // as unchecked rather than failed, so a merge of some tasks can be checked. Within a task with runs, a
    // missing (task, agent) pair is still a disagreement.
    let tasks: BTreeSet<&str> = merged.runs.iter().map(|r| r.task.as_str()).collect();
    let (entries, unchecked): (Vec<ExpectedVerdict>, Vec<ExpectedVerdict>) =
        oracle.entries.into_iter().partition(|e| tasks.contains(e.task.as_str()));
    let unchecked: BTreeSet<String> = unchecked.into_iter().map(|e| e.task).collect();
    if !unchecked.is_empty() {
        let names: Vec<String> = unchecked.into_iter().collect();
        outln!("oracle: not checked, no runs in the merged report: {}", names.join(", "));
    }
    eval::check_oracle(Oracle { entries }, &merged.runs)
}

/// Whether a report is an exploration's (`faultlab explore`): its `kind` says so.
fn is_explore(path: &Path) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    nesting::check(&text, nesting::Syntax::Json).is_ok()
        && serde_json::from_str::<Kind>(&text).is_ok_and(|k| k.kind.as_deref() == Some(explore_report::KIND))
}

/// Joins the shard reports of one exploration (`faultlab explore --shard I/N`). The run folders stay where each
/// shard wrote them; their `dirs` are relative to each shard's report.
fn merge_explore(args: &MergeArgs) -> Result<(), Failure> {
    if args.oracle.is_some() {
        return Err(Failure::usage(anyhow!("--oracle checks eval reports; these are explore reports")));
    }
    let mut inputs = Vec::new();
    for path in &args.inputs {
        let not_one = |e: String| {
            Failure::runtime(anyhow!("{} is not a faultlab explore report like the first input: {e}", path.display()))
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))
            .map_err(Failure::runtime)?;
        nesting::check(&text, nesting::Syntax::Json).map_err(|e| not_one(e.to_string()))?;
        let report: explore_report::ExploreReport = serde_json::from_str(&text).map_err(|e| not_one(e.to_string()))?;
        inputs.push((path.display().to_string(), report));
    }
    let merged = explore_report::merge(inputs).map_err(|e| Failure::runtime(anyhow!(e)))?;
    crate::explore::write_reports(&args.out, &merged)?;
    crate::explore::print_summary(&merged);
    outln!(
        "merged {} into {}",
        crate::console::count(merged.merged.len(), "explore report", "explore reports"),
        args.out.display()
    );
    crate::explore::verdict(&merged, crate::cli::ExploreFailOn::Break)
}

/// Points each run's `dir` at the run's folder as seen from the merged report's folder, when it can be found.
///
/// `faultlab eval --out OUT` records `OUT/runs/TASK/AGENT/N`, relative to where it ran, and writes its report in
/// OUT; so the folder is looked for next to the input report by those last four parts, then (for an input that
/// is itself a merge) by `dir` relative to the input, then as `dir` says. A run whose folder is not found (a
/// report copied without its runs) keeps its `dir`.
fn rebase_dirs(report: &mut Report, input: &Path, out_folder: &Path) {
    let from = match input.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Ok(base) = out_folder.canonicalize() else { return };
    for run in &mut report.runs {
        let dir = Path::new(&run.dir);
        let parts: Vec<Component> = dir.components().collect();
        let mut candidates = Vec::new();
        if let [.., runs, task, agent, n] = parts[..]
            && runs.as_os_str() == "runs"
        {
            candidates.push(from.join("runs").join(task).join(agent).join(n));
        }
        if dir.is_relative() {
            candidates.push(from.join(dir));
        }
        candidates.push(dir.to_path_buf());
        if let Some(found) = candidates.into_iter().find(|c| c.is_dir()).and_then(|c| c.canonicalize().ok()) {
            run.dir = relative(&found, &base).display().to_string();
        }
    }
}

/// `path` relative to `base`; both absolute and canonical.
fn relative(path: &Path, base: &Path) -> PathBuf {
    let common = path.components().zip(base.components()).take_while(|(a, b)| a == b).count();
    let mut out: PathBuf = base.components().skip(common).map(|_| Component::ParentDir).collect();
    out.extend(path.components().skip(common));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_to_the_common_folder() {
        let r = |p: &str, b: &str| relative(Path::new(p), Path::new(b)).display().to_string();
        assert_eq!(r("/ci/shards/shard-1/runs/t/good/1", "/ci/merged"), "../shards/shard-1/runs/t/good/1");
        assert_eq!(r("/ci/runs/t/good/1", "/ci"), "runs/t/good/1");
        assert_eq!(r("/a/b", "/c/d"), "../../a/b");
    }
}
