//! A deterministic fake adapter: no I/O, a virtual clock, and a plan of what each operation returns. It tests
//! orchestration (outcomes, budgets, cleanup on every path) without a server.

use crate::adapter::{Adapter, Budget, OpFailure, OpRecord, Operation, Recording, Session};
use crate::expect::StepObservation;
use crate::scenario::PlannedStep;
use faultlab_client::{Observation, Outcome};
use faultlab_wire::sync::lock;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// One planned answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeStep {
    pub outcome: Outcome,
    /// Virtual milliseconds the operation takes; past the budget it becomes a timeout.
    pub duration_ms: u64,
    /// The result of a successful or tool-error call.
    pub result: Option<Value>,
}

impl FakeStep {
    pub fn new(outcome: Outcome, duration_ms: u64) -> Self {
        Self { outcome, duration_ms, result: None }
    }
}

/// What every operation will do.
#[derive(Debug, Clone, Default)]
pub struct FakePlan {
    pub setup: Option<FakeStep>,
    pub executions: VecDeque<FakeStep>,
    pub observations: VecDeque<FakeStep>,
    pub cleanup_ms: u64,
}

/// A call the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeCall {
    pub operation: Operation,
    pub operation_id: String,
    pub timeout_ms: u64,
    pub tool: Option<String>,
}

#[derive(Default)]
struct State {
    now_ms: u64,
    plan: FakePlan,
    calls: Vec<FakeCall>,
    cleanups: u32,
    cleaned: Option<OpRecord>,
}

/// The fake adapter; its sessions share its state, so a test can read the calls afterwards.
#[derive(Clone, Default)]
pub struct FakeAdapter {
    state: Arc<Mutex<State>>,
}

pub struct FakeSession {
    state: Arc<Mutex<State>>,
}

impl FakeAdapter {
    pub fn new(plan: FakePlan) -> Self {
        Self { state: Arc::new(Mutex::new(State { plan, ..State::default() })) }
    }

    pub fn calls(&self) -> Vec<FakeCall> {
        lock(&self.state).calls.clone()
    }

    /// How many times cleanup actually released resources (at most once, however often it was asked).
    pub fn cleanups(&self) -> u32 {
        lock(&self.state).cleanups
    }
}

/// Plays one planned step on the virtual clock.
fn play(
    state: &Mutex<State>,
    operation: Operation,
    operation_id: String,
    budget: Budget,
    tool: Option<String>,
    step: Option<FakeStep>,
) -> (OpRecord, Option<FakeStep>) {
    let mut state = lock(state);
    let timeout_ms = budget.duration().as_millis() as u64;
    state.calls.push(FakeCall { operation, operation_id: operation_id.clone(), timeout_ms, tool });
    let started = state.now_ms;
    let (outcome, duration, failure, step) = match step {
        None => (
            Outcome::Error,
            0,
            Some(OpFailure {
                message: "the fake's plan has no step left".into(),
                code: Some("fake_plan_exhausted".into()),
            }),
            None,
        ),
        Some(step) if step.duration_ms > timeout_ms => (
            Outcome::Timeout,
            timeout_ms,
            Some(OpFailure {
                message: format!("operation exceeded {timeout_ms}ms"),
                code: Some("deadline_exceeded".into()),
            }),
            None,
        ),
        Some(step) => {
            let failure = (step.outcome != Outcome::Success)
                .then(|| OpFailure { message: format!("planned {:?}", step.outcome), code: None });
            (step.outcome, step.duration_ms, failure, Some(step))
        }
    };
    state.now_ms += duration;
    let record = OpRecord {
        operation,
        operation_id,
        started_at_ms: started as f64,
        ended_at_ms: state.now_ms as f64,
        duration_ms: duration as f64,
        outcome,
        failure,
    };
    (record, step)
}

fn observation(record: &OpRecord, step: Option<FakeStep>) -> Option<StepObservation> {
    let step = step?;
    let mut observation: Observation = serde_json::from_value(serde_json::json!({
        "outcome": step.outcome, "durationMs": record.duration_ms, "requestId": 1
    }))
    .ok()?;
    observation.result = step.result;
    Some(StepObservation {
        observation,
        earlier_attempts: Vec::new(),
        responses: 1,
        anomalies: Default::default(),
        notifications: Default::default(),
        connection_alive: step.outcome != Outcome::TransportLoss,
        auth: None,
        surface: None,
    })
}

impl Adapter for FakeAdapter {
    type Session = FakeSession;

    async fn setup(&self, operation_id: String, budget: Budget) -> Recording<FakeSession> {
        let planned = lock(&self.state).plan.setup.clone().unwrap_or(FakeStep::new(Outcome::Success, 0));
        let (record, step) = play(&self.state, Operation::Setup, operation_id, budget, None, Some(planned));
        let value = step.filter(|s| s.outcome == Outcome::Success).map(|_| FakeSession { state: self.state.clone() });
        Recording { record, value }
    }
}

impl FakeSession {
    /// A tool call (an execution or an observation) played from its planned step.
    fn call(
        &self,
        operation: Operation,
        operation_id: String,
        step: &PlannedStep,
        budget: Budget,
        planned: Option<FakeStep>,
    ) -> Recording<StepObservation> {
        let (record, played) =
            play(&self.state, operation, operation_id, budget, Some(step.call.tool.clone()), planned);
        let value = observation(&record, played);
        Recording { record, value }
    }
}

impl Session for FakeSession {
    async fn execute(&self, operation_id: String, step: &PlannedStep, budget: Budget) -> Recording<StepObservation> {
        let planned = lock(&self.state).plan.executions.pop_front();
        self.call(Operation::Execute, operation_id, step, budget, planned)
    }

    async fn observe(&self, operation_id: String, step: &PlannedStep, budget: Budget) -> Recording<StepObservation> {
        let planned = lock(&self.state).plan.observations.pop_front();
        self.call(Operation::Observe, operation_id, step, budget, planned)
    }

    async fn cancel(&self, operation_id: String, budget: Budget) -> Recording<()> {
        let (record, _) =
            play(&self.state, Operation::Cancel, operation_id, budget, None, Some(FakeStep::new(Outcome::Success, 0)));
        Recording { record, value: Some(()) }
    }

    async fn cleanup(&self, operation_id: String, budget: Budget) -> Recording<()> {
        let done = lock(&self.state).cleaned.clone();
        let record = match done {
            Some(record) => {
                lock(&self.state).calls.push(FakeCall {
                    operation: Operation::Cleanup,
                    operation_id,
                    timeout_ms: budget.duration().as_millis() as u64,
                    tool: None,
                });
                record
            }
            None => {
                let ms = lock(&self.state).plan.cleanup_ms;
                let (record, _) = play(
                    &self.state,
                    Operation::Cleanup,
                    operation_id,
                    budget,
                    None,
                    Some(FakeStep::new(Outcome::Success, ms)),
                );
                let mut state = lock(&self.state);
                // Checked again under the lock: a concurrent cleanup may have finished first.
                match &state.cleaned {
                    Some(first) => first.clone(),
                    None => {
                        state.cleanups += 1;
                        state.cleaned = Some(record.clone());
                        record
                    }
                }
            }
        };
        let value = (record.outcome == Outcome::Success).then_some(());
        Recording { record, value }
    }
}
