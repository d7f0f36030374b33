//! `faultlab eval`: load the tasks, run every (task, agent, repeat) through the proxy, grade, report; with
//! `--controls`, check every verdict against the oracle.

use crate::cli::{EvalArgs, EvalReport, RunSettingsArgs};
use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use faultlab_eval::agent::ControlAgent;
use faultlab_eval::batch::Batch;
use faultlab_eval::builtin;
use faultlab_eval::merge::Shard;
use faultlab_eval::oracle::Oracle;
use faultlab_eval::report::{self, Meta, Report};
use faultlab_eval::runner::{AgentSpec, RunRecord, RunSettings};
use faultlab_eval::task::Task;
use faultlab_run::junit;
use std::collections::HashSet;
use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub fn run(args: EvalArgs) -> Result<(), Failure> {
    let tasks: Vec<Arc<Task>> = if args.tasks.is_empty() {
        builtin::tasks().into_iter().map(Arc::new).collect()
    } else {
        let mut tasks = Vec::new();
        let paths = crate::inputs::expand(&args.tasks, crate::inputs::YAML_OR_JSON).map_err(Failure::runtime)?;
        for path in &paths {
            tasks.push(Arc::new(Task::load(path).map_err(Failure::runtime)?));
        }
        tasks
    };
    let agents: Vec<AgentSpec> = match (&args.who.agent, args.controls) {
        (Some(line), false) => vec![agent_spec(line, args.who.agent_name.as_deref())?],
        (None, true) => ControlAgent::ALL.into_iter().map(AgentSpec::Control).collect(),
        _ => return Err(Failure::usage(anyhow!("name the agent under test: --agent 'CMD ARGS' or --controls"))),
    };
    args.runs.check()?;
    if args.controls && args.baseline.baseline.is_some() {
        return Err(Failure::usage(anyhow!("--baseline is for an agent under test; --controls checks the oracle")));
    }
    let baseline = crate::baseline::load(&args.baseline).map_err(Failure::usage)?;
    let oracle = match (&args.oracle, args.controls) {
        (Some(path), _) => Some(load_oracle(path)?),
        (None, true) => Some(builtin::oracle()),
        (None, false) => None,
    };
    let settings = args.runs.settings(&args.out, &args.tasks, &REPORTS)?;
    // The reports exist before any agent starts, so the sandbox hides them (a name that does not exist yet cannot
    // be covered, and an agent could make a FIFO there).
    for name in REPORTS {
        let _ = std::fs::OpenOptions::new().write(true).create_new(true).open(args.out.join(name));
    }
    let batch = Batch { tasks, agents, settings };
    // The (task, agent) pairs this batch, or this shard of it, is to run: the oracle entries it can answer. Taken
    // from the plan, not the results, so a pair whose run is missing still counts (as "no run").
    let pairs: HashSet<(String, String)> = batch.specs().iter().map(|s| (s.task.id.clone(), s.agent.label())).collect();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    let started = Instant::now();
    let progress = Progress::new(batch.specs().len(), args.runs.shard);
    let total = batch.specs().len();
    let ended = runtime.block_on(async {
        let signals = crate::signals::Signals::install();
        batch.run_until(|done, total, result| progress.update(done, total, result), signals.recv()).await
    });
    progress.finish();
    let (results, interrupted) = (ended.results, ended.stopped);
    let mut runs = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(run) => runs.push(run),
            Err(e) => errors.push(e),
        }
    }
    let meta = Meta {
        faultlab: env!("CARGO_PKG_VERSION").into(),
        seed: args.runs.seed.unwrap_or(0),
        repeat: args.runs.repeat,
        jobs: args.runs.jobs,
        wall_ms: started.elapsed().as_millis() as u64,
    };
    let mut report = Report { shard: args.runs.shard, ..Report::new(meta, runs) };
    if let Some(signal) = interrupted {
        return interrupted_report(&args.out, report, signal, total, oracle.as_ref());
    }
    // The oracle entries this batch (or shard) answers; their agreement heads every report.
    let oracle = oracle.map(|oracle| Oracle {
        entries: oracle
            .entries
            .into_iter()
            .filter(|e| pairs.contains(&(e.task.clone(), e.agent.name().into())))
            .collect(),
    });
    if let Some(oracle) = &oracle {
        let checked = oracle.entries.len();
        let as_expected = checked.saturating_sub(oracle.check(&report.runs).len());
        report.oracle = Some(report::OracleAgreement { checked, as_expected });
    }
    write_reports(&args.out, &report)?;
    match args.format {
        EvalReport::Console => {
            print_summary(&report, oracle.as_ref(), &args.out);
            outln!("reports: {}", args.out.join("report.md").display());
        }
        EvalReport::Junit => {
            out!("{}", junit(&report));
            errln!("faultlab: eval: reports in {}", args.out.display());
        }
    }
    if let Some(first) = errors.first() {
        for error in &errors {
            errln!("faultlab: a run could not happen: {error}");
        }
        return Err(Failure::runtime(anyhow!(
            "{} could not happen; first: {first}",
            crate::console::count(errors.len(), "run", "runs")
        )));
    }
    let broken: Vec<&RunRecord> = report.runs.iter().filter(|r| r.error.is_some()).collect();
    if let Some(first) = broken.first() {
        return Err(Failure::runtime(anyhow!(
            "{} could not be graded, the set-up failed; first: {} × {}: {}",
            crate::console::count(broken.len(), "run", "runs"),
            first.task,
            first.agent,
            first.error.as_deref().unwrap_or_default()
        )));
    }
    if let Some(oracle) = oracle {
        return check_oracle(oracle, &report.runs);
    }
    let ids: Vec<(String, bool)> =
        report.runs.iter().map(|r| (format!("{} × {}", r.task, r.agent), r.verdict.passed)).collect();
    if let Some(verdict) =
        crate::baseline::finish(&args.baseline, baseline.as_ref(), ids.iter().map(|(id, p)| (id.as_str(), *p)))
    {
        return verdict;
    }
    let failed = report.runs.iter().filter(|r| !r.verdict.passed).count();
    match failed {
        0 => Ok(()),
        n => Err(Failure::failed(anyhow!("{n} of {} runs failed their grade", report.runs.len()))),
    }
}

