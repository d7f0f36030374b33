//! The `mcp` adapter: the reference client as the client under test, against any MCP server target.

use crate::adapter::{Adapter, Budget, OpFailure, OpRecord, Operation, Recording, Session, since};
use crate::expect::{StepObservation, anomaly_delta};
use crate::scenario::PlannedStep;
use faultlab_client::surface::Surface;
use faultlab_client::{Answers, AuthOptions, AuthRecord, Connection, Era, Outcome, Target};
use serde_json::Value;
use std::future::Future;
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// How long a call's trailing frames (a duplicate, a late progress) get to arrive before counting them, in ms.
const SETTLE: Duration = Duration::from_secs(2);

/// The failure code of a call whose server died in failure before answering anything: the run could not happen.
pub const TARGET_DIED: &str = "target_died";

pub struct McpAdapter {
    target: Target,
    era: Era,
    origin: Instant,
    answers: Answers,
    auth: Option<AuthOptions>,
}

impl McpAdapter {
    pub fn new(target: Target, era: Era) -> Self {
        Self { target, era, origin: Instant::now(), answers: Answers::default(), auth: None }
    }

    /// The client runs its auth mode with `options` (HTTP targets).
    pub fn authorizing(mut self, options: AuthOptions) -> Self {
        self.auth = Some(options);
        self
    }

    /// The client declares and answers elicitation, sampling and roots as `answers` scripts.
    pub fn answering(mut self, answers: Answers) -> Self {
        self.answers = answers;
        self
    }
}

pub struct McpSession {
    connection: Connection,
    origin: Instant,
    cleaned: OnceCell<OpRecord>,
    /// The auth record as the previous call left it: a call reports what came after (the first, connecting too).
    auth_seen: std::sync::Mutex<AuthRecord>,
    /// The tool list, kept once a scenario's `toolSurface` asks for it (steps run one at a time).
    surface: tokio::sync::Mutex<Option<Surface>>,
}

/// Runs `work` under `budget`, timing it into a record.
async fn timed<T>(
    origin: Instant,
    operation: Operation,
    operation_id: String,
    budget: Budget,
    work: impl Future<Output = Result<(Outcome, T), OpFailure>>,
) -> Recording<T> {
    let started = since(origin);
    let result = tokio::time::timeout(budget.duration(), work).await;
    let ended = since(origin);
    let (outcome, value, failure) = match result {
        Ok(Ok((outcome, value))) => (outcome, Some(value), None),
        Ok(Err(failure)) => (Outcome::Error, None, Some(failure)),
        Err(_) => (
            Outcome::Timeout,
            None,
            Some(OpFailure {
                message: format!("operation exceeded {} ms", budget.duration().as_millis()),
                code: Some("deadline_exceeded".into()),
            }),
        ),
    };
    Recording {
        record: OpRecord {
            operation,
            operation_id,
            started_at_ms: started,
            ended_at_ms: ended,
            duration_ms: ended - started,
            outcome,
            failure,
        },
        value,
    }
}

impl Adapter for McpAdapter {
    type Session = McpSession;

    async fn setup(&self, operation_id: String, budget: Budget) -> Recording<McpSession> {
        timed(self.origin, Operation::Setup, operation_id, budget, async {
            let connection = Connection::open_with(&self.target, self.era, budget.duration(), self.answers, self.auth)
                .await
                .map_err(|e| OpFailure { message: e.to_string(), code: Some("setup_failed".into()) })?;
            let session = McpSession {
                connection,
                origin: self.origin,
                cleaned: OnceCell::new(),
                auth_seen: Default::default(),
                surface: Default::default(),
            };
            Ok((Outcome::Success, session))
        })
        .await
    }
}

