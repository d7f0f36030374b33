//! `faultlab explore`: find the faults an agent does not survive, with no rules written by hand.
//!
//! After the service-level fault injection of Filibuster and the lineage-driven fault injection of LDFI:
//! 1. a **healthy run** (the task without its faults), through the proxy, graded as `eval` grades; a healthy run
//!    that fails ends the exploration, there is nothing to explore;
//! 2. **synthesis** ([`synth`]): each healthy tool call ("the nth call to tool T"; with `--protocol-sites` also
//!    each `initialize` and `tools/list`) × each [`FaultClass`] that applies to it × every catalogue fault of the
//!    class whose own `apply` acts on the healthy reply there ([`class::FaultClass::members`]; `--quick`: the
//!    class's representative alone); everything left out is listed with the reason;
//!    For a task with a model, each request of the healthy run to it is a site too, with the model class
//!    ([`model_sites`]), its variants' faults put in the run's model rules;
//! 3. **beyond single faults** ([`search`]): sets of up to three faults, each a survived smaller set extended at
//!    a call its own run depended on (recovery calls included), never past a failing set; `--exhaustive` as the
//!    baseline; a budget;
//! 4. **runs**: each variant is an eval run whose rules are the variant's faults, `jobs` at a time, `repeat` times
//!    (pass^k), sharded by variant; judged survives, degrades or breaks ([`verdict`]);
//! 5. the **report** ([`report`]): what to harden first (sites ranked by harm, then by minimal failing sets), the
//!    resilience map, the faults of one class that disagreed, the minimal failing sets per failure mode, and a
//!    reproducer per breaking variant; with `--from-trajectory`, a recorded failure's faults shrunk to the
//!    smallest set that reproduces its failure mode instead of 2 and 3.
//!
//! Its own crate over `faultlab-eval`: it runs variants as eval runs (eval's runner, batches and grader) and adds
//! synthesis, classes, the survive / degrade / break assessment, the report and the controls' explore oracle
//! ([`oracle`], compiled in from `examples/eval/explore-oracle.yaml` through the `builtin` link); eval knows
//! nothing of it.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod class;
pub mod model_sites;
pub mod oracle;
mod page;
pub mod report;
pub mod search;
pub mod synth;
pub mod verdict;

pub use class::FaultClass;
use faultlab_engine::trajectory::Trajectory;
use faultlab_eval::batch;
use faultlab_eval::evidence;
use faultlab_eval::oracle::{LayerName, failing_layers};
use faultlab_eval::runner::{AgentSpec, RunError, RunRecord, RunSettings, RunSpec};
use faultlab_eval::task::Task;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;
pub use synth::{CallFacts, Planned, Pruned, Site, Variant};
pub use verdict::{Assessment, assess, describe};
use verdict::{evidence_of, failure_mode};

/// One exploration's settings: one task, one agent.
#[derive(Debug, Clone)]
pub struct Explore {
    pub task: Arc<Task>,
    pub agent: AgentSpec,
    pub classes: Vec<FaultClass>,
    /// Only each class's representative (`--quick`), not every catalogue fault of the class.
    pub quick: bool,
    /// The protocol's own requests (`initialize`, `tools/list`) are sites too, after the tool calls.
    pub protocol_sites: bool,
    /// `--from-trajectory`: the faults a recorded failing run met, by the nth call of their tool; the exploration
    /// then shrinks them to the smallest set that reproduces the failure mode they cause, instead of synthesising.
    pub recorded: Option<Vec<(search::CallKey, Planned)>>,
    /// 1: single faults; 2 and 3: also sets of that many faults at different calls, found by the search.
    pub max_faults: u8,
    /// Every combination of faults up to `max_faults` (the baseline the search is measured against).
    pub exhaustive: bool,
    /// Most variant runs (repeats included), if limited.
    pub budget: Option<usize>,
    /// `out` is the report's folder: runs go to `runs/<task>/<agent>.<variant>/<repeat>` and reproducers to
    /// `repro/<task>/<agent>/<variant>` in it; the shard takes variants by number (every shard runs the healthy run).
    pub settings: RunSettings,
}

