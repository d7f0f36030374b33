//! `faultlab demo`: the lab on built-in parts. The reference client meets `faultlab serve` in each `lab_probe`
//! scenario; the console gets a summary, the output folder gets JSON, JUnit XML and OpenAI-message traces.

use crate::builtin::Builtin;
use crate::cli::DemoArgs;
use crate::exit::Failure;
use anyhow::Context as _;
use faultlab_client::Target;
use faultlab_eval::runner::RunSettings;
use faultlab_run::junit;
use faultlab_run::probe::{self, ProbeResult};
use faultlab_run::runner::ScenarioReport;
use faultlab_run::scenario::{ProtocolVersion, Scenario};
use serde_json::json;
use std::path::Path;

mod index;

/// The built-in scenario suite: example scenarios compiled into the binary, at least one calling each tool of
/// `faultlab serve` that arms a catalogue fault (a test holds it to that).
const SUITE: &[(&str, &str)] = &[
    ("ask-elicitation-accept.yaml", include_str!("../scenarios/ask-elicitation-accept.yaml")),
    ("delay.yaml", include_str!("../scenarios/delay.yaml")),
    ("disconnect-http.yaml", include_str!("../scenarios/disconnect-http.yaml")),
    ("disconnect-stdio.yaml", include_str!("../scenarios/disconnect-stdio.yaml")),
    ("duplicate-response.yaml", include_str!("../scenarios/duplicate-response.yaml")),
    ("framing.yaml", include_str!("../scenarios/framing.yaml")),
    ("hang.yaml", include_str!("../scenarios/hang.yaml")),
    ("html-page.yaml", include_str!("../scenarios/html-page.yaml")),
    ("http-status.yaml", include_str!("../scenarios/http-status.yaml")),
    ("input-rounds.yaml", include_str!("../scenarios/input-rounds.yaml")),
    ("list-changed-storm.yaml", include_str!("../scenarios/list-changed-storm.yaml")),
    ("malformed-message.yaml", include_str!("../scenarios/malformed-message.yaml")),
    ("missing-id.yaml", include_str!("../scenarios/missing-id.yaml")),
    ("non-json-line.yaml", include_str!("../scenarios/non-json-line.yaml")),
    ("not-jsonrpc.yaml", include_str!("../scenarios/not-jsonrpc.yaml")),
    ("oversized-response.yaml", include_str!("../scenarios/oversized-response.yaml")),
    ("ping.yaml", include_str!("../scenarios/ping.yaml")),
    ("progress-after-result.yaml", include_str!("../scenarios/progress-after-result.yaml")),
    ("progress-stream.yaml", include_str!("../scenarios/progress-stream.yaml")),
    ("protocol-error.yaml", include_str!("../scenarios/protocol-error.yaml")),
    ("protocol-ping-liveness.yaml", include_str!("../scenarios/protocol-ping-liveness.yaml")),
    ("request-after-result.yaml", include_str!("../scenarios/request-after-result.yaml")),
    ("response-after-cancellation.yaml", include_str!("../scenarios/response-after-cancellation.yaml")),
    ("session-lifecycle.yaml", include_str!("../scenarios/session-lifecycle.yaml")),
    ("session-loss.yaml", include_str!("../scenarios/session-loss.yaml")),
    ("split-response.yaml", include_str!("../scenarios/split-response.yaml")),
    ("stream-cut-again.yaml", include_str!("../scenarios/stream-cut-again.yaml")),
    ("stream-cut-resume.yaml", include_str!("../scenarios/stream-cut-resume.yaml")),
    ("stream-empty-event-id.yaml", include_str!("../scenarios/stream-empty-event-id.yaml")),
    ("stream-lost.yaml", include_str!("../scenarios/stream-lost.yaml")),
    ("stream-replay-duplicate.yaml", include_str!("../scenarios/stream-replay-duplicate.yaml")),
    ("stream-replay-foreign.yaml", include_str!("../scenarios/stream-replay-foreign.yaml")),
    ("stream-resume-refused.yaml", include_str!("../scenarios/stream-resume-refused.yaml")),
    ("stream-retry.yaml", include_str!("../scenarios/stream-retry.yaml")),
    ("surface-drift-removed.yaml", include_str!("../scenarios/surface-drift-removed.yaml")),
    ("surface-pagination-loops.yaml", include_str!("../scenarios/surface-pagination-loops.yaml")),
    ("surface-structured-output.yaml", include_str!("../scenarios/surface-structured-output.yaml")),
    ("task-completed.yaml", include_str!("../scenarios/task-completed.yaml")),
    ("truncated-response.yaml", include_str!("../scenarios/truncated-response.yaml")),
    ("wrong-id.yaml", include_str!("../scenarios/wrong-id.yaml")),
];

