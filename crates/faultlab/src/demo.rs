//! `faultlab demo`: the lab on built-in parts. The reference client meets `faultlab serve` in each `lab_probe`
//! scenario; the console gets a summary, the output folder gets JSON, JUnit XML and OpenAI-message traces.

use crate::Failure;
use crate::cli::DemoArgs;
use anyhow::Context as _;
use faultlab_run::junit;
use faultlab_run::probe::{self, ProbeResult};
use serde_json::json;
use std::path::Path;

pub fn run(args: DemoArgs) -> Result<(), Failure> {
    let exe = std::env::current_exe().context("cannot find the faultlab executable").map_err(Failure::runtime)?;
    let exe = exe.to_string_lossy().into_owned();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    println!("MCP Failure Lab — demo\n");
    println!("The reference client (retries only tool errors, at most 5 attempts) against `faultlab serve`:\n");
    let results = runtime.block_on(async {
        let mut results = Vec::new();
        for plan in probe::runs() {
            let result = probe::execute(&exe, &plan).await;
            print_result(&result);
            results.push(result);
        }
        results
    });
    write_reports(&args.out, &results).map_err(Failure::runtime)?;
    let passed = results.iter().filter(|r| r.passed).count();
    println!("\n{passed} of {} runs behaved as a robust client should.", results.len());
    println!("Reports: {0}/demo.json, {0}/junit.xml, {0}/traces/<run>.json", args.out.display());
    if passed == results.len() {
        Ok(())
    } else {
        Err(Failure::new(
            2,
            anyhow::anyhow!("{} of {} runs did not behave as expected", results.len() - passed, results.len()),
        ))
    }
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
    println!(
        "  {verdict}  {:<22} {:<28} {attempts} attempt{}  — {}",
        result.run.name,
        outcome,
        if attempts == 1 { " " } else { "s" },
        result.run.summary
    );
    for failure in &result.failures {
        println!("        {failure}");
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
            system_out: Some(r.run.summary.into()),
        })
        .collect();
    std::fs::write(out.join("junit.xml"), junit::render("faultlab demo", &cases))?;
    Ok(())
}
