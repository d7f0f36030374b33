//! `faultlab explore`: for each (task, agent), a healthy run, then the fault variants synthesised from it; the
//! report; with `--controls`, the breaking classes of each control agent checked against the oracle.

use crate::cli::{ExploreArgs, ExploreFailOn};
use crate::eval;
use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use faultlab_eval::builtin;
use faultlab_eval::runner::{AgentSpec, RunSettings};
use faultlab_eval::task::Task;
use faultlab_explore::oracle::ExploreOracle;
use faultlab_explore::report::{self, ExploreReport, KIND, Meta};
use faultlab_explore::{Explore, FaultClass};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The task `--controls` explores without task files: a read then a write that must happen once. With it, the same
/// over HTTP (`builtin::explore_tasks`), where only the stream and session classes are explored: the other classes
/// act there as on the stdio task.
const CONTROLS_TASK: &str = "transport-timeout-after-write";

/// The built-in task with a model `--controls` also explores, at its model requests only (the `model` class): its
/// tool calls are the same read and write as [`CONTROLS_TASK`]'s, and every other class acts there as it does there.
const CONTROLS_MODEL_TASK: &str = "model-tool-call-cut-read";

pub fn run(args: ExploreArgs) -> Result<(), Failure> {
    let classes = classes(&args.classes)?;
    args.runs.check()?;
    if args.budget == Some(0) {
        return Err(Failure::usage(anyhow!("--budget must be at least 1 run")));
    }
    if args.runs.shard.is_some() && args.max_faults > 1 {
        return Err(Failure::usage(anyhow!(
            "--shard with --max-faults 2 or 3: sets of faults are chosen from every smaller set's verdict, which one \
             shard does not have; shard the singles (--max-faults 1), or explore sets on one machine"
        )));
    }
    let tasks: Vec<Arc<Task>> = match (args.tasks.is_empty(), args.controls) {
        (false, _) => {
            // Folders as eval reads them: their task files, in name order.
            let paths = crate::inputs::expand(&args.tasks, crate::inputs::YAML_OR_JSON).map_err(Failure::usage)?;
            let mut tasks = Vec::new();
            for path in &paths {
                tasks.push(Arc::new(Task::load(path).map_err(Failure::usage)?));
            }
            tasks
        }
        (true, true) => builtin::tasks()
            .into_iter()
            .filter(|t| t.id == CONTROLS_TASK || t.id == CONTROLS_MODEL_TASK)
            .chain(builtin::explore_tasks())
            .map(Arc::new)
            .collect(),
        (true, false) => builtin::tasks().into_iter().map(Arc::new).collect(),
    };
    let recorded = match &args.from_trajectory {
        None => None,
        Some(_) if tasks.len() != 1 || args.controls => {
            return Err(Failure::usage(anyhow!("--from-trajectory takes one task file and --agent")));
        }
        Some(path) => {
            let bad = |m: String| Failure::usage(anyhow!("--from-trajectory {}: {m}", path.display()));
            let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
            let trajectory = faultlab_engine::trajectory::Trajectory::parse(&text).map_err(|e| bad(e.to_string()))?;
            Some(faultlab_explore::search::recorded(&trajectory).map_err(bad)?)
        }
    };
    let mut oracle = args.controls.then(ExploreOracle::builtin);
    if let Some(all) = oracle.take() {
        let known = all.agents();
        let mut chosen = Vec::new();
        for name in &args.control {
            match known.iter().find(|a| a.name() == name.trim()) {
                Some(agent) => chosen.push(*agent),
                None => {
                    let names: Vec<&str> = known.iter().map(|a| a.name()).collect();
                    return Err(Failure::usage(anyhow!(
                        "--control {name}: not a control agent the explore oracle speaks of (one of: {})",
                        names.join(", ")
                    )));
                }
            }
        }
        // Narrowed by agent or by task file: only the entries of what is explored are checked.
        let agents = if chosen.is_empty() { known } else { chosen };
        let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
        oracle = Some(match args.control.is_empty() && args.tasks.is_empty() {
            true => all,
            false => all.only(&agents, &ids),
        });
    }
    let agents: Vec<AgentSpec> = match (&args.who.agent, &oracle) {
        (Some(line), None) => vec![eval::agent_spec(line, args.who.agent_name.as_deref())?],
        (None, Some(oracle)) => oracle.agents().into_iter().map(AgentSpec::Control).collect(),
        _ => return Err(Failure::usage(anyhow!("name the agent under test: --agent 'CMD ARGS' or --controls"))),
    };
    let settings = args.runs.settings(&args.out, &args.tasks, &["report.json", "report.md", "report.html", "repro"])?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    let started = Instant::now();
    // With --controls, a task the oracle speaks of is explored with the agents it has entries for there (the
    // HTTP twin leaves out the agents whose healthy run already fails on the stdio task: nothing to explore);
    // any other task with every agent, each then named as having no entry.
    let entered = |task: &Task, agent: &AgentSpec| match (&oracle, agent) {
        (Some(oracle), AgentSpec::Control(agent)) if oracle.entries.iter().any(|e| e.task == task.id) => {
            oracle.entries.iter().any(|e| e.task == task.id && e.agent == *agent)
        }
        _ => true,
    };
    let pairs: Vec<(Arc<Task>, AgentSpec)> = tasks
        .iter()
        .flat_map(|t| agents.iter().filter(|a| entered(t, a)).map(move |a| (t.clone(), a.clone())))
        .collect();
    // Many explorations (the controls) run side by side, one run each at a time, rather than one after the other
    // with `jobs` runs each: an exploration's variants are few, and its slowest run would hold the others back.
    let (side_by_side, jobs_each) = match pairs.len() >= settings.jobs {
        true => (settings.jobs, 1),
        false => (1, settings.jobs),
    };
    let explores: Vec<Explore> = pairs
        .into_iter()
        .map(|(task, agent)| {
            // The controls' task over HTTP is there for its streams and sessions (see CONTROLS_TASK).
            let http = args.controls && task.server.transport == faultlab_eval::task::Transport::Http;
            // The controls' task with a model is there for its model requests (see CONTROLS_MODEL_TASK).
            let model_only = args.controls && task.id == CONTROLS_MODEL_TASK;
            (task, agent, http, model_only)
        })
        .map(|(task, agent, http, model_only)| Explore {
            classes: {
                let mut classes: Vec<FaultClass> = classes
                    .iter()
                    .copied()
                    .filter(|c| !http || c.http_only())
                    .filter(|c| !model_only || *c == FaultClass::Model)
                    .collect();
                // A task with a model has the model hop's sites too: by default its class is tried there.
                if args.classes.is_empty() && task.model.is_some() {
                    classes.push(FaultClass::Model);
                }
                classes
            },
            task,
            agent,
            quick: args.quick,
            // The model task's initialize is the stdio task's: its model requests alone are explored there.
            protocol_sites: args.protocol_sites && !model_only,
            recorded: recorded.clone(),
            max_faults: args.max_faults,
            exhaustive: args.exhaustive,
            budget: args.budget,
            settings: RunSettings { jobs: jobs_each, ..settings.clone() },
        })
        .collect();
    let labels: Vec<String> = explores.iter().map(|e| format!("{} × {}", e.task.id, e.agent.label())).collect();
    let ended = faultlab_explore::Ended::default();
    let results = runtime.block_on(crate::signals::until_signal(faultlab_explore::run_all(
        explores,
        side_by_side,
        |line| errln!("faultlab: explore: {line}"),
        &ended,
    )));
    let results = match results {
        Ok(results) => results,
        Err(signal) => {
            // What ended is reported, marked incomplete; the explorations stopped half-way are not (a variant
            // map with holes would read as robustness that was never tried).
            let kept: Vec<_> = ended.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect();
            let count = kept.len();
            let mut report = explore_report(&args, started, kept);
            report.incomplete = Some(format!(
                "interrupted by {signal}; {count} of {} ended",
                crate::console::count(labels.len(), "exploration", "explorations")
            ));
            let kept = match write_reports(&args.out.join("report.json"), &report) {
                Ok(()) => format!(
                    "the runs under way were stopped; what ended ({}) is in {}, marked incomplete",
                    crate::console::count(count, "exploration", "explorations"),
                    args.out.join("report.md").display()
                ),
                Err(_) => "the runs under way were stopped; the report could not be written".into(),
            };
            return Err(crate::signals::interrupted("explore", signal, &kept));
        }
    };
    let results: Vec<Result<_, Failure>> = results
        .into_iter()
        .zip(labels)
        .map(|(found, label)| found.map_err(|e| Failure::runtime(anyhow!("{label}: {e}"))))
        .collect();
    let explorations = results.into_iter().collect::<Result<Vec<_>, Failure>>()?;
    let report = explore_report(&args, started, explorations);
    write_reports(&args.out.join("report.json"), &report)?;
    print_summary(&report);
    outln!("reports: {}", args.out.join("report.md").display());
    match oracle {
        Some(oracle) => check_oracle(&oracle, &report),
        None => verdict(&report, args.fail_on),
    }
}