/// What one exploration found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Exploration {
    pub task: String,
    pub agent: String,
    /// The agent's command line as started (its program and script made absolute; see `runner::anchor`); a
    /// control agent's is `faultlab agent NAME`.
    #[serde(default)]
    pub command: Vec<String>,
    /// The seed of repeat 1 (repeat r uses seed + r).
    pub seed: u64,
    pub healthy: Healthy,
    /// The healthy run's tool calls, as the variants name them.
    pub calls: Vec<Site>,
    /// Per healthy call: its result reached the outcome (pairs only fault such calls).
    pub lineage: Vec<bool>,
    pub classes: Vec<FaultClass>,
    /// Each class was tried by its representative alone (`--quick`); else by every catalogue fault of the class
    /// that applies at the call.
    #[serde(default)]
    pub quick: bool,
    /// The largest fault set tried (`--max-faults`): 1, single faults only.
    #[serde(default = "one")]
    pub max_faults: u8,
    pub variants: Vec<VariantResult>,
    pub pruned: Vec<Pruned>,
    /// `--from-trajectory`: the variant holding the smallest fault set that reproduces the recorded run's failure
    /// mode (that of all its faults replayed together), if they reproduce one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduced: Option<String>,
}

fn one() -> u8 {
    1
}

/// The healthy run (every repeat): its verdict, and why it failed when it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Healthy {
    pub passed: bool,
    pub runs: u32,
    /// The verdict in words (`recovered by not-applicable`, or `failed its grade: …`).
    pub verdict: String,
    /// The run folders, relative to the report.
    pub dirs: Vec<String>,
}

/// One variant, run `repeat` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VariantResult {
    pub id: String,
    pub faults: Vec<FaultRecord>,
    pub runs: u32,
    pub passed: u32,
    /// A repeat failed with damage, a false claim, a hang, a crash, or work lost that the evidence shows was
    /// recoverable ([`Assessment::Breaks`]): the agent does not survive these faults.
    pub broke: bool,
    /// No repeat broke, but one failed honestly: it reported failure with nothing broken
    /// ([`Assessment::Degrades`]).
    #[serde(default)]
    pub degraded: bool,
    /// Every fault of the variant fired in every repeat (a fault at a call the agent no longer makes does not).
    pub fired: bool,
    /// The verdict of the first breaking (else degrading, else first) repeat, in words.
    pub verdict: String,
    /// The failure mode of a breaking or degrading variant: its recovery outcome and failing layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing_layers: Vec<LayerName>,
    /// The failed checks of the repeat shown, each with where its evidence is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    pub dirs: Vec<String>,
    /// How to replay a breaking or degrading variant with `faultlab eval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproducer: Option<report::Reproducer>,
    /// A repeat could not run (its set-up failed): not a verdict on the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One fault of a variant, as `report.json` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FaultRecord {
    /// Position of the call in the healthy run: 0-based here, counted from 1 (`#1`) in `report.json`.
    #[serde(with = "faultlab_eval::one_based")]
    #[schemars(with = "usize")]
    pub call: usize,
    pub tool: String,
    /// The nth call to `tool` the fault hits (1-based).
    pub nth: u64,
    pub class: FaultClass,
    /// The catalogue fault on the wire.
    pub fault: String,
    pub mode: faultlab_engine::rules::Mode,
    /// When it strikes (`after-first-write`: at the first tool call after the first write, whichever tool);
    /// absent for the nth call to `tool`.
    #[serde(default, skip_serializing_if = "synth::Timing::is_nth")]
    pub timing: synth::Timing,
}

impl FaultRecord {
    fn of(planned: &Planned) -> Self {
        Self {
            call: planned.site.call,
            tool: planned.site.tool.clone(),
            nth: planned.site.nth,
            class: planned.class,
            fault: planned.fault.clone(),
            mode: planned.member(1500).mode,
            timing: planned.timing,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("the healthy run's evidence {path}: {message}")]
    Evidence { path: String, message: String },
}

impl Explore {
    /// The task as the healthy run and a variant run it: its own faults replaced by `rules`, and the goal as the
    /// expected end. A task's `expected_outcome` is written for its own fault (a write always forbidden makes an
    /// honest abort the right end); without that fault, or under a variant's one-off fault, the goal is within
    /// reach, so these runs are graded on the goal and the policies (`recovered`).
    /// A task's model keeps its script and loses its own faults too: the healthy run has none on either hop.
    pub(crate) fn task_with(&self, rules: Vec<faultlab_engine::rules::Rule>) -> Arc<Task> {
        let mut task = self.task.as_ref().clone();
        task.faults = rules;
        task.recovery.expected_outcome = faultlab_eval::task::RecoveryOutcome::Recovered;
        if let Some(model) = &mut task.model {
            model.faults.clear();
        }
        Arc::new(task)
    }