/// The demo stopped by `signal`.
fn stopped(signal: &'static str) -> Failure {
    crate::signals::interrupted("demo", signal, "the reports of the parts that ended are in --out")
}

/// One part of the demo run to its end on `runtime`: a signal stops the demo (`stopped`), a part that could not
/// run ends it as such.
fn part<T>(runtime: &tokio::runtime::Runtime, work: impl Future<Output = anyhow::Result<T>>) -> Result<T, Failure> {
    runtime.block_on(crate::signals::until_signal(work)).map_err(stopped)?.map_err(Failure::runtime)
}

pub fn run(args: DemoArgs) -> Result<(), Failure> {
    let exe = std::env::current_exe().context("cannot find the faultlab executable").map_err(Failure::runtime)?;
    let exe = exe.to_string_lossy().into_owned();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    outln!("MCP Failure Lab — demo\n");
    outln!("The reference client (retries only tool errors, at most 5 attempts) against `faultlab serve`:\n");
    let results = runtime
        .block_on(crate::signals::until_signal(async {
            let mut results = Vec::new();
            for plan in probe::runs() {
                let result = probe::execute(&exe, &plan).await;
                print_result(&result);
                results.push(result);
            }
            results
        }))
        .map_err(stopped)?;
    write_reports(&args.out, &results).map_err(Failure::runtime)?;
    let passed = results.iter().filter(|r| r.passed).count();
    outln!("\n{passed} of {} runs behaved as a robust client should.", results.len());

    outln!(
        "\nThe built-in scenario suite ({} scenarios, every fault tool at least once) over every transport:\n",
        SUITE.len()
    );
    let suite: Vec<Scenario> = SUITE
        .iter()
        .map(|(name, text)| Scenario::parse(text, false).map_err(|e| anyhow::anyhow!("built-in scenario {name}: {e}")))
        .collect::<Result<_, _>>()
        .map_err(Failure::runtime)?;
    let reports = part(&runtime, run_suite(&suite, &exe))?;
    crate::run::write_outputs(&args.out.join("suite"), &reports).map_err(Failure::runtime)?;
    let suite_failed = reports.iter().filter(|r| !r.passed).count();

    outln!("\nAgents graded on a sandboxed task, through `faultlab proxy` to the workspace server: the first write is");
    outln!("executed, then its reply is held until the agent gives up (mode: after, timeout):\n");
    let agreement = part(&runtime, eval_slice(&args.out.join("eval"), &exe))?;
    let disagreements = agreement.checked - agreement.as_expected;
    outln!("\nThe faults the blind retrier does not survive, found by `faultlab explore` from its healthy run (an");
    outln!("error, a timeout after execution and a malformed reply at each of its tool calls). Its BREAKS are the");
    outln!("point: a retried write that had already been executed is written twice, which is its defect:\n");
    let explored = part(&runtime, explore_slice(&args.out.join("explore"), &exe))?;
    // One line the whole demo comes to: each part against what it should show.
    let mut wrong = Vec::new();
    if passed < results.len() {
        wrong.push(format!("{} of {} probe runs not robust", results.len() - passed, results.len()));
    }
    if suite_failed > 0 {
        wrong.push(format!("{suite_failed} of {} suite scenario runs failed", reports.len()));
    }
    if disagreements > 0 {
        wrong.push(format!("eval: {}", agreement.summary()));
    }
    if !explored.is_empty() {
        wrong.push("the exploration differs from its oracle".to_owned());
    }
    let verdict = if wrong.is_empty() {
        format!(
            "Verdict: as expected ({passed} of {} probe runs robust, {} of {} suite scenario runs passed, eval {}, \
             the exploration's breaks as its oracle says).",
            results.len(),
            reports.len(),
            reports.len(),
            agreement.summary()
        )
    } else {
        format!("Verdict: NOT as expected: {}.", wrong.join("; "))
    };
    index::write(&args.out, &verdict).map_err(Failure::runtime)?;
    outln!(
        "\nReports: {0}/index.html links them all: {0}/demo.json, {0}/junit.xml, {0}/traces/, {0}/suite/, \
         {0}/eval/report.html and {0}/explore/report.html",
        args.out.display()
    );
    outln!("\n{verdict}");
    if disagreements > 0 {
        return Err(Failure::failed(anyhow::anyhow!(
            "{} from the oracle",
            if disagreements == 1 {
                "1 eval verdict differs".to_owned()
            } else {
                format!("{disagreements} eval verdicts differ")
            }
        )));
    }
    if !explored.is_empty() {
        return Err(Failure::failed(anyhow::anyhow!(
            "the exploration differs from its oracle: {}",
            explored.join("; ")
        )));
    }
    if passed == results.len() && suite_failed == 0 {
        Ok(())
    } else if suite_failed > 0 {
        Err(Failure::failed(anyhow::anyhow!(
            "{} failed",
            crate::console::count(suite_failed, "suite scenario run", "suite scenario runs")
        )))
    } else {
        Err(Failure::failed(anyhow::anyhow!(
            "{} of {} runs did not behave as expected",
            results.len() - passed,
            results.len()
        )))
    }
}

