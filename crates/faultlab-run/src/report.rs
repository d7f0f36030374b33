//! The results of `faultlab run` as a console summary, JSON, or JUnit XML. One report model, one small
//! renderer per format.

use crate::junit;
use crate::runner::ScenarioReport;
use serde_json::json;
use std::fmt::Write as _;

/// Console: one line per scenario, failures indented under it, a closing count.
pub fn console(reports: &[ScenarioReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let verdict = match (&r.skipped, &r.error, r.passed) {
            (Some(_), _, _) => "SKIP",
            (None, Some(_), _) => "ERROR",
            (None, None, true) => "PASS",
            (None, None, false) => "FAIL",
        };
        let version = serde_json::to_value(r.protocol_version).ok().and_then(|v| v.as_str().map(str::to_owned));
        let (target, version) = (&r.target, version.unwrap_or_default());
        let _ = match &r.skipped {
            Some(why) => writeln!(out, "{verdict}  {}  [{target} {version}]  skipped: {why}", r.name),
            None => writeln!(
                out,
                "{verdict}  {}  [{target} {version}]  {} call{}, {:.0} ms",
                r.name,
                r.steps.len(),
                if r.steps.len() == 1 { "" } else { "s" },
                r.duration_ms
            ),
        };
        for failure in r.error.iter().chain(&r.failures) {
            // A message of several lines (a target's last stderr lines) stays indented under its dash.
            let _ = writeln!(out, "      - {}", failure.replace('\n', "\n        "));
        }
        for step in r.steps.iter().filter(|s| !s.passed) {
            for failure in &step.failures {
                let _ = writeln!(out, "      - {}: {failure}", step.label);
            }
        }
    }
    let skipped = reports.iter().filter(|r| r.skipped.is_some()).count();
    let passed = reports.iter().filter(|r| r.passed).count() - skipped;
    let errors = reports.iter().filter(|r| r.error.is_some()).count();
    let failed = reports.len() - passed - skipped - errors;
    let _ = write!(out, "{passed} passed, {failed} failed, {skipped} skipped");
    // Only when there are any, so a clean summary reads as before.
    if errors > 0 {
        let _ = write!(out, ", {errors} could not run (the target did not start)");
    }
    out.push('\n');
    out
}

/// JSON: every scenario with its steps, observations, adapter diagnostics and trace.
pub fn json(reports: &[ScenarioReport]) -> String {
    let passed = reports.iter().all(|r| r.passed);
    serde_json::to_string_pretty(&json!({"passed": passed, "scenarios": reports})).unwrap_or_default() + "\n"
}

/// JUnit: a test case per step call (primary and observer) and one per scenario's adapter lifecycle; a skipped
/// scenario is one `<skipped>` case saying why.
pub fn junit_xml(reports: &[ScenarioReport]) -> String {
    let mut cases = Vec::new();
    for r in reports {
        if let Some(why) = &r.skipped {
            cases.push(junit::Case {
                name: r.name.clone(),
                classname: format!("faultlab.{}.execution", r.target),
                seconds: 0.0,
                failure: None,
                error: false,
                skipped: Some(why.clone()),
                system_out: None,
            });
            continue;
        }
        for step in &r.steps {
            let kind = if step.observer { "observer" } else { "primary" };
            let name = if step.repeat > 1 { format!("{} #{}", step.label, step.repeat) } else { step.label.clone() };
            cases.push(junit::Case {
                name: format!("{} / {name}", r.name),
                classname: format!("faultlab.{}.{kind}", r.target),
                seconds: step.duration_ms / 1000.0,
                failure: (!step.passed).then(|| (step.failures[0].clone(), step.failures.join("\n"))),
                error: false,
                skipped: None,
                system_out: None,
            });
        }
        let lifecycle: Vec<String> = r
            .diagnostics
            .iter()
            .map(|d| {
                let outcome = serde_json::to_value(d.outcome).ok().and_then(|v| v.as_str().map(str::to_owned));
                format!(
                    "{} {}: {} ({:.2} ms)",
                    d.operation_id,
                    json!(d.operation),
                    outcome.unwrap_or_default(),
                    d.duration_ms
                )
            })
            .collect();
        let problems: Vec<&str> = r.error.iter().chain(&r.failures).map(String::as_str).collect();
        cases.push(junit::Case {
            name: format!("{} (execution)", r.name),
            classname: format!("faultlab.{}.execution", r.target),
            seconds: r.duration_ms / 1000.0,
            failure: problems.first().map(|f| (f.to_string(), problems.join("\n"))),
            // A failed setup or cleanup means the scenario could not run as planned.
            error: true,
            skipped: None,
            system_out: Some(lifecycle.join("\n")),
        });
    }
    junit::render("faultlab run", &cases)
}

/// An error that stopped the run before any scenario ran, in the chosen format.
pub fn error(format: &str, code: &str, message: &str) -> String {
    match format {
        "json" => {
            serde_json::to_string_pretty(&json!({"passed": false, "error": {"code": code, "message": message}}))
                .unwrap_or_default()
                + "\n"
        }
        "junit" => junit::render(
            code,
            &[junit::Case {
                name: code.into(),
                classname: "faultlab.execution".into(),
                seconds: 0.0,
                failure: Some((message.into(), message.into())),
                error: true,
                skipped: None,
                system_out: None,
            }],
        ),
        _ => format!("faultlab run: {message}\n"),
    }
}