/// A batch stopped by a signal: the runs that ended are reported, marked incomplete, with no oracle or baseline
/// verdict (the runs it would need never ended); exit 130 (SIGINT) or 143 (SIGTERM).
fn interrupted_report(
    out: &Path,
    mut report: Report,
    signal: &str,
    total: usize,
    oracle: Option<&Oracle>,
) -> Result<(), Failure> {
    let ended = report.runs.len();
    report.incomplete = Some(format!("interrupted by {signal}: {ended} of {total} runs ended"));
    write_reports(out, &report)?;
    print_summary(&report, oracle, out);
    errln!(
        "faultlab: eval: interrupted by {signal}: no run started after it; the {ended} of {total} runs that ended are \
         reported in {} (marked incomplete); the runs under way were stopped and their folders and the temporary \
         folders removed",
        out.display()
    );
    let error = anyhow!("interrupted by {signal}");
    Err(Failure { exit: crate::exit::Exit::Interrupted { sigterm: signal == "SIGTERM" }, error, silent: true })
}

/// The agent of `--agent` (and `--agent-name`): its words split like a shell would, files made absolute.
impl RunSettingsArgs {
    /// Refuses what cannot run: no repeat, no job.
    pub fn check(&self) -> Result<(), Failure> {
        match self.repeat == 0 || self.jobs == 0 {
            true => Err(Failure::usage(anyhow!("--repeat and --jobs must be at least 1"))),
            false => Ok(()),
        }
    }

    /// The settings of every run: `out` made and absolute (the agents run in their own scratch folders and find
    /// their files by it); the task files (with their plans) and the `reports` of an earlier batch in `out` hidden
    /// from the agents.
    pub fn settings(&self, out: &Path, tasks: &[std::path::PathBuf], reports: &[&str]) -> Result<RunSettings, Failure> {
        std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create the output folder {}", out.display()))
            .map_err(Failure::runtime)?;
        let faultlab =
            std::env::current_exe().context("cannot find the faultlab executable").map_err(Failure::runtime)?;
        let absolute = std::path::absolute(out)
            .with_context(|| format!("cannot resolve the output folder {}", out.display()))
            .map_err(Failure::runtime)?;
        Ok(RunSettings {
            repeat: self.repeat,
            seed: self.seed,
            jobs: self.jobs,
            keep_workspaces: self.keep,
            shard: self.shard.map(Shard::zero_based),
            deadline_ms: self.deadline_ms,
            nonce_key: self.nonce_key.clone().unwrap_or_else(faultlab_eval::runner::random_key),
            pass_env: self.pass_env.clone(),
            host_network: self.network == crate::cli::AgentNetwork::Host,
            hide: tasks
                .iter()
                .cloned()
                .chain(reports.iter().map(|f| out.join(f)))
                .filter_map(|p| std::path::absolute(p).ok())
                .collect(),
            ..RunSettings::new(absolute, faultlab)
        })
    }
}

