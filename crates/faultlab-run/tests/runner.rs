//! Orchestration through the deterministic fake adapter: every outcome, budgets, and cleanup on every path.

use faultlab_client::Outcome;
use faultlab_run::adapter::{Adapter, Budget, Operation, Session};
use faultlab_run::fake::{FakeAdapter, FakePlan, FakeStep};
use faultlab_run::runner::{RunContext, run};
use faultlab_run::scenario::{ProtocolVersion, Scenario, TransportName};

fn context() -> RunContext {
    RunContext { target: "fake".into(), transport: TransportName::Stdio, era: ProtocolVersion::Modern, setup_ms: 1000 }
}

fn scenario(yaml: &str) -> Scenario {
    Scenario::parse(yaml, false).unwrap()
}

fn plan(executions: Vec<FakeStep>) -> FakePlan {
    FakePlan { executions: executions.into(), ..FakePlan::default() }
}

fn operations(adapter: &FakeAdapter) -> Vec<Operation> {
    adapter.calls().into_iter().map(|c| c.operation).collect()
}

#[tokio::test]
async fn every_outcome_is_reported_and_checked() {
    for outcome in [Outcome::Success, Outcome::Error, Outcome::Cancelled, Outcome::TransportLoss] {
        let name = serde_json::to_value(outcome).unwrap();
        let yaml =
            format!("name: o\ncall: {{tool: t}}\ntimeoutMs: 100\nexpect: {{outcome: {}}}\n", name.as_str().unwrap());
        let adapter = FakeAdapter::new(plan(vec![FakeStep::new(outcome, 10)]));
        let report = run(&adapter, &scenario(&yaml), &context()).await;
        assert!(report.passed, "{outcome:?}: {:?}", report.steps);
        assert_eq!(report.steps[0].seen.as_ref().unwrap().observation.outcome, outcome);
        assert_eq!(operations(&adapter), [Operation::Setup, Operation::Execute, Operation::Cleanup]);
    }
}

#[tokio::test]
async fn a_step_past_its_budget_times_out_is_cancelled_and_cleaned_up() {
    let adapter = FakeAdapter::new(plan(vec![FakeStep::new(Outcome::Success, 500)]));
    let report =
        run(&adapter, &scenario("name: t\ncall: {tool: t}\ntimeoutMs: 100\nexpect: {outcome: timeout}\n"), &context())
            .await;
    let execute = &report.diagnostics[1];
    assert_eq!((execute.outcome, execute.duration_ms), (Outcome::Timeout, 100.0), "clamped to the budget");
    assert_eq!(execute.failure.as_ref().unwrap().code.as_deref(), Some("deadline_exceeded"));
    assert_eq!(operations(&adapter), [Operation::Setup, Operation::Execute, Operation::Cancel, Operation::Cleanup]);
    assert_eq!(adapter.cleanups(), 1);
}

#[tokio::test]
async fn an_unmet_expectation_fails_and_cleanup_still_runs() {
    let adapter = FakeAdapter::new(plan(vec![FakeStep::new(Outcome::Error, 1)]));
    let report = run(&adapter, &scenario("name: t\ncall: {tool: t}\nexpect: {outcome: success}\n"), &context()).await;
    assert!(!report.passed);
    assert_eq!(report.steps[0].failures, ["expected outcome success, received error"]);
    assert_eq!(adapter.cleanups(), 1);
}

#[tokio::test]
async fn an_exhausted_plan_fails_the_step_and_cleanup_still_runs() {
    let adapter = FakeAdapter::new(plan(vec![FakeStep::new(Outcome::Success, 1)]));
    let yaml = "name: t\nsteps:\n- call: {tool: a}\n  repeat: 2\n  expect: {outcome: success}\n";
    let report = run(&adapter, &scenario(yaml), &context()).await;
    assert_eq!(report.steps.len(), 2);
    assert!(report.steps[0].passed && !report.steps[1].passed);
    assert!(report.steps[1].failures[0].contains("no step left"), "{:?}", report.steps[1].failures);
    assert_eq!(adapter.cleanups(), 1);
}

#[tokio::test]
async fn a_failed_setup_runs_nothing_and_has_nothing_to_clean() {
    let adapter = FakeAdapter::new(FakePlan { setup: Some(FakeStep::new(Outcome::Error, 5)), ..FakePlan::default() });
    let report = run(&adapter, &scenario("name: t\ncall: {tool: t}\nexpect: {}\n"), &context()).await;
    assert!(!report.passed && report.failures.is_empty(), "{:?}", report.failures);
    assert!(report.error.as_deref().is_some_and(|e| e.starts_with("the target could not start")), "{report:?}");
    assert_eq!(operations(&adapter), [Operation::Setup]);

    let slow = FakeAdapter::new(FakePlan { setup: Some(FakeStep::new(Outcome::Success, 5000)), ..FakePlan::default() });
    let report = run(&slow, &scenario("name: t\ncall: {tool: t}\nexpect: {}\n"), &context()).await;
    assert_eq!(report.diagnostics[0].outcome, Outcome::Timeout);
    assert_eq!(slow.cleanups(), 0);
}

#[tokio::test]
async fn the_observer_uses_its_own_queue() {
    let adapter = FakeAdapter::new(FakePlan {
        executions: [FakeStep::new(Outcome::Timeout, 1)].into(),
        observations: [FakeStep::new(Outcome::Success, 1)].into(),
        ..FakePlan::default()
    });
    let yaml = "name: t\ncall: {tool: hang}\nexpect: {outcome: timeout}\nobserve: {call: {tool: ping}, expect: {outcome: success}}\n";
    let report = run(&adapter, &scenario(yaml), &context()).await;
    assert!(report.passed, "{:?}", report.steps);
    assert!(report.steps[1].observer);
    assert_eq!(
        operations(&adapter),
        [Operation::Setup, Operation::Execute, Operation::Cancel, Operation::Observe, Operation::Cleanup]
    );
}

#[tokio::test]
async fn cleanup_is_idempotent_also_when_concurrent() {
    let adapter = FakeAdapter::new(FakePlan { cleanup_ms: 7, ..FakePlan::default() });
    let budget = Budget::from_millis(100).unwrap();
    let session = adapter.setup("s".into(), budget).await.value.unwrap();
    let (a, b) = tokio::join!(session.cleanup("c1".into(), budget), session.cleanup("c2".into(), budget));
    let c = session.cleanup("c3".into(), budget).await;
    assert_eq!(adapter.cleanups(), 1, "resources released once");
    assert_eq!(a.record, b.record);
    assert_eq!(a.record, c.record);
    assert_eq!(a.record.duration_ms, 7.0);
}

#[test]
fn a_zero_budget_is_refused() {
    assert!(Budget::from_millis(0).is_err());
}