/// The report of the explorations given, as this command's flags and wall time describe them.
fn explore_report(
    args: &ExploreArgs,
    started: Instant,
    explorations: Vec<faultlab_explore::Exploration>,
) -> ExploreReport {
    ExploreReport {
        kind: KIND.into(),
        meta: Meta {
            faultlab: env!("CARGO_PKG_VERSION").into(),
            repeat: args.runs.repeat,
            max_faults: args.max_faults,
            budget: args.budget,
            jobs: args.runs.jobs,
            wall_ms: started.elapsed().as_millis() as u64,
        },
        shard: args.runs.shard,
        merged: Vec::new(),
        incomplete: None,
        explorations,
    }
}

/// The exit status of a report: 1 when a healthy run failed or a run could not happen, 2 when a variant broke
/// the agent (or, with `--fail-on degrade`, degraded it), else 0.
pub fn verdict(report: &ExploreReport, fail_on: ExploreFailOn) -> Result<(), Failure> {
    let errors: Vec<String> = report
        .explorations
        .iter()
        .flat_map(|e| e.variants.iter().filter_map(|v| v.error.as_ref().map(|m| format!("{} {}: {m}", e.agent, v.id))))
        .collect();
    if let Some(first) = errors.first() {
        return Err(Failure::runtime(anyhow!(
            "{} could not happen; first: {first}",
            crate::console::count(errors.len(), "run", "runs")
        )));
    }
    if let Some(e) = report.explorations.iter().find(|e| !e.healthy.passed) {
        if let Some(error) = e.healthy.verdict.strip_prefix("error: ") {
            return Err(Failure::runtime(anyhow!(
                "{} × {}: the healthy run could not happen: {error}",
                e.task,
                e.agent
            )));
        }
        return Err(Failure::runtime(anyhow!(
            "{} × {}: the healthy run (no faults) already fails ({}): there is nothing to explore; see {}",
            e.task,
            e.agent,
            e.healthy.verdict,
            e.healthy.dirs.first().map(String::as_str).unwrap_or_default()
        )));
    }
    match (report.breaking(), report.degrading(), fail_on) {
        (0, 0, _) | (0, _, ExploreFailOn::Break) => Ok(()),
        (0, d, ExploreFailOn::Degrade) => Err(Failure::failed(anyhow!(
            "{} degraded the agent (an honest failure, nothing broken), and --fail-on degrade; reproducers in \
             report.md",
            crate::console::count(d, "variant", "variants")
        ))),
        (n, d, _) => Err(Failure::failed(anyhow!(
            "{} broke the agent ({d} more degraded it); reproducers in report.md",
            crate::console::count(n, "variant", "variants")
        ))),
    }
}