    /// The task as `variant` runs it: its MCP faults as the task's rules, its model faults (at model sites) as the
    /// model's.
    pub(crate) fn task_for(&self, variant: &Variant) -> Arc<Task> {
        let task = self.task_with(variant.rules(self.deadline_ms()));
        let model_rules = variant.model_rules(self.deadline_ms());
        if model_rules.is_empty() {
            return task;
        }
        let mut task = task.as_ref().clone();
        if let Some(model) = &mut task.model {
            model.faults = model_rules;
        }
        Arc::new(task)
    }

    /// The agent's command line as every run starts it.
    pub(crate) fn agent_command(&self) -> Vec<String> {
        match &self.agent {
            AgentSpec::Control(agent) => {
                vec![self.settings.faultlab.display().to_string(), "agent".into(), agent.name().into()]
            }
            AgentSpec::Named { command, .. } | AgentSpec::Command(command) => command.clone(),
        }
    }

    /// The deadline of every run of this exploration, in milliseconds (`--deadline-ms`, else the task's).
    fn deadline_ms(&self) -> u64 {
        self.settings.deadline_ms.unwrap_or(self.task.deadline_ms)
    }

    fn seed(&self) -> u64 {
        self.settings.seed_of(&self.task)
    }

    /// `runs/<task>/<agent>.<name>/<repeat>`, relative to the report: as deep as eval's `runs/<task>/<agent>/<repeat>`,
    /// since the runner hides from every agent the runs folder three levels above a run's.
    fn report_dir(&self, name: &str, repeat: u32) -> String {
        format!("runs/{}/{}.{name}/{}", self.task.id, self.agent.label(), repeat + 1)
    }

    fn specs(&self, task: &Arc<Task>, name: &str) -> Vec<RunSpec> {
        (0..self.repeats())
            .map(|repeat| self.settings.spec(task, &self.agent, repeat, self.report_dir(name, repeat)))
            .collect()
    }

    /// Repeats per variant: at least one.
    fn repeats(&self) -> u32 {
        self.settings.repeat.max(1)
    }

