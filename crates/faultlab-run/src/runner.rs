//! Running a scenario through an adapter: setup, each step (repeated as asked), cancel after a timed-out call,
//! cleanup on every path after a successful setup, and the expectations checked.

use crate::adapter::{Adapter, Budget, OpRecord, Operation, Session};
use crate::expect::{StepObservation, check};
use crate::mcp::TARGET_DIED;
use crate::scenario::{ProtocolVersion, Scenario, TransportName};
use faultlab_client::{Outcome, trace};
use serde::Serialize;
use serde_json::Value;

/// One call of a step and its verdict.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    pub label: String,
    pub observer: bool,
    /// 1-based repeat index.
    pub repeat: u32,
    pub tool: String,
    pub passed: bool,
    pub failures: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<StepObservation>,
    pub duration_ms: f64,
}

/// A scenario's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioReport {
    pub name: String,
    pub protocol_version: ProtocolVersion,
    pub target: String,
    pub passed: bool,
    /// Why the scenario did not run on this target (it names other transports); a skipped scenario passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Failures outside the steps (cleanup).
    pub failures: Vec<String>,
    /// The scenario could not run: the target did not start or answer `initialize`. Not a verdict on the client:
    /// reported as an error in every format, and `faultlab run` exits 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub steps: Vec<StepReport>,
    /// Every adapter operation, in order.
    pub diagnostics: Vec<OpRecord>,
    pub duration_ms: f64,
    /// OpenAI-message-shaped trace of the calls.
    pub trace: Vec<Value>,
}

impl ScenarioReport {
    /// The report of `scenario` before anything ran: not passed, no steps (the caller fills in what happened, or
    /// why nothing did: skipped, an error).
    pub fn not_run(scenario: &Scenario, context: &RunContext) -> Self {
        Self {
            name: scenario.name.clone(),
            protocol_version: context.era,
            target: context.target.clone(),
            passed: false,
            skipped: None,
            failures: Vec::new(),
            error: None,
            steps: Vec::new(),
            diagnostics: Vec::new(),
            duration_ms: 0.0,
            trace: Vec::new(),
        }
    }
}

struct Ids(u32);

impl Ids {
    fn next(&mut self, operation: Operation) -> String {
        self.0 += 1;
        format!("run:{}:{}", serde_json::json!(operation).as_str().unwrap_or("op"), self.0)
    }
}

/// Where a scenario runs: the target's name for reports, its transport, and the era it speaks.
#[derive(Debug, Clone)]
pub struct RunContext {
    pub target: String,
    pub transport: TransportName,
    pub era: ProtocolVersion,
    /// Bounds setup and cleanup, in ms.
    pub setup_ms: u64,
}

/// Runs `scenario` through `adapter` in `context`.
pub async fn run<A: Adapter>(adapter: &A, scenario: &Scenario, context: &RunContext) -> ScenarioReport {
    let setup_ms = context.setup_ms;
    let start = tokio::time::Instant::now();
    let mut report = ScenarioReport::not_run(scenario, context);
    let plan = match scenario.plan() {
        Ok(plan) => plan,
        Err(e) => {
            report.failures.push(e);
            return report;
        }
    };
    if !scenario.transports.is_empty() && !scenario.transports.contains(&context.transport) {
        let names: Vec<&str> = scenario.transports.iter().map(|t| t.name()).collect();
        report.skipped = Some(format!(
            "the scenario applies to {} only; this target speaks {}",
            names.join(" and "),
            context.transport.name()
        ));
        report.passed = true;
        return report;
    }
    let mut ids = Ids(0);
    let Ok(setup_budget) = Budget::from_millis(setup_ms) else {
        report.failures.push("the setup timeout must be positive".into());
        return report;
    };
    let setup = adapter.setup(ids.next(Operation::Setup), setup_budget).await;
    report.diagnostics.push(setup.record.clone());
    let Some(session) = setup.value else {
        let why = setup.record.failure.map_or("unknown".into(), |f| f.message);
        report.error = Some(format!("the target could not start: {why}"));
        report.duration_ms = start.elapsed().as_secs_f64() * 1000.0;
        return report;
    };
    'steps: for step in &plan {
        for repeat in 1..=step.repeat {
            // Validated by plan(): timeouts are positive.
            // A call whose timeout progress restarts may run to its hard maximum.
            let longest = step.progress.and_then(|p| p.max_ms).unwrap_or(0).max(step.timeout_ms);
            let budget = Budget::from_millis(longest).unwrap_or(setup_budget);
            let recording = if step.observer {
                session.observe(ids.next(Operation::Observe), step, budget).await
            } else {
                session.execute(ids.next(Operation::Execute), step, budget).await
            };
            report.diagnostics.push(recording.record.clone());
            if let Some(failure) = recording.record.failure.as_ref().filter(|f| f.code.as_deref() == Some(TARGET_DIED))
            {
                report.error = Some(format!("the target could not start: {}", failure.message));
                break 'steps;
            }
            let failures = match &recording.value {
                Some(seen) => check(&step.expect, seen),
                None => {
                    let why = recording.record.failure.as_ref().map_or("unknown".into(), |f| f.message.clone());
                    vec![format!("{} failed: {why}", if step.observer { "observer" } else { "execution" })]
                }
            };
            let timed_out = recording.value.as_ref().map_or(recording.record.outcome, |s| s.observation.outcome)
                == Outcome::Timeout;
            if timed_out {
                let cancel = session.cancel(ids.next(Operation::Cancel), budget).await;
                report.diagnostics.push(cancel.record);
            }
            report.steps.push(StepReport {
                label: step.label.clone(),
                observer: step.observer,
                repeat,
                tool: step.call.tool.clone(),
                passed: failures.is_empty(),
                failures,
                seen: recording.value,
                duration_ms: recording.record.duration_ms,
            });
        }
    }
    let cleanup = session.cleanup(ids.next(Operation::Cleanup), setup_budget).await;
    if cleanup.record.outcome != Outcome::Success {
        let why = cleanup.record.failure.as_ref().map_or("unknown".into(), |f| f.message.clone());
        report.failures.push(format!("adapter cleanup failed: {why}"));
    }
    report.diagnostics.push(cleanup.record);
    report.passed = report.error.is_none() && report.failures.is_empty() && report.steps.iter().all(|s| s.passed);
    report.duration_ms = start.elapsed().as_secs_f64() * 1000.0;
    report.trace = scenario_trace(scenario, &plan, &report.steps);
    report
}

fn scenario_trace(scenario: &Scenario, plan: &[crate::scenario::PlannedStep], steps: &[StepReport]) -> Vec<Value> {
    let args: Vec<(String, Value)> = steps
        .iter()
        .map(|s| {
            let call = plan.iter().find(|p| p.label == s.label).map(|p| Value::Object(p.call.args.clone()));
            (s.tool.clone(), call.unwrap_or_default())
        })
        .collect();
    let calls: Vec<(&str, &Value, &faultlab_client::Observation)> = steps
        .iter()
        .zip(&args)
        .filter_map(|(s, (tool, a))| s.seen.as_ref().map(|seen| (tool.as_str(), a, seen)))
        .flat_map(|(tool, a, seen)| {
            seen.earlier_attempts.iter().chain(std::iter::once(&seen.observation)).map(move |o| (tool, a, o))
        })
        .collect();
    trace::calls_messages(&format!("Scenario: {}", scenario.name), &calls)
}
