//! `faultlab run`: scenario files, the reference client, the built-in server or an external target, reports.

use crate::builtin::Builtin;
use crate::cli::{Era, ReportFormat, RunArgs};
use crate::exit::Failure;
use anyhow::Context as _;
use faultlab_client::Target;
use faultlab_run::mcp::McpAdapter;
use faultlab_run::report;
use faultlab_run::runner::{self, RunContext, ScenarioReport};
use faultlab_run::scenario::{ProtocolVersion, Scenario, TransportName};
use faultlab_run::target::TargetFile;
use std::path::Path;

/// Budget for connecting and for cleaning up, in ms.
const SETUP_MS: u64 = 10_000;

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let format: &str = args.format.into();
    // Errors before any scenario runs still come out in the chosen format.
    let fail = |code: &str, message: String| {
        let text = report::error(format, code, &message);
        if format == "console" {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
        } else {
            out!("{text}")
        }
        Failure::runtime(anyhow::anyhow!("{message}")).silenced()
    };
    let mut scenarios = Vec::new();
    let paths = crate::inputs::expand(&args.scenarios, crate::inputs::YAML_OR_JSON)
        .map_err(|e| fail("scenario_load_failed", e.to_string()))?;
    for path in &paths {
        match Scenario::load(path) {
            Ok(s) => scenarios.push(s),
            Err(e) => return Err(fail("scenario_load_failed", e.to_string())),
        }
    }
    let external = match &args.target {
        Some(path) => {
            let file = TargetFile::load(path).map_err(|e| fail("target_load_failed", e.to_string()))?;
            let target = file
                .resolve(&folder_of(path), |name| std::env::var(name).ok())
                .map_err(|e| fail("target_load_failed", format!("target file {}: {e}", path.display())))?;
            Some(target)
        }
        None => None,
    };
    let baseline = crate::baseline::load(&args.baseline).map_err(|e| fail("baseline_load_failed", e.to_string()))?;
    let default_era = match args.protocol_version {
        Era::Modern => ProtocolVersion::Modern,
        Era::Legacy => ProtocolVersion::Legacy,
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    let reports = runtime
        .block_on(async {
            let builtin = match external {
                Some(_) => None,
                None => Some(Builtin::start().await?),
            };
            let (target, name) = match (external, &builtin) {
                (Some(target), _) => (target, "external"),
                (None, Some(b)) => (Target::Http { url: b.url.clone(), headers: Default::default() }, "builtin"),
                (None, None) => unreachable!("a built-in server is started when there is no target"),
            };
            Ok::<_, std::io::Error>(run_all(&scenarios, &target, name, default_era).await)
        })
        .map_err(|e| fail("target_start_failed", format!("cannot start the built-in server: {e}")))?;
    let text = match args.format {
        ReportFormat::Console => report::console(&reports),
        ReportFormat::Json => report::json(&reports),
        ReportFormat::Junit => report::junit_xml(&reports),
    };
    out!("{text}");
    if let Some(out) = &args.out {
        write_outputs(out, &reports).map_err(Failure::runtime)?;
    }
    // A scenario that could not run says nothing about the client: the run could not happen (1), whatever else
    // failed.
    let errors = reports.iter().filter(|r| r.error.is_some()).count();
    let failed = reports.iter().filter(|r| !r.passed).count();
    if errors > 0 {
        return Err(Failure::runtime(anyhow::anyhow!(
            "{} could not run: the target did not start",
            crate::console::count(errors, "scenario", "scenarios")
        ))
        .silenced());
    }
    let ids: Vec<(String, bool)> =
        reports.iter().filter(|r| r.skipped.is_none()).map(|r| (baseline_id(r), r.passed)).collect();
    if let Some(verdict) =
        crate::baseline::finish(&args.baseline, baseline.as_ref(), ids.iter().map(|(id, p)| (id.as_str(), *p)))
    {
        verdict
    } else if failed > 0 {
        Err(Failure::failed(anyhow::anyhow!("{} failed", crate::console::count(failed, "scenario", "scenarios")))
            .silenced())
    } else {
        Ok(())
    }
}

/// The folder a target file's paths resolve from: its own, made absolute (a relative program path would
/// otherwise be read from inside the server's working folder).
fn folder_of(path: &Path) -> std::path::PathBuf {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::path::absolute(folder).unwrap_or_else(|_| folder.to_owned())
}