/// Four control agents on the idempotency task; returns how their verdicts agree with the oracle.
async fn eval_slice(out: &Path, exe: &str) -> anyhow::Result<faultlab_eval::report::OracleAgreement> {
    let started = std::time::Instant::now();
    use faultlab_eval::agent::ControlAgent;
    use faultlab_eval::runner::AgentSpec;
    let task = faultlab_eval::builtin::tasks()
        .into_iter()
        .find(|t| t.id == "transport-timeout-after-write")
        .context("the built-in idempotency task is missing")?;
    let agents = [ControlAgent::Good, ControlAgent::BlindRetrier, ControlAgent::Hallucinating, ControlAgent::GivesUp];
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let batch = faultlab_eval::batch::Batch {
        tasks: vec![std::sync::Arc::new(task)],
        agents: agents.into_iter().map(AgentSpec::Control).collect(),
        settings: RunSettings { jobs: 2, ..RunSettings::new(std::path::absolute(out)?, exe.into()) },
    };
    let mut runs = Vec::new();
    for result in batch.run(|_, _, _| {}).await {
        runs.push(result?);
    }
    let oracle = faultlab_eval::builtin::oracle();
    for run in &runs {
        let v = &run.verdict;
        let failing: Vec<&str> = [&v.outcome, &v.safety, &v.side_effects]
            .iter()
            .flat_map(|layer| layer.checks.iter().filter(|c| !c.passed).map(|c| c.detail.as_str()))
            .take(1)
            .collect();
        outln!(
            "  {:<8}  {:<14} {} → {}{}",
            faultlab_eval::oracle::verdict_word(v.passed, oracle.entry(&run.task, &run.agent)),
            run.agent,
            serde_json::to_value(v.recovery.strategy)?.as_str().unwrap_or_default(),
            serde_json::to_value(v.recovery.outcome)?.as_str().unwrap_or_default(),
            match (failing.first(), v.recovery.passed) {
                (Some(detail), _) => format!(": {detail}"),
                (None, false) => format!(
                    ": the task expects {}",
                    serde_json::to_value(v.recovery.expected)?.as_str().unwrap_or_default()
                ),
                (None, true) => String::new(),
            }
        );
    }
    let mut report = faultlab_eval::report::Report::new(
        faultlab_eval::report::Meta {
            faultlab: env!("CARGO_PKG_VERSION").into(),
            seed: 0,
            repeat: 1,
            jobs: 2,
            wall_ms: started.elapsed().as_millis() as u64,
        },
        runs,
    );
    let mine = faultlab_eval::oracle::Oracle {
        entries: oracle
            .entries
            .into_iter()
            .filter(|e| e.task == "transport-timeout-after-write" && agents.contains(&e.agent))
            .collect(),
    };
    let disagreements = mine.check(&report.runs).len();
    let checked = mine.entries.len();
    let agreement =
        faultlab_eval::report::OracleAgreement { checked, as_expected: checked.saturating_sub(disagreements) };
    report.oracle = Some(agreement);
    std::fs::write(out.join("report.json"), serde_json::to_string_pretty(&report)?)?;
    std::fs::write(out.join("report.html"), faultlab_eval::html::render(&report))?;
    Ok(agreement)
}

