//! `faultlab replay`: run a recorded eval run again, the server's replies served from its recording, with the same
//! agent or another. The serving is the proxy's: `--replay` laid over the fresh server (see `eval::runner`).

use crate::cli::ReplayArgs;
use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use faultlab_eval::agent::ControlAgent;
use faultlab_eval::batch::{run_dir, run_specs};
use faultlab_eval::report::{Meta, Report};
use faultlab_eval::runner::{AgentSpec, RunRecord, RunSpec};
use faultlab_eval::task::Task;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub fn run(args: ReplayArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&args.report)
        .with_context(|| format!("cannot read report {}", args.report.display()))
        .map_err(Failure::runtime)?;
    faultlab_wire::nesting::check(&text, faultlab_wire::nesting::Syntax::Json)
        .map_err(|e| Failure::runtime(anyhow!("{} is not a faultlab eval report: {e}", args.report.display())))?;
    let recorded: Report = serde_json::from_str(&text)
        .map_err(|e| Failure::runtime(anyhow!("{} is not a faultlab eval report: {e}", args.report.display())))?;
    let base = args.report.parent().unwrap_or(Path::new("."));
    let chosen: Vec<&RunRecord> = recorded.runs.iter().filter(|r| selected(r, &args.run)).collect();
    if chosen.is_empty() {
        return Err(Failure::usage(anyhow!(
            "no run of {} matches --run {:?} (use TASK, TASK/AGENT or TASK/AGENT/REPEAT)",
            args.report.display(),
            args.run
        )));
    }
    let agents = |run: &RunRecord| -> Result<Vec<AgentSpec>, Failure> {
        match (&args.agent, args.controls) {
            (Some(line), _) => Ok(vec![AgentSpec::Command(faultlab_eval::runner::anchor(
                shlex::split(line).ok_or_else(|| Failure::usage(anyhow!("--agent {line:?}: not a command line")))?,
            ))]),
            (None, true) => Ok(ControlAgent::ALL.into_iter().map(AgentSpec::Control).collect()),
            (None, false) => Ok(vec![run.agent_spec.clone()]),
        }
    };
    let faultlab = std::env::current_exe().context("cannot find the faultlab executable").map_err(Failure::runtime)?;
    let mut specs = Vec::new();
    for run in chosen {
        let folder = base.join(&run.dir);
        let task_path = folder.join("task.json");
        let task: Task = std::fs::read_to_string(&task_path)
            .map_err(|e| e.to_string())
            .and_then(|t| Task::parse(&t, true))
            .map_err(|e| Failure::runtime(anyhow!("cannot read the recorded task {}: {e}", task_path.display())))?;
        let task = Arc::new(task);
        for agent in agents(run)? {
            let report_dir = run_dir(&task.id, &agent.label(), run.repeat);
            specs.push(RunSpec {
                task: task.clone(),
                dir: args.out.join(&report_dir),
                report_dir,
                agent,
                repeat: run.repeat,
                seed: run.seed,
                keep_workspace: args.keep,
                faultlab: faultlab.clone(),
                deadline_ms: args.deadline_ms,
                cassette: Some(folder.join("trajectory.jsonl")),
                // The recorded workspace: the replies served from the recording speak of its nonce.
                nonce: Some(run.nonce.clone()),
                nonce_key: String::new(),
                pass_env: Vec::new(),
                host_network: false,
                proxy: faultlab_eval::runner::ProxyPlace::from_env(),
                // The recording (every run's replies) is the answer key.
                hide: [base.join("runs"), args.report.clone()]
                    .iter()
                    .filter_map(|p| std::path::absolute(p).ok())
                    .collect(),
            });
        }
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the output folder {}", args.out.display()))
        .map_err(Failure::runtime)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    let started = Instant::now();
    let total = specs.len();
    errln!("faultlab: replay: {}", crate::console::count(total, "run", "runs"));
    let results = runtime.block_on(run_specs(specs, args.jobs, |done, total, _| {
        if done == total || done.is_multiple_of(10) {
            errln!("[{done}/{total}]");
        }
    }));
    let mut runs = Vec::new();
    for result in results {
        runs.push(result.map_err(|e| Failure::runtime(anyhow!("a replayed run could not happen: {e}")))?);
    }
    let meta = Meta {
        faultlab: env!("CARGO_PKG_VERSION").into(),
        seed: recorded.meta.seed,
        repeat: recorded.meta.repeat,
        jobs: args.jobs,
        wall_ms: started.elapsed().as_millis() as u64,
    };
    let report = Report::new(meta, runs);
    crate::eval::write_reports(&args.out, &report)?;
    for run in &report.runs {
        // A run whose set-up failed was not replayed at all: no verdict on the agent, so neither PASS nor FAIL.
        if let Some(error) = &run.error {
            outln!("NOT REPLAYED {} × {} #{}: {error}", run.task, run.agent, run.repeat + 1);
            continue;
        }
        let (recorded, live) = served(&args.out.join(&run.dir).join("replay.jsonl"));
        outln!(
            "{} {} × {} #{}: {} replies from the recording, {} live{}",
            if run.verdict.passed { "PASS" } else { "FAIL" },
            run.task,
            run.agent,
            run.repeat + 1,
            recorded,
            live,
            if live > 0 { " (the agent diverged from the recording)" } else { "" }
        );
    }
    outln!("reports: {}", args.out.join("report.md").display());
    let broken: Vec<&RunRecord> = report.runs.iter().filter(|r| r.error.is_some()).collect();
    if let Some(first) = broken.first() {
        return Err(Failure::runtime(anyhow!(
            "{} of {} could not be replayed; first: {} × {}: {}",
            broken.len(),
            crate::console::count(report.runs.len(), "run", "runs"),
            first.task,
            first.agent,
            first.error.as_deref().unwrap_or_default()
        )));
    }
    match report.runs.iter().filter(|r| !r.verdict.passed).count() {
        0 => Ok(()),
        n => Err(Failure::failed(anyhow!("{n} of {} replayed runs failed their grade", report.runs.len()))),
    }
}

/// `TASK`, `TASK/AGENT` or `TASK/AGENT/REPEAT` (1-based); no selector selects every run.
fn selected(run: &RunRecord, selectors: &[String]) -> bool {
    selectors.is_empty()
        || selectors.iter().any(|s| {
            let mut parts = s.split('/');
            parts.next() == Some(run.task.as_str())
                && parts.next().is_none_or(|a| a == run.agent)
                && parts.next().is_none_or(|r| r.parse::<u32>().ok() == Some(run.repeat + 1))
        })
}

/// (from the recording, live) counts in a replay log.
fn served(log: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let recorded = text.lines().filter(|l| l.contains(r#""from":"recorded""#)).count();
    (recorded, text.lines().count() - recorded)
}