fn check_oracle(oracle: &ExploreOracle, report: &ExploreReport) -> Result<(), Failure> {
    let disagreements = oracle.check(&report.explorations);
    for d in &disagreements {
        outln!("explore oracle disagreement: {d}");
    }
    let n = oracle.entries.len();
    outln!("explore oracle: {} passed, {} failed", n.saturating_sub(disagreements.len()), disagreements.len());
    match disagreements.len() {
        0 => Ok(()),
        k => Err(Failure::failed(anyhow!(
            "{} with the explore oracle ({} checked)",
            crate::console::count(k, "disagreement", "disagreements"),
            crate::console::count(n, "entry", "entries")
        ))),
    }
}

fn classes(names: &[String]) -> Result<Vec<FaultClass>, Failure> {
    if names.is_empty() {
        return Ok(FaultClass::ALL.to_vec());
    }
    let mut classes = Vec::new();
    for name in names {
        let class = FaultClass::parse(name.trim()).ok_or_else(|| {
            let all = FaultClass::ALL.iter().chain([&FaultClass::Model]);
            let known: Vec<String> = all.map(|c| c.name()).collect();
            Failure::usage(anyhow!("--classes: unknown class {name:?}; the classes are {}", known.join(", ")))
        })?;
        if !classes.contains(&class) {
            classes.push(class);
        }
    }
    Ok(classes)
}

/// `path` (report.json), and report.md and report.html beside it.
pub fn write_reports(path: &Path, report: &ExploreReport) -> Result<(), Failure> {
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display())).map_err(Failure::runtime)
    };
    write(path, serde_json::to_string_pretty(report).expect("plain data serialises"))?;
    write(&path.with_extension("md"), report::markdown(report))?;
    write(&path.with_extension("html"), report::html(report))
}

pub fn print_summary(report: &ExploreReport) {
    for e in &report.explorations {
        if !e.healthy.passed {
            outln!("{} × {}: the healthy run fails ({}): nothing explored", e.task, e.agent, e.healthy.verdict);
            continue;
        }
        let broke = e.variants.iter().filter(|v| v.broke).count();
        let degraded = e.variants.iter().filter(|v| v.degraded).count();
        outln!(
            "{} × {}: {} calls, {} variants run, {} pruned, {} breaking, {} degrading",
            e.task,
            e.agent,
            e.calls.len(),
            e.variants.len(),
            e.pruned.len(),
            broke,
            degraded
        );
        for v in e.variants.iter().filter(|v| v.broke || v.degraded) {
            let word = if v.broke { "BREAKS" } else { "DEGRADES" };
            outln!("  {word} {} {}: {}", v.id, report::label(v), v.verdict);
        }
    }
    outln!("wall time {:.1} s", report.meta.wall_ms as f64 / 1000.0);
}