/// A short exploration of the blind retrier on the idempotency task (three classes); returns its disagreements
/// with the explore oracle.
async fn explore_slice(out: &Path, exe: &str) -> anyhow::Result<Vec<String>> {
    let started = std::time::Instant::now();
    use faultlab_eval::agent::ControlAgent;
    use faultlab_explore::{Explore, FaultClass, oracle::ExploreOracle, report};
    let task = faultlab_eval::builtin::tasks()
        .into_iter()
        .find(|t| t.id == "transport-timeout-after-write")
        .context("the built-in idempotency task is missing")?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let explore = Explore {
        task: std::sync::Arc::new(task),
        agent: faultlab_eval::runner::AgentSpec::Control(ControlAgent::BlindRetrier),
        classes: vec![FaultClass::Error, FaultClass::TimeoutAfter, FaultClass::Malformed],
        // The demo shows the classes, one fault each: every fault of each would triple its runs.
        quick: true,
        protocol_sites: false,
        recorded: None,
        max_faults: 1,
        exhaustive: false,
        budget: None,
        settings: RunSettings { jobs: 2, ..RunSettings::new(std::path::absolute(out)?, exe.into()) },
    };
    let ended = faultlab_explore::Ended::default();
    let exploration = faultlab_explore::run_all(vec![explore], 1, |_| {}, &ended).await.remove(0)?;
    let report = report::ExploreReport {
        kind: report::KIND.into(),
        meta: report::Meta {
            faultlab: env!("CARGO_PKG_VERSION").into(),
            repeat: 1,
            max_faults: 1,
            budget: None,
            jobs: 2,
            wall_ms: started.elapsed().as_millis() as u64,
        },
        shard: None,
        merged: Vec::new(),
        incomplete: None,
        explorations: vec![exploration],
    };
    crate::explore::write_reports(&out.join("report.json"), &report).map_err(|f| f.error)?;
    let e = &report.explorations[0];
    for v in &e.variants {
        let word = match (v.broke, v.degraded) {
            (true, _) => "BREAKS  ",
            (false, true) => "DEGRADES",
            (false, false) => "pass    ",
        };
        outln!("  {word}  {}: {}", report::label(v), v.verdict);
    }
    let oracle = ExploreOracle::builtin();
    let mine = ExploreOracle {
        entries: oracle
            .entries
            .into_iter()
            .filter(|x| x.agent == ControlAgent::BlindRetrier && x.task == e.task)
            .collect(),
    };
    Ok(mine.check(&report.explorations))
}

fn print_result(result: &ProbeResult) {
    let last = result.attempts.last();
    let name = |v: serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let outcome = last.map_or("no attempt".to_owned(), |o| match o.error_kind {
        Some(kind) => format!("{} ({})", name(json!(o.outcome)), name(json!(kind))),
        None => name(json!(o.outcome)),
    });
    let verdict = if result.passed { "PASS" } else { "FAIL" };
    let attempts = result.attempts.len();
    outln!(
        "  {verdict}  {:<22} {:<28} {attempts} attempt{}  — {}",
        result.run.name,
        outcome,
        if attempts == 1 { " " } else { "s" },
        result.run.summary
    );
    for failure in &result.failures {
        outln!("        {failure}");
    }
}

fn write_reports(out: &Path, results: &[ProbeResult]) -> anyhow::Result<()> {
    let traces = out.join("traces");
    std::fs::create_dir_all(&traces).with_context(|| format!("cannot create the output folder {}", out.display()))?;
    let report = json!({
        "passed": results.iter().all(|r| r.passed),
        "results": results,
    });
    std::fs::write(out.join("demo.json"), serde_json::to_string_pretty(&report)? + "\n")?;
    for result in results {
        std::fs::write(
            traces.join(format!("{}.json", result.run.name)),
            serde_json::to_string_pretty(&result.trace)? + "\n",
        )?;
    }
    let cases: Vec<junit::Case> = results
        .iter()
        .map(|r| junit::Case {
            name: r.run.name.into(),
            classname: "faultlab.demo.probe".into(),
            seconds: r.duration_ms / 1000.0,
            failure: (!r.passed).then(|| (r.failures.first().cloned().unwrap_or_default(), r.failures.join("\n"))),
            error: false,
            skipped: None,
            system_out: Some(r.run.summary.into()),
        })
        .collect();
    std::fs::write(out.join("junit.xml"), junit::render("faultlab demo", &cases))?;
    Ok(())
}

