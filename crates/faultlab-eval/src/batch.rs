//! A batch: every (task, agent, repeat), run `jobs` at a time, in a fixed order so a shard of a batch is the same
//! on every machine.

use crate::runner::{self, AgentSpec, RunError, RunRecord, RunSpec};
use crate::task::Task;
use futures::StreamExt as _;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Batch {
    pub tasks: Vec<Arc<Task>>,
    pub agents: Vec<AgentSpec>,
    pub repeat: u32,
    /// Overrides every task's seed; repeat r of a run uses seed + r.
    pub seed: Option<u64>,
    pub jobs: usize,
    pub out: PathBuf,
    pub keep_workspaces: bool,
    pub faultlab: PathBuf,
    /// `(i, n)`: run only the runs whose index in the batch order is i modulo n (0-based i).
    pub shard: Option<(u32, u32)>,
    pub deadline_ms: Option<u64>,
}

impl Batch {
    /// The runs of this batch (this shard's only), in batch order: task, then agent, then repeat.
    pub fn specs(&self) -> Vec<RunSpec> {
        let mut specs = Vec::new();
        let mut index = 0u32;
        for task in &self.tasks {
            for agent in &self.agents {
                for repeat in 0..self.repeat {
                    let mine = self.shard.is_none_or(|(i, n)| index % n == i);
                    index += 1;
                    if !mine {
                        continue;
                    }
                    let seed = self.seed.or(task.seed).unwrap_or(0).wrapping_add(u64::from(repeat));
                    let dir = self.out.join("runs").join(&task.id).join(agent.label()).join((repeat + 1).to_string());
                    specs.push(RunSpec {
                        task: task.clone(),
                        agent: agent.clone(),
                        repeat,
                        seed,
                        dir,
                        keep_workspace: self.keep_workspaces,
                        faultlab: self.faultlab.clone(),
                        deadline_ms: self.deadline_ms,
                    });
                }
            }
        }
        specs
    }

    /// Runs every spec, `jobs` at a time; `progress(done, total, result)` is called as each run ends. Results come
    /// back in batch order.
    pub async fn run(
        &self,
        mut progress: impl FnMut(usize, usize, &Result<RunRecord, RunError>),
    ) -> Vec<Result<RunRecord, RunError>> {
        runner::become_subreaper();
        let specs = self.specs();
        let total = specs.len();
        let mut results: Vec<Option<Result<RunRecord, RunError>>> = (0..total).map(|_| None).collect();
        let mut stream = futures::stream::iter(specs.into_iter().enumerate())
            .map(|(i, spec)| async move { (i, runner::run(spec).await) })
            .buffer_unordered(self.jobs.max(1));
        let mut done = 0;
        while let Some((i, result)) = stream.next().await {
            done += 1;
            progress(done, total, &result);
            results[i] = Some(result);
        }
        results.into_iter().flatten().collect()
    }
}