    /// Runs the exploration; `progress(line)` is told of each phase.
    pub async fn run(&self, mut progress: impl FnMut(&str)) -> Result<Exploration, ExploreError> {
        let mut exploration = Exploration {
            task: self.task.id.clone(),
            agent: self.agent.label(),
            command: self.agent_command(),
            seed: self.seed(),
            healthy: Healthy { passed: false, runs: 0, verdict: String::new(), dirs: Vec::new() },
            calls: Vec::new(),
            lineage: Vec::new(),
            classes: self.classes.clone(),
            quick: self.quick,
            max_faults: self.max_faults,
            variants: Vec::new(),
            pruned: Vec::new(),
            reproduced: None,
        };
        progress(&format!("{} × {}: healthy run", exploration.task, exploration.agent));
        let healthy = self.task_with(Vec::new());
        let runs =
            batch::run_specs_keeping_scratch(self.specs(&healthy, "healthy"), self.settings.jobs, |_, _, _| {}).await;
        let runs = runs.into_iter().collect::<Result<Vec<RunRecord>, RunError>>()?;
        let failed = runs.iter().find(|r| r.error.is_some() || !r.verdict.passed);
        exploration.healthy = Healthy {
            passed: failed.is_none(),
            runs: runs.len() as u32,
            verdict: describe(failed.unwrap_or(&runs[0])),
            dirs: runs.iter().map(|r| r.dir.clone()).collect(),
        };
        if failed.is_some() {
            return Ok(exploration);
        }
        let facts = self.facts(&runs[0])?;
        let claim = runs[0].claim.as_ref().map(|c| format!("{} {}", c.message, c.answer.as_deref().unwrap_or("")));
        exploration.calls = synth::sites(&facts);
        let known = format!("{}\n{}", self.task.goal, self.task.description.as_deref().unwrap_or_default());
        exploration.lineage = synth::lineage(&facts, claim.as_deref().unwrap_or(""), &known);

        if let Some(recorded) = &self.recorded {
            self.shrink(recorded, &mut exploration, &mut progress).await?;
            return Ok(exploration);
        }
        // The model class acts only at the model's requests (`model_sites`), the others only on the MCP wire.
        let mcp_classes: Vec<FaultClass> = self.classes.iter().copied().filter(|c| *c != FaultClass::Model).collect();
        let (mut singles, mut pruned) =
            synth::singles_on(&facts, &mcp_classes, self.quick, synth::Front::of(&self.task));
        let (timed, why) = synth::after_first_write(&facts, &singles);
        let (resuming, not_resumed) = synth::at_resume(&singles, self.quick);
        singles.extend(timed);
        singles.extend(resuming);
        pruned.extend(why);
        pruned.extend(not_resumed);
        let (model, why) = model_sites::explore_sites(self, &runs[0], &mut exploration)?;
        singles.extend(model);
        pruned.extend(why);
        let sets = singles.into_iter().map(|p| vec![p]).collect();
        let variants = synth::number(sets, 0, self.budget, self.settings.repeat, &mut pruned);
        let mut numbered = variants.len();
        let mut tried: Vec<search::Tried> = Vec::new();
        let healthy: BTreeSet<search::CallKey> = exploration.calls.iter().map(search::key).collect();
        for (result, support) in self.run_variants(variants, &mut progress).await? {
            let support = support.map(|s| recovering(s, &healthy));
            tried.push(self.tried(&result, &exploration.calls, support, &exploration.lineage));
            exploration.variants.push(result);
        }
        if self.max_faults >= 2 {
            let (_, more) = synth::pairs(&facts, &[], &exploration.lineage);
            pruned.extend(more);
        }
        // One fault per call and class (the first, the representative when it ran): sets of every member would
        // multiply the singles. The search extends a survived set by a survived single's fault; `--exhaustive`
        // combines every single's.
        let mut universe: Vec<Planned> = Vec::new();
        for t in tried.iter().filter(|t| self.exhaustive || (!t.failed && t.support.is_some())) {
            let planned = &t.faults[0];
            if !universe.iter().any(|s| (s.site.call, s.class) == (planned.site.call, planned.class)) {
                universe.push(planned.clone());
            }
        }
        for k in 2..=usize::from(self.max_faults) {
            // A recovery call a survived run made (a retry: the second call to a tool the healthy run called
            // once) is a site too: each class's representative there, combined by the search (never alone: it
            // exists only under the fault that caused the recovery).
            for t in tried.iter().filter(|t| t.faults.len() + 1 == k) {
                for site in t.support.iter().flatten() {
                    if exploration.calls.iter().any(|c| search::key(c) == *site) {
                        continue;
                    }
                    let new = search::site_of(site, exploration.calls.len());
                    match model_sites::is_model(&new) {
                        true => universe.push(model_sites::representative_at(&new)),
                        false => {
                            universe.extend(synth::representatives_at(&new, &mcp_classes, synth::Front::of(&self.task)))
                        }
                    }
                    exploration.calls.push(new);
                    exploration.lineage.push(true);
                }
            }
            let sets = match self.exhaustive {
                true => search::combinations(&universe, k),
                false => search::next_level(&tried, &universe, k),
            };
            let variants = synth::number(sets, numbered, self.budget, self.settings.repeat, &mut pruned);
            numbered += variants.len();
            for (result, support) in self.run_variants(variants, &mut progress).await? {
                let support = support.map(|s| recovering(s, &healthy));
                tried.push(self.tried(&result, &exploration.calls, support, &[]));
                exploration.variants.push(result);
            }
        }
        exploration.pruned = pruned;
        Ok(exploration)
    }

    /// `--from-trajectory`: replays every recorded fault, then removes one at a time while the run still fails
    /// the same way (delta debugging, one fault a step), within the budget. The sites are the healthy run's where
    /// it made the same call, else added after them.
    async fn shrink(
        &self,
        recorded: &[(search::CallKey, Planned)],
        exploration: &mut Exploration,
        progress: &mut impl FnMut(&str),
    ) -> Result<(), ExploreError> {
        let mut current: Vec<Planned> = Vec::new();
        for (key, planned) in recorded {
            let site = match exploration.calls.iter().find(|c| search::key(c) == *key) {
                Some(site) => site.clone(),
                None => {
                    let site = search::site_of(key, exploration.calls.len());
                    exploration.calls.push(site.clone());
                    exploration.lineage.push(true);
                    site
                }
            };
            current.push(Planned { site, ..planned.clone() });
        }
        current.sort();
        let mut numbered = 0;
        let run = |set: Vec<Planned>, numbered: &mut usize| {
            let mut pruned = Vec::new();
            let variants = synth::number(vec![set], *numbered, self.budget, self.settings.repeat, &mut pruned);
            *numbered += variants.len();
            (variants, pruned)
        };
        let (variants, pruned) = run(current.clone(), &mut numbered);
        exploration.pruned.extend(pruned);
        let Some((first, _)) = self.run_variants(variants, progress).await?.into_iter().next() else { return Ok(()) };
        let target = first.failure_mode.clone().filter(|_| first.broke || first.degraded);
        let mut smallest = first.id.clone();
        exploration.variants.push(first);
        let Some(target) = target else {
            exploration.pruned.push(Pruned {
                what: "shrinking the recorded faults".into(),
                why: "replayed together they do not make the agent fail: nothing to reproduce".into(),
            });
            return Ok(());
        };
        'shrink: while current.len() > 1 {
            for i in 0..current.len() {
                let mut smaller = current.clone();
                smaller.remove(i);
                let (variants, pruned) = run(smaller.clone(), &mut numbered);
                if variants.is_empty() {
                    exploration.pruned.extend(pruned);
                    break 'shrink;
                }
                let Some((result, _)) = self.run_variants(variants, progress).await?.into_iter().next() else {
                    break 'shrink;
                };
                let same = (result.broke || result.degraded) && result.failure_mode.as_deref() == Some(&target);
                if same {
                    smallest = result.id.clone();
                }
                exploration.variants.push(result);
                if same {
                    current = smaller;
                    continue 'shrink;
                }
            }
            break;
        }
        exploration.reproduced = Some(smallest);
        Ok(())
    }

