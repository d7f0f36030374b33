//! The seven deterministic reference-client runs against `faultlab serve` in `lab_probe` mode.
//!
//! Each run starts a fresh server process with its `LAB_*` variables, lets the reference client call `lab_probe`
//! under its retry policy (only explicit tool errors are retried, at most five attempts, no backoff, so the trace
//! shows every repeated call), and checks the outcome the reference client must reach.

use faultlab_client::{Connection, Era, ErrorKind, Observation, Outcome, RetryPolicy, Target, trace};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// The handshake's deadline (separate from the tool-call deadline), in ms.
const SETUP_DEADLINE: Duration = Duration::from_secs(10);

/// What the reference client must end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Expected {
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    pub attempts: usize,
}

/// One run's plan.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeRun {
    pub name: &'static str,
    pub scenario: &'static str,
    pub env: BTreeMap<&'static str, &'static str>,
    pub deadline_ms: u64,
    pub expected: Expected,
    pub summary: &'static str,
}

/// The seven runs.
pub fn runs() -> Vec<ProbeRun> {
    let run = |name, scenario, env: &[(&'static str, &'static str)], deadline_ms, expected, summary| ProbeRun {
        name,
        scenario,
        env: env.iter().copied().collect(),
        deadline_ms,
        expected,
        summary,
    };
    let expect = |outcome, error_kind, attempts| Expected { outcome, error_kind, attempts };
    vec![
        run("healthy", "healthy", &[], 2000, expect(Outcome::Success, None, 1), "one call, one success"),
        run(
            "tool-error",
            "tool-error",
            &[],
            2000,
            expect(Outcome::Error, Some(ErrorKind::ToolError), 5),
            "every call is a tool error: stop at the five-attempt budget (five identical failing calls: \
             `faultlab diagnose` rightly names them a loop and a retry storm)",
        ),
        run(
            "transient-error",
            "transient-error",
            &[("LAB_FAILURES", "2")],
            2000,
            expect(Outcome::Success, None, 3),
            "two tool errors, then recovery on the third attempt",
        ),
        run(
            "delay-within-deadline",
            "delay",
            &[("LAB_DELAY_MS", "100")],
            2000,
            expect(Outcome::Success, None, 1),
            "a 100 ms delay inside a 2000 ms deadline",
        ),
        run(
            "delay-past-deadline",
            "delay",
            &[("LAB_DELAY_MS", "1500")],
            500,
            expect(Outcome::Timeout, None, 1),
            "a 1500 ms delay past a 500 ms deadline: time out, cancel, do not retry",
        ),
        run(
            "malformed",
            "malformed",
            &[],
            2000,
            expect(Outcome::Error, Some(ErrorKind::InvalidResponse), 1),
            "a valid envelope around an invalid text block: reject the result, do not retry",
        ),
        run(
            "disconnect",
            "disconnect",
            &[],
            2000,
            expect(Outcome::TransportLoss, None, 1),
            "the server exits mid-call: report the closed connection, never success",
        ),
    ]
}

/// What one run did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    pub run: ProbeRun,
    pub attempts: Vec<Observation>,
    pub passed: bool,
    /// Why the run did not pass (empty when it did).
    pub failures: Vec<String>,
    /// OpenAI-message-shaped trace of the run.
    pub trace: Vec<Value>,
    pub duration_ms: f64,
}

/// Runs one plan against a fresh `server` process (the faultlab binary's path).
pub async fn execute(server: &str, plan: &ProbeRun) -> ProbeResult {
    let start = tokio::time::Instant::now();
    let mut env: BTreeMap<String, String> = plan.env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    env.insert("LAB_SCENARIO".into(), plan.scenario.into());
    let target = Target::Stdio { command: server.into(), args: vec!["serve".into()], cwd: None, env };
    let args = json!({"message": "probe"});
    let goal = format!("Call lab_probe with message \"probe\" ({} scenario).", plan.scenario);
    let (attempts, mut failures) = match Connection::open(&target, Era::Legacy, SETUP_DEADLINE).await {
        Ok(connection) => {
            let deadline = Duration::from_millis(plan.deadline_ms);
            let run = RetryPolicy::default().run(&connection, "lab_probe", &args, deadline, 0).await;
            connection.close().await;
            (run.attempts, Vec::new())
        }
        Err(e) => (Vec::new(), vec![format!("could not connect: {e}")]),
    };
    if let Some(last) = attempts.last() {
        if last.outcome != plan.expected.outcome {
            failures.push(format!("expected outcome {:?}, got {:?}", plan.expected.outcome, last.outcome));
        }
        if last.error_kind != plan.expected.error_kind {
            failures.push(format!("expected error kind {:?}, got {:?}", plan.expected.error_kind, last.error_kind));
        }
        if attempts.len() != plan.expected.attempts {
            failures.push(format!("expected {} attempts, made {}", plan.expected.attempts, attempts.len()));
        }
    }
    ProbeResult {
        trace: trace::messages(&goal, "lab_probe", &args, &attempts),
        passed: failures.is_empty(),
        failures,
        attempts,
        run: plan.clone(),
        duration_ms: start.elapsed().as_secs_f64() * 1000.0,
    }
}