impl McpSession {
    async fn call(
        &self,
        operation: Operation,
        operation_id: String,
        step: &PlannedStep,
        budget: Budget,
    ) -> Recording<StepObservation> {
        let deadline = Duration::from_millis(step.timeout_ms).min(budget.duration());
        // The call's own deadline ends it; the budget only bounds the cancel and the settling afterwards.
        let budget =
            Budget::from_millis(budget.duration().as_millis() as u64 + 2 * SETTLE.as_millis() as u64).unwrap_or(budget);
        timed(self.origin, operation, operation_id, budget, async {
            let mut surface = self.surface.lock().await;
            if let Some(options) = step.surface
                && surface.is_none()
            {
                *surface = Some(options.lists().into_iter().fold(Surface::new(options.page_limit()), Surface::keeping));
            }
            // Listed before the call's anomalies are counted: the listing's own frames are not the call's.
            let listings = match surface.as_mut() {
                Some(kept) => kept.before_call(&self.connection, deadline).await,
                None => Vec::new(),
            };
            let before = self.connection.anomalies();
            let args = Value::Object(step.call.args.clone());
            let mut attempts = match &step.retry {
                Some(policy) => policy.run(&self.connection, &step.call.tool, &args, deadline, 0).await.attempts,
                None => {
                    let progress = crate::scenario::ProgressSetting::mode(step.progress.as_ref());
                    let task = step.task.map(|t| t.options()).unwrap_or_default();
                    vec![self.connection.call_tool_as(&step.call.tool, args.clone(), deadline, progress, task).await]
                }
            };
            let observation = attempts.pop().expect("a call makes at least one attempt");
            // A server that died in failure before answering anything never ran: no verdict on the client.
            if observation.outcome == Outcome::TransportLoss
                && let Some(why) = self.connection.died_unanswered().await
            {
                return Err(OpFailure { message: why, code: Some(TARGET_DIED.into()) });
            }
            self.connection.settle(&observation.request_id, SETTLE).await;
            // Events replayed after the reply (a duplicate) are filed by now.
            let mut observation = observation;
            let protocol_retry = observation.recovery.protocol_retry.take();
            observation.recovery = self.connection.recovery_for(&observation.request_id);
            observation.recovery.protocol_retry = protocol_retry.or(observation.recovery.protocol_retry.take());
            let (anomalies, notifications) = anomaly_delta(&before, &self.connection.anomalies());
            let auth = self.connection.auth_record().map(|now| {
                let mut seen = faultlab_wire::sync::lock(&self.auth_seen);
                let delta = now.since(&seen);
                *seen = now;
                delta
            });
            let surface = surface.as_mut().map(|kept| kept.after_call(&step.call.tool, &args, &observation, listings));
            let seen = StepObservation {
                surface,
                earlier_attempts: attempts,
                responses: self.connection.responses_for(&observation.request_id),
                connection_alive: self.connection.is_alive(),
                anomalies,
                notifications,
                observation,
                auth,
            };
            Ok((seen.observation.outcome, seen))
        })
        .await
    }
}

impl Session for McpSession {
    async fn execute(&self, operation_id: String, step: &PlannedStep, budget: Budget) -> Recording<StepObservation> {
        self.call(Operation::Execute, operation_id, step, budget).await
    }

    async fn observe(&self, operation_id: String, step: &PlannedStep, budget: Budget) -> Recording<StepObservation> {
        self.call(Operation::Observe, operation_id, step, budget).await
    }

    async fn cancel(&self, operation_id: String, budget: Budget) -> Recording<()> {
        timed(self.origin, Operation::Cancel, operation_id, budget, async {
            self.connection.cancel_all("cancelled by the orchestrator").await;
            Ok((Outcome::Success, ()))
        })
        .await
    }

    async fn cleanup(&self, operation_id: String, budget: Budget) -> Recording<()> {
        let record = self
            .cleaned
            .get_or_init(|| async {
                timed(self.origin, Operation::Cleanup, operation_id, budget, async {
                    self.connection.close().await;
                    Ok((Outcome::Success, ()))
                })
                .await
                .record
            })
            .await
            .clone();
        let value = (record.outcome == Outcome::Success).then_some(());
        Recording { record, value }
    }
}
