//! The report as Markdown (`report.md`): one writer of the report model, beside the HTML page ([`super::html`])
//! and the comparison of two reports ([`super::compare`]).

use super::{Rate, Report, pct};
use crate::runner::RunRecord;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The report as Markdown.
pub fn markdown(report: &Report) -> String {
    let s = &report.stats;
    let mut md = String::new();
    let _ = writeln!(md, "# faultlab eval report\n");
    let _ = writeln!(
        md,
        "faultlab {} · seed {} · {} runs ({} repeat(s), {} job(s)) in {:.1} s\n",
        report.meta.faultlab,
        report.meta.seed,
        report.runs.len(),
        report.meta.repeat,
        report.meta.jobs,
        report.meta.wall_ms as f64 / 1000.0
    );
    if let Some(shard) = report.shard {
        let _ = writeln!(md, "Shard {shard} of the batch: merge the shard reports with `faultlab report merge`.\n");
    }
    if let Some(merged) = &report.merged {
        let files: Vec<&str> = merged.inputs.iter().map(|i| i.file.as_str()).collect();
        let _ = writeln!(
            md,
            "Merged from {} report(s) ({}); the time above is the longest one's, {:.1} s summed over them.\n",
            files.len(),
            files.join(", "),
            merged.wall_ms_sum as f64 / 1000.0
        );
        for note in &merged.forced {
            let _ = writeln!(md, "> Merged with --force despite: {note}\n");
        }
    }
    if let Some(why) = &report.incomplete {
        let _ = writeln!(md, "**Incomplete: {why}.** Only the runs that ended are below.\n");
    }
    match &report.oracle {
        // Control agents fail on purpose: whether each failed the way it should is the headline, not the rate.
        Some(agreement) => {
            let _ = writeln!(md, "**Oracle: {}**\n", agreement.summary());
            let _ = writeln!(md, "Pass rate: {} (the control agents fail on purpose)\n", pct(&s.overall));
        }
        None => {
            let _ = writeln!(md, "**Pass rate: {}**\n", pct(&s.overall));
        }
    }
    let errors: Vec<&RunRecord> = report.runs.iter().filter(|r| r.error.is_some()).collect();
    if !errors.is_empty() {
        let _ = writeln!(md, "**{} run(s) could not be graded** (the set-up failed, not the agent):\n", errors.len());
        for run in errors {
            let _ = writeln!(
                md,
                "- {} × {} #{}: {}",
                run.task,
                run.agent,
                run.repeat + 1,
                run.error.as_deref().unwrap_or_default()
            );
        }
        md.push('\n');
    }
    if let Some(k) = &s.pass_hat_k {
        let _ = writeln!(md, "pass^{}: {}\n", k.k, k.summary());
    }
    for note in &s.data_quality {
        let _ = writeln!(md, "> Data quality: {note}\n");
    }
    let table = |md: &mut String, title: &str, rates: &BTreeMap<String, Rate>| {
        let _ = writeln!(md, "## By {title}\n\n| {title} | pass rate |\n|---|---|");
        for (key, rate) in rates {
            let _ = writeln!(md, "| {key} | {} |", pct(rate));
        }
        md.push('\n');
    };
    table(&mut md, "fault category", &s.by_category);
    table(&mut md, "fault", &s.by_fault);
    table(&mut md, "task", &s.by_task);
    table(&mut md, "agent", &s.by_agent);
    let _ = writeln!(
        md,
        "## Runs\n\n| task | agent | # | verdict | strategy → outcome | failing checks | calls | end |\n|---|---|---|---|---|---|---|---|"
    );
    for run in &report.runs {
        let v = &run.verdict;
        let failing: Vec<String> = [&v.outcome, &v.safety, &v.side_effects]
            .iter()
            .flat_map(|layer| layer.checks.iter().filter(|c| !c.passed).map(|c| c.name.clone()))
            .chain((!v.recovery.passed).then(|| format!("recovery: {}", v.recovery.detail)))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} → {} | {} | {} | {} |",
            run.task,
            run.agent,
            run.repeat + 1,
            match (&run.error, v.passed) {
                (Some(_), _) => "ERROR",
                (None, true) => "PASS",
                (None, false) => "FAIL",
            },
            name(&v.recovery.strategy),
            name(&v.recovery.outcome),
            failing.join("; ").replace('|', "\\|"),
            v.efficiency.tool_calls,
            match run.end {
                crate::evidence::AgentEnd::Exited { code } =>
                    format!("exit {}", code.map_or("signal".into(), |c| c.to_string())),
                crate::evidence::AgentEnd::KilledAtDeadline => "killed at deadline".into(),
                crate::evidence::AgentEnd::FailedToStart => "did not start".into(),
            }
        );
    }
    model_hop(&mut md, report);
    md
}

/// For the runs of a task with a model: how many model requests each made and which model faults fired where.
fn model_hop(md: &mut String, report: &Report) {
    let runs: Vec<&RunRecord> = report.runs.iter().filter(|r| r.model.is_some()).collect();
    if runs.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Model hop\n\nEvery request is in the run folder's `model.jsonl`.\n");
    for run in runs {
        let Some(hop) = &run.model else { continue };
        let fired: Vec<String> = hop
            .fired
            .iter()
            .map(|f| match &f.skipped {
                None => format!("{} (rule {}) at request {}", f.fault, f.rule, f.request),
                Some(why) => format!("{} (rule {}) at request {}, changed nothing: {why}", f.fault, f.rule, f.request),
            })
            .collect();
        let faults = if fired.is_empty() { "no model fault fired".to_owned() } else { fired.join("; ") };
        let _ = writeln!(
            md,
            "- {} × {} #{}: {} model requests; {faults}",
            run.task,
            run.agent,
            run.repeat + 1,
            hop.requests
        );
    }
}