    /// A variant's verdict as the search reads it: failed when it broke the agent; its support when every repeat
    /// survived.
    fn tried(
        &self,
        result: &VariantResult,
        calls: &[Site],
        support: Option<BTreeSet<search::CallKey>>,
        healthy_lineage: &[bool],
    ) -> search::Tried {
        // A single is relevant at a call of the healthy lineage; a larger set was built at a call its parent's
        // run depended on.
        let relevant = result.faults.len() > 1
            || result.faults.iter().all(|f| healthy_lineage.get(f.call).copied().unwrap_or(true));
        search::Tried {
            relevant,
            faults: result.faults.iter().map(|f| planned_of(f, calls)).collect(),
            failed: result.broke,
            support: match result.broke || result.degraded || result.error.is_some() {
                true => None,
                false => support,
            },
        }
    }

    /// A run's calls, each named as the nth call to its tool, with whether it is in the run's lineage (writes,
    /// and calls whose results reached a later call or the claim).
    fn support(&self, run: &RunRecord) -> Result<Vec<(search::CallKey, bool)>, ExploreError> {
        let facts = self.facts(run)?;
        let claim = run.claim.as_ref().map(|c| format!("{} {}", c.message, c.answer.as_deref().unwrap_or("")));
        let known = format!("{}\n{}", self.task.goal, self.task.description.as_deref().unwrap_or_default());
        let lineage = synth::lineage(&facts, claim.as_deref().unwrap_or(""), &known);
        let mut support: Vec<(search::CallKey, bool)> =
            synth::sites(&facts).iter().zip(lineage).map(|(s, l)| (search::key(s), l)).collect();
        support.extend(model_sites::support(self, run)?.into_iter().map(|key| (key, true)));
        Ok(support)
    }