pub fn agent_spec(line: &str, name: Option<&str>) -> Result<AgentSpec, Failure> {
    let words = shlex::split(line)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| Failure::usage(anyhow!("--agent {line:?}: not a command line (check the quotes)")))?;
    let anchored = faultlab_eval::runner::anchor(words.clone());
    if anchored != words {
        // Said once, so a path made absolute is never a surprise; the reports keep the command as started.
        errln!(
            "faultlab: --agent runs as: {}",
            shlex::try_join(anchored.iter().map(String::as_str)).unwrap_or_default()
        );
    }
    let words = anchored;
    match name {
        Some(name) if !valid_name(name) => Err(Failure::usage(anyhow!(
            "--agent-name {name:?}: use letters, digits, '.', '_' and '-' (it names a folder)"
        ))),
        Some(name) => Ok(AgentSpec::Named { name: name.into(), command: words }),
        None => Ok(AgentSpec::Command(words)),
    }
}

/// An agent name is a folder name in the run tree.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Checks the runs against the oracle's entries, printing each disagreement; exit 2 on any.
pub fn check_oracle(oracle: Oracle, runs: &[RunRecord]) -> Result<(), Failure> {
    let disagreements = oracle.check(runs);
    if disagreements.is_empty() {
        outln!("oracle: all {} verdicts as expected: the grader tells every control agent apart", oracle.entries.len());
        outln!("oracle: {} passed, 0 failed", oracle.entries.len());
        return Ok(());
    }
    for d in &disagreements {
        outln!("oracle disagreement: {} × {}: expected {}, got {}", d.task, d.agent, d.expected, d.got);
    }
    // The closing line test runners read: each entry is one verdict checked.
    outln!(
        "oracle: {} passed, {} failed",
        oracle.entries.len().saturating_sub(disagreements.len()),
        disagreements.len()
    );
    Err(Failure::failed(anyhow!(
        "{} with the oracle ({} checked)",
        crate::console::count(disagreements.len(), "disagreement", "disagreements"),
        crate::console::count(oracle.entries.len(), "entry", "entries")
    )))
}

/// Reads an oracle file (exit 1 naming the file when it cannot be read or parsed).
pub fn load_oracle(path: &Path) -> Result<Oracle, Failure> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read oracle file {}", path.display()))
        .map_err(Failure::runtime)?;
    Oracle::parse(&text).map_err(|e| Failure::runtime(anyhow!("oracle file {} is invalid: {e}", path.display())))
}

/// The reports eval writes in `out`.
pub const REPORTS: [&str; 4] = ["report.json", "report.md", "report.html", "junit.xml"];