/// Runs the suite over stdio (a `faultlab serve` child) and the in-process HTTP server, in both eras.
async fn run_suite(suite: &[Scenario], exe: &str) -> anyhow::Result<Vec<ScenarioReport>> {
    let builtin = Builtin::start().await.context("cannot start the built-in HTTP server")?;
    let stdio =
        Target::Stdio { command: exe.to_owned(), args: vec!["serve".into()], cwd: None, env: Default::default() };
    let http = Target::Http { url: builtin.url.clone(), headers: Default::default() };
    // The four transport-era runs at once (each waits mostly on timeouts and streams, not the CPU), printed in
    // this order.
    let combos: Vec<_> = [(&stdio, "stdio"), (&http, "http")]
        .into_iter()
        .flat_map(|(target, name)| [ProtocolVersion::Modern, ProtocolVersion::Legacy].map(|era| (target, name, era)))
        .collect();
    let run = |(target, name, era)| run_one(suite, target, name, era);
    let (a, b, c, d) = tokio::join!(run(combos[0]), run(combos[1]), run(combos[2]), run(combos[3]));
    let mut all = Vec::new();
    for ((_, name, era), reports) in combos.iter().zip([a, b, c, d]) {
        let ran: Vec<&ScenarioReport> = reports.iter().filter(|r| r.skipped.is_none()).collect();
        let passed = ran.iter().filter(|r| r.passed).count();
        let version = if *era == ProtocolVersion::Modern { "2026-07-28" } else { "2025-11-25" };
        let verdict = if passed == ran.len() { "PASS" } else { "FAIL" };
        outln!("  {verdict}  {name:<6} {version}  {passed} of {} scenarios passed", ran.len());
        for r in ran.iter().filter(|r| !r.passed) {
            outln!("        {}: {}", r.name, failure_summary(r));
        }
        all.extend(reports);
    }
    Ok(all)
}

/// One transport and era: the suite's scenarios that pin an era run once per transport, in their own era.
async fn run_one(suite: &[Scenario], target: &Target, name: &str, era: ProtocolVersion) -> Vec<ScenarioReport> {
    let scenarios: Vec<Scenario> =
        suite.iter().filter(|s| s.protocol_version.is_none_or(|v| v == era)).cloned().collect();
    crate::run::run_all(&scenarios, target, name, era).await
}

fn failure_summary(report: &ScenarioReport) -> String {
    report
        .failures
        .iter()
        .chain(report.steps.iter().flat_map(|s| s.failures.iter()))
        .next()
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::SUITE;
    use faultlab_engine::FaultKind;
    use faultlab_run::scenario::Scenario;
    use std::collections::BTreeSet;

    /// The demo says its suite covers every fault tool: each `faultlab serve` tool that arms a catalogue fault is
    /// called by a suite scenario, so a new fault tool (or a scenario dropped from the suite) fails here.
    #[test]
    fn the_suite_calls_every_tool_that_arms_a_catalogue_fault() {
        let mut called = BTreeSet::new();
        for (name, text) in SUITE {
            let scenario = Scenario::parse(text, false).unwrap_or_else(|e| panic!("{name}: {e}"));
            let calls = scenario.call.iter().chain(scenario.steps.iter().map(|step| &step.call));
            called.extend(calls.map(|call| call.tool.clone()));
        }
        let mut missing = BTreeSet::new();
        for (fault, examples) in FaultKind::examples() {
            for example in examples {
                let kind: FaultKind = serde_json::from_str(example).unwrap_or_else(|e| panic!("{fault}: {e}"));
                if let Some(tool) = kind.serve_tool().filter(|tool| !called.contains(tool.name)) {
                    missing.insert(format!("{} ({fault})", tool.name));
                }
            }
        }
        assert!(missing.is_empty(), "no suite scenario calls: {missing:?}; add one from examples/scenarios/");
    }
}