    async fn run_variants(
        &self,
        variants: Vec<Variant>,
        progress: &mut impl FnMut(&str),
    ) -> Result<Vec<(VariantResult, Option<Vec<(search::CallKey, bool)>>)>, ExploreError> {
        let mine: Vec<Variant> = variants
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.settings.in_shard(*i as u64))
            .map(|(_, v)| v)
            .collect();
        let mut specs = Vec::new();
        for variant in &mine {
            specs.extend(self.specs(&self.task_for(variant), &variant.id));
        }
        let total = specs.len();
        // Counts agree with their nouns ("1 run"), as everywhere the binary prints one.
        let count = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        progress(&format!(
            "{} × {}: {}, {}",
            self.task.id,
            self.agent.label(),
            count(mine.len(), "variant", "variants"),
            count(total, "run", "runs")
        ));
        let mut results = batch::run_specs_keeping_scratch(specs, self.settings.jobs, |_, _, _| {}).await.into_iter();
        let mut out = Vec::new();
        for variant in mine {
            let runs: Vec<Result<RunRecord, RunError>> = results.by_ref().take(self.repeats() as usize).collect();
            let first = runs.first().and_then(|r| r.as_ref().ok()).filter(|r| r.error.is_none()).cloned();
            let result = self.result(variant, runs)?;
            let survived = !result.broke && !result.degraded && result.error.is_none();
            let support = match (survived && self.max_faults >= 2, first) {
                (true, Some(run)) => Some(self.support(&run)?),
                _ => None,
            };
            out.push((result, support));
        }
        Ok(out)
    }

    fn result(&self, variant: Variant, runs: Vec<Result<RunRecord, RunError>>) -> Result<VariantResult, ExploreError> {
        let runs = runs.into_iter().collect::<Result<Vec<RunRecord>, RunError>>()?;
        let error = runs.iter().find_map(|r| r.error.clone());
        let graded: Vec<(&RunRecord, Assessment)> =
            runs.iter().filter(|r| r.error.is_none()).map(|r| (r, assess(r))).collect();
        let passed = graded.iter().filter(|(_, a)| *a == Assessment::Survives).count() as u32;
        let first = |wanted: Assessment| graded.iter().find(|(_, a)| *a == wanted).map(|(r, _)| *r);
        let failing = first(Assessment::Breaks).or_else(|| first(Assessment::Degrades));
        let shown = failing.unwrap_or(&runs[0]);
        let broke = first(Assessment::Breaks).is_some();
        let degraded = !broke && failing.is_some();
        let fired = runs.iter().all(|r| {
            let fired = &r.faults_fired;
            // The proxy's trajectory records a stream fault on the request it armed (the reply is written with its
            // delivery, not as faulted): its rule's name on a recorded frame is the evidence it fired.
            let trajectory = match variant.faults.iter().any(|f| f.class == FaultClass::Stream) {
                true => {
                    std::fs::read_to_string(self.settings.out.join(&r.dir).join("trajectory.jsonl")).unwrap_or_default()
                }
                false => String::new(),
            };
            variant.faults.iter().all(|f| {
                if model_sites::is_model(&f.site) {
                    return model_sites::fired(r, &f.rule(self.deadline_ms()).name);
                }
                let rule = serde_json::to_string(&f.rule(self.deadline_ms()).name).unwrap_or_default();
                // As the trajectory names it (`auth_expired` fires as `http_status`).
                fired.iter().any(|name| name == f.member(self.deadline_ms()).fault.name())
                    || (f.class == FaultClass::Stream && trajectory.contains(&format!(r#""rule":{rule}"#)))
            })
        });
        let reproducer = match failing.is_some() {
            true => Some(report::reproducer(self, &variant).map_err(|e| ExploreError::Evidence {
                path: self.settings.out.join("repro").display().to_string(),
                message: e.to_string(),
            })?),
            false => None,
        };
        Ok(VariantResult {
            id: variant.id.clone(),
            faults: variant.faults.iter().map(FaultRecord::of).collect(),
            runs: runs.len() as u32,
            passed,
            broke,
            degraded,
            fired,
            verdict: describe(shown),
            failure_mode: failing.map(failure_mode),
            failing_layers: failing.map(failing_layers).unwrap_or_default(),
            evidence: failing.map(evidence_of).unwrap_or_default(),
            dirs: runs.iter().map(|r| r.dir.clone()).collect(),
            reproducer,
            error,
        })
    }

    /// The healthy run's calls, with their recorded replies and whether they wrote (by the ledger when the
    /// built-in server kept one, else by whether the server executed them).
    fn facts(&self, run: &RunRecord) -> Result<Vec<CallFacts>, ExploreError> {
        let dir = self.settings.out.join(&run.dir);
        let path = dir.join("trajectory.jsonl");
        let bad = |message: String| ExploreError::Evidence { path: path.display().to_string(), message };
        let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
        let trajectory = Trajectory::parse(&text).map_err(|e| bad(e.to_string()))?;
        let ledger = match std::fs::read_to_string(dir.join("ledger.jsonl")) {
            Ok(text) => Some(evidence::ledger(&text).map_err(|e| bad(e.to_string()))?),
            Err(_) => None,
        };
        // A request the authorization refused (`--auth`) never reached the proxy's rules, which count a site's
        // calls by tool: it is no site.
        let reached = |e: &faultlab_engine::trajectory::Exchange<'_>| e.refused().is_none();
        let protocol = trajectory
            .exchanges()
            .into_iter()
            .filter(|e| reached(e) && self.protocol_sites && PROTOCOL_SITES.contains(&e.method()));
        let protocol: Vec<CallFacts> = protocol
            .map(|e| CallFacts {
                tool: e.method().to_owned(),
                arguments: serde_json::Value::Null,
                reply: e.recorded_reply().map(|r| r.to_string()),
                wrote: false,
                error: e.error(),
                method: Some(e.method().to_owned()),
            })
            .collect();
        Ok(trajectory
            .tool_calls()
            .iter()
            .filter(|e| reached(e))
            .map(|exchange| {
                let tool = exchange.tool().unwrap_or_default().to_owned();
                let arguments = exchange.arguments().cloned().unwrap_or_default();
                let wrote = match &ledger {
                    Some(ledger) => {
                        ledger.iter().any(|e| e.ok && e.tool == tool && arguments_name(&arguments, &e.path))
                    }
                    None => exchange.executed().unwrap_or(true),
                };
                CallFacts {
                    reply: exchange.recorded_reply().map(|r| r.to_string()),
                    wrote,
                    error: exchange.error(),
                    tool,
                    arguments,
                    method: None,
                }
            })
            .chain(protocol)
            .collect())
    }
}

/// What a survived run's success depended on: its lineage, and every recovery call (one the healthy run did not
/// make): a check read after a lost reply carries no new value, yet its answer decided whether to write again.
fn recovering(calls: Vec<(search::CallKey, bool)>, healthy: &BTreeSet<search::CallKey>) -> BTreeSet<search::CallKey> {
    calls.into_iter().filter(|(key, in_lineage)| *in_lineage || !healthy.contains(key)).map(|(key, _)| key).collect()
}

/// The protocol requests `--protocol-sites` faults: the session's start and the tool list (where the tool-surface
/// faults act: `list_drift`, `broken_pagination`, `page_error`, `output_schema_violation`).
const PROTOCOL_SITES: [&str; 2] = ["initialize", "tools/list"];

/// Runs the explorations, `side_by_side` at a time (each with its own `jobs`), in the order given; the runs'
/// scratch root is removed after the last.
pub async fn run_all(
    explores: Vec<Explore>,
    side_by_side: usize,
    progress: impl Fn(&str) + Copy,
    ended: &Ended,
) -> Vec<Result<Exploration, ExploreError>> {
    use futures::StreamExt as _;
    *faultlab_wire::sync::lock(ended) = vec![None; explores.len()];
    let results = futures::stream::iter(explores.into_iter().enumerate())
        .map(|(i, explore)| async move {
            let found = explore.run(progress).await;
            if let Ok(exploration) = &found {
                faultlab_wire::sync::lock(ended)[i] = Some(exploration.clone());
            }
            found
        })
        .buffered(side_by_side.max(1))
        .collect()
        .await;
    faultlab_eval::runner::remove_scratch_root();
    results
}

/// The explorations of [`run_all`] that have ended, each in its place: what a report keeps when a signal stops
/// the others.
pub type Ended = std::sync::Mutex<Vec<Option<Exploration>>>;

/// Whether the call's arguments name `path` (the ledger's workspace-relative path).
fn arguments_name(arguments: &serde_json::Value, path: &str) -> bool {
    match arguments {
        serde_json::Value::String(s) => s.trim_start_matches("./") == path,
        serde_json::Value::Object(map) => map.values().any(|v| arguments_name(v, path)),
        serde_json::Value::Array(items) => items.iter().any(|v| arguments_name(v, path)),
        _ => false,
    }
}

fn planned_of(record: &FaultRecord, calls: &[Site]) -> Planned {
    Planned {
        site: calls[record.call].clone(),
        class: record.class,
        fault: record.fault.clone(),
        timing: record.timing,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::verdict::tests::{aborted, faulted};
    use super::*;
    use faultlab_engine::catalogue::Effect;
    use faultlab_eval::agent::ControlAgent;
    use faultlab_eval::evidence::ToolCall;
    use faultlab_eval::task::{Category, RecoveryOutcome};
    use serde_json::Value;
    use std::path::Path;

    /// A graded run of `task` by `agent` (repeat counted from 0) that passed or failed every layer, with no calls.
    pub(crate) fn record(task: &str, agent: &str, repeat: u32, category: Category, passed: bool) -> RunRecord {
        RunRecord::sample(task, agent, repeat, category, passed)
    }

    /// The good control agent explored under the error class alone.
    fn good(task: faultlab_eval::task::Task, settings: RunSettings) -> Explore {
        Explore {
            task: Arc::new(task),
            agent: AgentSpec::Control(ControlAgent::Good),
            classes: vec![FaultClass::Error],
            quick: false,
            protocol_sites: false,
            recorded: None,
            max_faults: 1,
            exhaustive: false,
            budget: None,
            settings,
        }
    }

    #[test]
    fn a_variant_breaks_when_any_repeat_fails_but_not_by_its_strategy_alone() {
        let dir = tempfile::tempdir().unwrap();
        let task =
            faultlab_eval::builtin::tasks().into_iter().find(|t| t.id == "transport-timeout-after-write").unwrap();
        let explore = good(task, RunSettings { repeat: 2, ..RunSettings::new(dir.path().into(), "faultlab".into()) });
        // Every run's folder lies where the runner hides the whole runs folder (three levels up) from the agents.
        let specs = explore.specs(&explore.task, "v001");
        assert_eq!(specs.len(), 2);
        for spec in &specs {
            assert_eq!(spec.dir.ancestors().nth(3), Some(dir.path().join("runs").as_path()), "{}", spec.dir.display());
        }
        let site = Site { call: 1, tool: "write_file".into(), nth: 1, method: None };
        let variant = Variant { id: "v001".into(), faults: vec![Planned::of(site, FaultClass::Error)] };
        let pass = record("t", "good", 0, Category::Transport, true);
        let mut fail = record("t", "good", 1, Category::Transport, false);
        fail.verdict.recovery.outcome = RecoveryOutcome::FalseRecovery;
        // pass^k: one breaking repeat of two breaks the agent, with a reproducer written beside the report.
        let r = explore.result(variant.clone(), vec![Ok(pass.clone()), Ok(fail)]).unwrap();
        assert_eq!((r.broke, r.degraded, r.runs, r.passed), (true, false, 2, 1));
        assert_eq!(r.failure_mode.as_deref(), Some("false-recovery: outcome, safety, recovery, side_effects"));
        let repro = r.reproducer.unwrap();
        assert!(Path::new(&repro.task_file).exists() && repro.command.contains("--repeat 2 "), "{repro:?}");
        // The reproducer's task expects the goal, whatever the task's own fault made it expect.
        let task: Value = serde_json::from_str(&std::fs::read_to_string(&repro.task_file).unwrap()).unwrap();
        assert_eq!(task["recovery"]["expected_outcome"], "recovered");
        // An honest failure in one repeat: the variant degrades the agent, with a reproducer too.
        let honest = aborted(ToolCall { effect: Some(Effect::TransportLoss), reply_index: None, ..faulted() });
        let r = explore.result(variant.clone(), vec![Ok(pass.clone()), Ok(honest)]).unwrap();
        assert_eq!((r.broke, r.degraded, r.passed), (false, true, 1));
        assert!(r.reproducer.is_some() && r.failure_mode.as_deref().unwrap().starts_with("aborted-safely"));
        // The expected outcome, reached by a strategy the task does not list: survived.
        let mut strategy_only = pass.clone();
        strategy_only.verdict.passed = false;
        strategy_only.verdict.recovery.passed = false;
        let r = explore.result(variant, vec![Ok(pass), Ok(strategy_only)]).unwrap();
        assert_eq!((r.broke, r.degraded, r.passed, r.reproducer), (false, false, 2, None));
    }

    #[test]
    fn a_recovery_call_is_support_even_when_its_answer_carries_nothing_new() {
        let key = |tool: &str, nth: u64| (tool.to_owned(), nth);
        let healthy: BTreeSet<search::CallKey> = [key("read_file", 1), key("list_dir", 1)].into();
        // The write timed out after executing; the agent read the file to check (nothing new in it) and stopped.
        let run = vec![
            (key("read_file", 1), true),
            (key("list_dir", 1), false),
            (key("write_file", 1), true),
            (key("read_file", 2), false),
        ];
        let support = recovering(run, &healthy);
        assert_eq!(support, [key("read_file", 1), key("write_file", 1), key("read_file", 2)].into());
    }

    #[test]
    fn the_healthy_and_variant_runs_of_a_task_expecting_an_honest_abort_expect_the_goal() {
        let task =
            faultlab_eval::builtin::tasks().into_iter().find(|t| t.id == "authorization-forbidden-write").unwrap();
        assert_eq!(task.recovery.expected_outcome, RecoveryOutcome::AbortedSafely);
        let dir = tempfile::tempdir().unwrap();
        let explore = good(task, RunSettings::new(dir.path().into(), "faultlab".into()));
        let healthy = explore.task_with(Vec::new());
        assert!(healthy.faults.is_empty());
        assert_eq!(healthy.recovery.expected_outcome, RecoveryOutcome::Recovered);
        // The goal and the policies are the task's own.
        assert_eq!((&healthy.goal, &healthy.grader), (&explore.task.goal, &explore.task.grader));
    }
}
