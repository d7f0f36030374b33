//! `faultlab diagnose`: read agent traces, name what went wrong with evidence, write the report.
//!
//! Exit codes: 0 diagnosed (findings alone do not fail); 2 a finding named by `--fail-on` is present; 1 the
//! diagnosis could not happen — a trace that cannot be read or parsed (the error names the file and the message
//! index or line), an unknown finding name, a threshold out of range, an output file that cannot be written.

use crate::cli::{DiagnoseArgs, DiagnoseFormat};
use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use faultlab_diagnose::render::{self, Format};
use faultlab_diagnose::{Diagnosis, FindingKind, Thresholds};
use std::collections::BTreeSet;

pub fn run(args: DiagnoseArgs) -> Result<(), Failure> {
    let fail_on = fail_on(&args.fail_on).map_err(Failure::runtime)?;
    let thresholds = thresholds(&args).map_err(Failure::runtime)?;
    let mut diagnoses: Vec<Diagnosis> = Vec::new();
    let traces = crate::inputs::expand(&args.traces, crate::inputs::TRACES).map_err(Failure::runtime)?;
    for path in &traces {
        let trace = faultlab_diagnose::load(path).map_err(Failure::runtime)?;
        diagnoses.push(faultlab_diagnose::diagnose(&path.display().to_string(), trace, &thresholds));
    }
    let format = match args.format {
        DiagnoseFormat::Console => Format::Console,
        DiagnoseFormat::Json => Format::Json,
        DiagnoseFormat::Md => Format::Markdown,
        DiagnoseFormat::Html => Format::Html,
    };
    let report = render::render(format, &diagnoses, &thresholds);
    match &args.out {
        Some(out) => {
            std::fs::write(out, report)
                .with_context(|| format!("cannot write the report to {}", out.display()))
                .map_err(Failure::runtime)?;
            errln!("faultlab: diagnose: {}; report written to {}", render::headline(&diagnoses), out.display());
        }
        None => out!("{report}"),
    }
    let present: BTreeSet<FindingKind> =
        diagnoses.iter().flat_map(|d| &d.findings).map(|f| f.kind).filter(|k| fail_on.contains(k)).collect();
    if present.is_empty() {
        Ok(())
    } else {
        let names: Vec<&str> = present.iter().map(|k| k.name()).collect();
        Err(Failure::failed(anyhow!("--fail-on: {} present", names.join(", "))))
    }
}

/// The kinds named by `--fail-on`; `any` names them all.
fn fail_on(names: &[String]) -> anyhow::Result<BTreeSet<FindingKind>> {
    let mut kinds = BTreeSet::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if name == "any" {
            kinds.extend(FindingKind::ALL);
            continue;
        }
        let kind = FindingKind::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = FindingKind::ALL.iter().map(|k| k.name()).collect();
            anyhow!("--fail-on: unknown finding `{name}` (known: {}, or any)", known.join(", "))
        })?;
        kinds.insert(kind);
    }
    Ok(kinds)
}

/// The library's defaults, with the flags given on top.
fn thresholds(args: &DiagnoseArgs) -> anyhow::Result<Thresholds> {
    let defaults = Thresholds::default();
    let thresholds = Thresholds {
        loop_min_calls: args.loop_min_calls.unwrap_or(defaults.loop_min_calls),
        storm_min_retries: args.storm_min_retries.unwrap_or(defaults.storm_min_retries),
        min_backoff_ms: args.min_backoff_ms.unwrap_or(defaults.min_backoff_ms),
        quick_retries: args.quick_retries.unwrap_or(defaults.quick_retries),
        write_tools: args.write_tools.clone(),
    };
    thresholds.validate().map_err(|(name, reason)| anyhow!("--{} {reason}", name.replace('_', "-")))?;
    Ok(thresholds)
}
