//! A batch: every (task, agent, repeat), run `jobs` at a time, in a fixed order so a shard of a batch is the same
//! on every machine.

use crate::runner::{self, AgentSpec, RunError, RunRecord, RunSettings, RunSpec};
use crate::task::Task;
use futures::StreamExt as _;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Batch {
    pub tasks: Vec<Arc<Task>>,
    pub agents: Vec<AgentSpec>,
    /// Its shard takes the runs whose task index + agent index + repeat is i modulo n.
    pub settings: RunSettings,
}

impl Batch {
    /// The runs of this batch (this shard's only), in batch order: task, then agent, then repeat.
    pub fn specs(&self) -> Vec<RunSpec> {
        let mut specs = Vec::new();
        for (t, task) in self.tasks.iter().enumerate() {
            for (a, agent) in self.agents.iter().enumerate() {
                for repeat in 0..self.settings.repeat {
                    // Diagonal assignment (task + agent + repeat, modulo n) rather than position modulo n: when n
                    // divides agents × repeats, position would hand each shard the same agents on every task, and
                    // one shard all the slow ones.
                    if self.settings.in_shard(t as u64 + a as u64 + u64::from(repeat)) {
                        specs.push(self.settings.spec(task, agent, repeat, run_dir(&task.id, &agent.label(), repeat)));
                    }
                }
            }
        }
        specs
    }

    /// Runs every spec, `jobs` at a time; `progress(done, total, result)` is called as each run ends. Results come
    /// back in batch order.
    pub async fn run(
        &self,
        progress: impl FnMut(usize, usize, &Result<RunRecord, RunError>),
    ) -> Vec<Result<RunRecord, RunError>> {
        run_specs(self.specs(), self.settings.jobs, progress).await
    }
}

/// The runs of a batch that ended, and, when a stop came first, what stopped it.
pub struct Ended<S> {
    /// The runs that ended, in batch order (all of them when `stopped` is `None`).
    pub results: Vec<Result<RunRecord, RunError>>,
    pub stopped: Option<S>,
}

impl Batch {
    /// As [`Batch::run`], until `stop` resolves (a signal): then no run starts, the runs under way are abandoned
    /// (every process a run started is killed with it) and their folders removed, and the scratch root goes.
    pub async fn run_until<S>(
        &self,
        progress: impl FnMut(usize, usize, &Result<RunRecord, RunError>),
        stop: impl std::future::Future<Output = S>,
    ) -> Ended<S> {
        let ended = run_specs_until(self.specs(), self.settings.jobs, progress, stop).await;
        runner::remove_scratch_root();
        ended
    }
}

/// As [`run_specs_keeping_scratch`], until `stop` resolves; see [`Batch::run_until`].
pub async fn run_specs_until<S>(
    specs: Vec<RunSpec>,
    jobs: usize,
    mut progress: impl FnMut(usize, usize, &Result<RunRecord, RunError>),
    stop: impl std::future::Future<Output = S>,
) -> Ended<S> {
    runner::become_subreaper();
    let total = specs.len();
    let dirs: Vec<std::path::PathBuf> = specs.iter().map(|s| s.dir.clone()).collect();
    let mut results: Vec<Option<Result<RunRecord, RunError>>> = (0..total).map(|_| None).collect();
    let mut stream = futures::stream::iter(specs.into_iter().enumerate())
        .map(|(i, spec)| async move { (i, runner::run(spec).await) })
        .buffer_unordered(jobs.max(1));
    let mut done = 0;
    let mut stop = std::pin::pin!(stop);
    let stopped = loop {
        tokio::select! {
            next = stream.next() => match next {
                Some((i, result)) => {
                    done += 1;
                    progress(done, total, &result);
                    results[i] = Some(result);
                }
                None => break None,
            },
            why = &mut stop => break Some(why),
        }
    };
    // Dropping the runs under way kills what they started (their children are killed on drop; an agent's PID
    // namespace ends with its first process); what they left in their folders is no run's evidence.
    drop(stream);
    if stopped.is_some() {
        for (dir, _) in dirs.iter().zip(&results).filter(|(_, r)| r.is_none()) {
            remove_abandoned(dir);
        }
    }
    Ended { results: results.into_iter().flatten().collect(), stopped }
}

/// Removes an abandoned run's folder. A process of the run still dying may add a file while it goes (the proxy
/// flushing its trajectory): a few attempts, then what is left stays.
fn remove_abandoned(dir: &std::path::Path) {
    for _ in 0..5 {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => std::thread::yield_now(),
            _ => return,
        }
    }
}

/// Runs the given runs, `jobs` at a time; `progress(done, total, result)` is called as each run ends. Results
/// come back in the order given.
pub async fn run_specs(
    specs: Vec<RunSpec>,
    jobs: usize,
    progress: impl FnMut(usize, usize, &Result<RunRecord, RunError>),
) -> Vec<Result<RunRecord, RunError>> {
    let results = run_specs_keeping_scratch(specs, jobs, progress).await;
    runner::remove_scratch_root();
    results
}

/// As [`run_specs`], leaving the scratch root in place for more runs (of other batches running side by side, as
/// `faultlab explore` runs them); the caller removes it with [`runner::remove_scratch_root`] after the last.
pub async fn run_specs_keeping_scratch(
    specs: Vec<RunSpec>,
    jobs: usize,
    mut progress: impl FnMut(usize, usize, &Result<RunRecord, RunError>),
) -> Vec<Result<RunRecord, RunError>> {
    runner::become_subreaper();
    let total = specs.len();
    let mut results: Vec<Option<Result<RunRecord, RunError>>> = (0..total).map(|_| None).collect();
    let mut stream = futures::stream::iter(specs.into_iter().enumerate())
        .map(|(i, spec)| async move { (i, runner::run(spec).await) })
        .buffer_unordered(jobs.max(1));
    let mut done = 0;
    while let Some((i, result)) = stream.next().await {
        done += 1;
        progress(done, total, &result);
        results[i] = Some(result);
    }
    results.into_iter().flatten().collect()
}

/// A run's folder, relative to the report: `runs/<task>/<agent>/<repeat, 1-based>`.
pub fn run_dir(task: &str, agent: &str, repeat: u32) -> String {
    format!("runs/{task}/{agent}/{}", repeat + 1)
}