/// report.json, report.md, junit.xml and report.html in `out`, each written to a new file and renamed into place:
/// whatever an agent left at a report's name (a FIFO, a link) is replaced, never opened.
pub fn write_reports(out: &std::path::Path, report: &Report) -> Result<(), Failure> {
    let write = |name: &str, text: String| {
        let path = out.join(name);
        faultlab_eval::guard::write_replacing(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(Failure::runtime)
    };
    write("report.json", serde_json::to_string_pretty(report).expect("plain data serialises"))?;
    write("report.md", report::markdown(report))?;
    write("junit.xml", junit(report))?;
    write("report.html", faultlab_eval::html::render(report))
}

/// JUnit XML: a test case per run, named `TASK × AGENT #REPEAT`; a failed grade is a `<failure>` naming the
/// layers that failed and why, a run whose set-up failed an `<error>`.
pub fn junit(report: &Report) -> String {
    let cases: Vec<junit::Case> = report
        .runs
        .iter()
        .map(|run| {
            let v = &run.verdict;
            let failure = match &run.error {
                Some(error) => Some((format!("the run could not happen: {error}"), error.clone())),
                None if v.passed => None,
                None => {
                    let layers = [("outcome", &v.outcome), ("safety", &v.safety), ("side_effects", &v.side_effects)];
                    let mut failing: Vec<&str> = layers.iter().filter(|(_, l)| !l.passed).map(|(n, _)| *n).collect();
                    let mut details: Vec<String> = layers
                        .iter()
                        .flat_map(|(name, layer)| layer.checks.iter().filter(|c| !c.passed).map(move |c| (name, c)))
                        .map(|(name, c)| format!("{name}: {}: {}", c.name, c.detail))
                        .collect();
                    if !v.recovery.passed {
                        failing.push("recovery");
                        details.push(format!("recovery: {}", v.recovery.detail));
                    }
                    Some((format!("failed its grade: {}", failing.join(", ")), details.join("\n")))
                }
            };
            junit::Case {
                name: format!("{} × {} #{}", run.task, run.agent, run.repeat + 1),
                classname: format!("faultlab.eval.{}", run.task),
                seconds: run.duration_ms as f64 / 1000.0,
                failure,
                error: run.error.is_some(),
                skipped: None,
                system_out: Some(format!("run folder: {}", run.dir)),
            }
        })
        .collect();
    junit::render("faultlab eval", &cases)
}

/// One line per run; with an oracle, a control agent's failure it calls for reads EXPECTED, not FAIL.
fn print_summary(report: &Report, oracle: Option<&Oracle>, out: &Path) {
    for run in &report.runs {
        let v = &run.verdict;
        let outcome = serde_json::to_value(v.recovery.outcome).unwrap_or_default();
        let strategy = serde_json::to_value(v.recovery.strategy).unwrap_or_default();
        if let Some(error) = &run.error {
            outln!("ERROR {} × {} #{}: {error}", run.task, run.agent, run.repeat + 1);
            continue;
        }
        outln!(
            "{} {} × {} #{}: {} → {} ({} calls)",
            faultlab_eval::oracle::verdict_word(v.passed, oracle.and_then(|o| o.entry(&run.task, &run.agent))),
            run.task,
            run.agent,
            run.repeat + 1,
            strategy.as_str().unwrap_or_default(),
            outcome.as_str().unwrap_or_default(),
            v.efficiency.tool_calls
        );
        if let Some(why) = not_started(run, out) {
            outln!("{why}");
        }
    }
    let o = &report.stats.overall;
    let rate = format!(
        "pass rate {:.0}% ({}/{}; 95% CI {:.0}–{:.0}%)",
        o.rate * 100.0,
        o.passed,
        o.runs,
        o.low * 100.0,
        o.high * 100.0
    );
    let seconds = report.meta.wall_ms as f64 / 1000.0;
    match &report.oracle {
        // Control agents fail on purpose: the oracle's agreement is the verdict, the rate a detail.
        Some(agreement) => {
            outln!("{} ({rate}: the control agents fail on purpose) in {seconds:.1} s", agreement.summary())
        }
        None => outln!("{rate} in {seconds:.1} s"),
    }
}

/// Lines of an agent's log shown when it did nothing (10): a Python traceback's end is within them.
const LOG_HEAD_LINES: usize = 10;

/// For an agent that made no tool call and wrote no claim (most often one that could not start: a missing
/// module, a wrong path), why, and the first lines of its agent.log; the grade alone only says it failed.
fn not_started(run: &RunRecord, out: &Path) -> Option<String> {
    use faultlab_eval::evidence::AgentEnd;
    if !run.calls.is_empty() || run.claim.is_some() {
        return None;
    }
    let end = match run.end {
        AgentEnd::Exited { code: Some(code) } => format!("it exited with code {code}"),
        AgentEnd::Exited { code: None } => "a signal ended it".to_owned(),
        AgentEnd::KilledAtDeadline => "it was still running at the deadline".to_owned(),
        AgentEnd::FailedToStart => return None,
    };
    let log = out.join(&run.dir).join("agent.log");
    // Its start only: an agent's log can be any size.
    let mut head = Vec::new();
    if let Ok(file) = faultlab_eval::guard::open_regular(&log) {
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, 64 * 1024), &mut head);
    }
    let text = String::from_utf8_lossy(&head);
    let lines: Vec<&str> = text.lines().collect();
    let mut why = format!("  the agent made no tool call and wrote no claim ({end}); {}", log.display());
    match lines.len() {
        0 => why.push_str(" is empty"),
        n => {
            why.push_str(" begins:");
            for line in lines.iter().take(LOG_HEAD_LINES) {
                why.push_str("\n    ");
                // A line of an agent's own making can be any length; 300 characters say what it is.
                why.extend(line.chars().take(300));
            }
            if n > LOG_HEAD_LINES {
                why.push_str(&format!("\n    … ({} more lines)", n - LOG_HEAD_LINES));
            }
        }
    }
    Some(why)
}

/// Progress on stderr: an `indicatif` bar on a terminal, one line per ten finished runs otherwise (a log has no
/// use for a bar redrawn in place).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(total: usize, shard: Option<Shard>) -> Self {
        match shard {
            Some(shard) => errln!("faultlab: eval: shard {shard}: {}", crate::console::count(total, "run", "runs")),
            None => errln!("faultlab: eval: {}", crate::console::count(total, "run", "runs")),
        }
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} ({eta} left)")
                .expect("a valid template");
            indicatif::ProgressBar::new(total as u64).with_style(style)
        });
        Self { bar }
    }

    fn update<T, E: std::fmt::Display>(&self, done: usize, total: usize, result: &Result<T, E>) {
        match (&self.bar, result) {
            (Some(bar), Err(e)) => {
                bar.println(format!("[{done}/{total}] could not run: {e}"));
                bar.set_position(done as u64);
            }
            (Some(bar), Ok(_)) => bar.set_position(done as u64),
            (None, Err(e)) => errln!("[{done}/{total}] could not run: {e}"),
            (None, Ok(_)) if done.is_multiple_of(10) || done == total => errln!("[{done}/{total}]"),
            (None, Ok(_)) => {}
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