/// A scenario's id in a baseline: its name and era, as the console shows them.
fn baseline_id(report: &ScenarioReport) -> String {
    let era = serde_json::to_value(report.protocol_version).ok().and_then(|v| v.as_str().map(str::to_owned));
    format!("{} [{}]", report.name, era.unwrap_or_default())
}

/// Runs every scenario against `target`, each on its own connection, in the scenario's era or `default_era`.
pub async fn run_all(
    scenarios: &[Scenario],
    target: &Target,
    name: &str,
    default_era: ProtocolVersion,
) -> Vec<ScenarioReport> {
    let transport = match target {
        Target::Stdio { .. } => TransportName::Stdio,
        Target::Http { .. } => TransportName::Http,
    };
    let mut reports = Vec::new();
    for scenario in scenarios {
        let era = scenario.protocol_version.unwrap_or(default_era);
        let client_era = match era {
            ProtocolVersion::Modern => faultlab_client::Era::Modern,
            ProtocolVersion::Legacy => faultlab_client::Era::Legacy,
        };
        let context = RunContext { target: name.to_owned(), transport, era, setup_ms: SETUP_MS };
        // An auth scenario gets a built-in server of its own behind the authorization server playing its fault
        // (fresh tokens and counters each time), kept until its report is made.
        let mut target = target.clone();
        let mut _authorized_server = None;
        if let Some(auth) = &scenario.auth {
            match (name, transport) {
                ("builtin", _) => match Builtin::start_with(Some(auth_config(auth))).await {
                    Ok(server) => {
                        target = Target::Http { url: server.url.clone(), headers: Default::default() };
                        _authorized_server = Some(server);
                    }
                    Err(e) => {
                        let mut report = ScenarioReport::not_run(scenario, &context);
                        report.error = Some(format!("the target could not start: the built-in server with auth: {e}"));
                        reports.push(report);
                        continue;
                    }
                },
                (_, TransportName::Http) if auth.fault.is_some() => {
                    let mut report = ScenarioReport::not_run(scenario, &context);
                    report.skipped = Some("its auth fault is played by the built-in server only".into());
                    report.passed = true;
                    reports.push(report);
                    continue;
                }
                _ => {}
            }
        }
        // A scenario with task steps has the client declare the tasks extension (in `initialize`, or in each
        // 2026-07-28 request's capabilities).
        let answers = faultlab_client::Answers { tasks: scenario.uses_tasks(), ..scenario.answers.unwrap_or_default() };
        let mut adapter = McpAdapter::new(target, client_era).answering(answers);
        if let Some(auth) = &scenario.auth {
            adapter = adapter.authorizing(auth.client_options());
        }
        reports.push(runner::run(&adapter, scenario, &context).await);
    }
    reports
}

/// The built-in server's authorization for an auth scenario (its events are not the run's output: the report
/// holds what the client saw).
fn auth_config(auth: &faultlab_run::scenario::ScenarioAuth) -> faultlab_auth::AuthConfig {
    faultlab_auth::AuthConfig {
        token_ttl: auth.token_ttl_s.map_or(faultlab_auth::TOKEN_TTL, std::time::Duration::from_secs),
        fault: auth.fault.clone(),
        matcher: None,
        events: None,
        refusals: None,
    }
}

/// report.json, junit.xml and one trace per scenario.
pub fn write_outputs(out: &Path, reports: &[ScenarioReport]) -> anyhow::Result<()> {
    let traces = out.join("traces");
    std::fs::create_dir_all(&traces).with_context(|| format!("cannot create the output folder {}", out.display()))?;
    std::fs::write(out.join("report.json"), report::json(reports))?;
    std::fs::write(out.join("junit.xml"), report::junit_xml(reports))?;
    for r in reports.iter().filter(|r| r.skipped.is_none()) {
        let file = format!("{}-{}-{}.json", slug(&r.name), r.target, slug(&format!("{:?}", r.protocol_version)));
        std::fs::write(traces.join(file), serde_json::to_string_pretty(&r.trace)? + "\n")?;
    }
    Ok(())
}

fn slug(text: &str) -> String {
    let s: String =
        text.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}
