//! The exploration report: `report.json` (every variant with its faults and verdict), `report.md` and
//! `report.html` (the resilience map, calls × fault classes; the breaking variants with their failing layers and
//! evidence; the minimal failing sets per failure mode; a reproducer per breaking variant), and the shards of an
//! exploration joined into one. The HTML page is `page.rs`'s.

use super::{Exploration, Explore, FaultClass, Site, Variant, VariantResult};
use faultlab_engine::rules::RulesFile;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExploreReport {
    /// Always `explore`: tells this report from an eval report (`faultlab report merge` reads both).
    pub kind: String,
    pub meta: Meta,
    /// The shard this report covers (`faultlab explore --shard I/N`); absent for a whole exploration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<faultlab_eval::merge::Shard>,
    /// The shard reports `faultlab report merge` joined into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
    /// Why the exploration stopped before every one of its explorations ended (a signal); only the explorations
    /// that ended are in the report. Absent for a whole exploration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    pub explorations: Vec<Exploration>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Meta {
    pub faultlab: String,
    pub repeat: u32,
    pub max_faults: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
    pub jobs: usize,
    /// Wall time, in milliseconds (merged: the longest shard's).
    pub wall_ms: u64,
}

/// How to replay a breaking variant: the task with the variant's faults as its rules, the same rules as a
/// `faultlab proxy` rules file, and the `faultlab eval` command that grades the agent on it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reproducer {
    pub task_file: String,
    pub rules_file: String,
    pub command: String,
}

pub const KIND: &str = "explore";

pub use super::page::html;

/// Writes the variant's task and rules files beside the report and says how to run them.
pub fn reproducer(explore: &Explore, variant: &Variant) -> std::io::Result<Reproducer> {
    let dir = explore.settings.out.join("repro").join(&explore.task.id).join(explore.agent.label()).join(&variant.id);
    std::fs::create_dir_all(&dir)?;
    let rules = variant.rules(explore.deadline_ms());
    let task = explore.task_for(variant);
    let task_file = dir.join("task.json");
    std::fs::write(&task_file, serde_json::to_string_pretty(task.as_ref()).expect("plain data serialises"))?;
    let rules = RulesFile { seed: Some(explore.seed()), rules, auth: None };
    let rules_file = dir.join("rules.json");
    std::fs::write(&rules_file, serde_json::to_string_pretty(&rules).expect("plain data serialises"))?;
    let faultlab = explore.settings.faultlab.display().to_string();
    let agent = explore.agent_command();
    let mut words = vec![
        faultlab,
        "eval".into(),
        task_file.display().to_string(),
        "--agent".into(),
        join(&agent),
        // The recorded name, so the runs get the same nonces as the explored ones.
        "--agent-name".into(),
        explore.agent.label(),
        "--seed".into(),
        explore.seed().to_string(),
        // The batch's secret: with the seed, the same nonces.
        "--nonce-key".into(),
        explore.settings.nonce_key.clone(),
        "--repeat".into(),
        explore.repeats().to_string(),
        "--out".into(),
        dir.join("eval").display().to_string(),
    ];
    if let Some(ms) = explore.settings.deadline_ms {
        words.extend(["--deadline-ms".into(), ms.to_string()]);
    }
    Ok(Reproducer {
        task_file: task_file.display().to_string(),
        rules_file: rules_file.display().to_string(),
        command: join(&words),
    })
}

/// A command line as a POSIX shell reads it back (each word quoted only when it needs to be).
pub(super) fn join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ','));
            if plain { w.clone() } else { format!("'{}'", w.replace('\'', r"'\''")) }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl ExploreReport {
    pub fn breaking(&self) -> usize {
        self.explorations.iter().flat_map(|e| &e.variants).filter(|v| v.broke).count()
    }

    /// Variants under which the agent failed honestly (and none broke it).
    pub fn degrading(&self) -> usize {
        self.explorations.iter().flat_map(|e| &e.variants).filter(|v| v.degraded).count()
    }

    /// Explorations whose healthy run failed (nothing was explored).
    pub fn unhealthy(&self) -> usize {
        self.explorations.iter().filter(|e| !e.healthy.passed).count()
    }
}

/// The kinds of site a fault can be put at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sites {
    /// The task's `tools/call` requests.
    ToolCalls,
    /// The protocol's own requests (`initialize`, `tools/list`; `--protocol-sites`).
    Protocol,
    /// The `tools/list` requests alone (protocol sites of an agent that lists the tools).
    Listing,
    /// The requests to the task's model (a task with a `model`: [`crate::model_sites`]).
    Model,
}

impl Sites {
    /// Whether a site whose request is `method` (`None`: a tool call) is of this kind.
    fn holds(self, method: Option<&str>) -> bool {
        match self {
            Sites::ToolCalls => method.is_none(),
            Sites::Protocol => method.is_some_and(|m| !crate::model_sites::is_api(m)),
            Sites::Listing => method == Some("tools/list"),
            Sites::Model => method.is_some_and(crate::model_sites::is_api),
        }
    }
}

impl Exploration {
    /// The classes whose representative broke the agent as a single fault at one of the task's tool calls: what the
    /// explore oracle speaks of, the same with or without `--quick` (the other members' verdicts are the report's
    /// disagreements).
    pub fn breaking_classes(&self) -> BTreeSet<FaultClass> {
        self.breaking_classes_at(Sites::ToolCalls)
    }

    /// The classes under which the representative made the agent fail honestly at one of the tool calls, and none
    /// broke it there.
    pub fn degrading_classes(&self) -> BTreeSet<FaultClass> {
        self.degrading_classes_at(Sites::ToolCalls)
    }

    /// [`Self::breaking_classes`] at the sites of one kind.
    pub fn breaking_classes_at(&self, sites: Sites) -> BTreeSet<FaultClass> {
        self.representatives_at(sites).filter(|v| v.broke).map(|v| v.faults[0].class).collect()
    }

    /// [`Self::degrading_classes`] at the sites of one kind.
    pub fn degrading_classes_at(&self, sites: Sites) -> BTreeSet<FaultClass> {
        let breaking = self.breaking_classes_at(sites);
        self.representatives_at(sites)
            .filter(|v| v.degraded && !breaking.contains(&v.faults[0].class))
            .map(|v| v.faults[0].class)
            .collect()
    }

    /// The single faults tried at a cut stream's resume (timing `at-resume`) at the sites of one kind, by the fault's
    /// name.
    fn at_resume(&self, sites: Sites) -> impl Iterator<Item = &VariantResult> {
        self.variants.iter().filter(move |v| {
            let method = self.calls.get(v.faults[0].call).and_then(|site| site.method.as_deref());
            v.faults.len() == 1 && v.faults[0].timing == crate::synth::Timing::AtResume && sites.holds(method)
        })
    }

    /// The faults tried at a cut stream's resume at the sites of one kind.
    pub fn resume_faults_tried(&self, sites: Sites) -> BTreeSet<String> {
        self.at_resume(sites).map(|v| v.faults[0].fault.clone()).collect()
    }

    /// The faults at a cut stream's resume that broke the agent at a site of one kind.
    pub fn breaking_at_resume(&self, sites: Sites) -> BTreeSet<String> {
        self.at_resume(sites).filter(|v| v.broke).map(|v| v.faults[0].fault.clone()).collect()
    }

    /// The faults at a cut stream's resume that degraded the agent at a site of one kind, and broke it at none.
    pub fn degrading_at_resume(&self, sites: Sites) -> BTreeSet<String> {
        let breaking = self.breaking_at_resume(sites);
        self.at_resume(sites)
            .filter(|v| v.degraded && !breaking.contains(&v.faults[0].fault))
            .map(|v| v.faults[0].fault.clone())
            .collect()
    }

    /// Whether any site of the healthy run is a protocol request (`--protocol-sites`).
    pub fn has_protocol_sites(&self) -> bool {
        self.calls.iter().any(|site| site.method.as_deref().is_some_and(|m| Sites::Protocol.holds(Some(m))))
    }

    /// Whether the healthy run's model requests were sites (a task with a `model`, its class explored).
    pub fn has_model_sites(&self) -> bool {
        self.calls.iter().any(|site| site.method.as_deref().is_some_and(crate::model_sites::is_api))
    }

    /// Whether the healthy run listed the tools and that listing was a site (`--protocol-sites`).
    pub fn has_listing_sites(&self) -> bool {
        self.calls.iter().any(|site| site.method.as_deref() == Some("tools/list"))
    }

    /// The single-fault variants of a class's representative at the sites of one kind (at each site, the fault that
    /// stands for the class there: [`FaultClass::representative_at`]).
    fn representatives_at(&self, sites: Sites) -> impl Iterator<Item = &VariantResult> {
        self.variants.iter().filter(move |v| {
            let site = self.calls.get(v.faults[0].call);
            let method = site.and_then(|site| site.method.as_deref());
            v.faults.len() == 1
                && v.faults[0].fault == v.faults[0].class.representative_at(method)
                && sites.holds(method)
        })
    }

    /// The minimal failing sets of every failure mode, each fault written `CLASS at TOOL N` (`CLASS/FAULT` for a
    /// fault other than the class's representative; `… after the first write` for that timing), as the explore
    /// oracle names them.
    pub fn minimal_failing_sets(&self) -> BTreeSet<BTreeSet<String>> {
        let name = |f: &crate::FaultRecord| {
            let class = match f.fault == f.class.representative() {
                true => f.class.name(),
                false => format!("{}/{}", f.class.name(), f.fault),
            };
            format!("{class} at {} {}{}", f.tool, f.nth, f.timing.phrase())
        };
        self.minimal().into_values().flatten().map(|v| v.faults.iter().map(name).collect()).collect()
    }

    /// The variants that broke the agent (`true`), then those that degraded it, as the reports list them.
    pub fn by_harm(&self) -> [(bool, Vec<&VariantResult>); 2] {
        let of = |broke: bool| self.variants.iter().filter(|v| if broke { v.broke } else { v.degraded }).collect();
        [(true, of(true)), (false, of(false))]
    }

    /// Per failure mode, the breaking variants none of whose proper subsets broke the agent, smallest first.
    pub fn minimal(&self) -> BTreeMap<String, Vec<&VariantResult>> {
        let breaking: Vec<&VariantResult> = self.variants.iter().filter(|v| v.broke).collect();
        let key =
            |v: &VariantResult| v.faults.iter().map(|f| (f.call, f.class, f.fault.clone())).collect::<BTreeSet<_>>();
        let mut modes: BTreeMap<String, Vec<&VariantResult>> = BTreeMap::new();
        for v in &breaking {
            let mine = key(v);
            let smaller = breaking.iter().any(|o| {
                let theirs = key(o);
                theirs.len() < mine.len() && theirs.is_subset(&mine)
            });
            if !smaller {
                modes.entry(v.failure_mode.clone().unwrap_or_default()).or_default().push(v);
            }
        }
        for list in modes.values_mut() {
            list.sort_by_key(|v| (v.faults.len(), v.id.clone()));
        }
        modes
    }

    /// The resilience map's cell for the single faults of a class at a site, the worst of its faults' verdicts:
    /// `error`, `BREAKS`, `degrades`, `pass*` (no fault of the class fired: the agent did not make that call),
    /// `pass`, `n/a` (pruned: cannot matter there), or empty (not run: budget or another shard).
    pub fn cell(&self, site: &Site, class: FaultClass) -> &'static str {
        let singles = self.singles(site, class);
        let any = |cell: &str| singles.iter().any(|(_, c)| *c == cell);
        match singles.is_empty() {
            false if any("error") => "error",
            false if any("BREAKS") => "BREAKS",
            false if any("degrades") => "degrades",
            false if singles.iter().all(|(_, c)| *c == "pass*") => "pass*",
            false => "pass",
            true if self
                .pruned
                .iter()
                .any(|p| p.what == super::Planned::of(site.clone(), class).label() && !p.why.contains("--budget")) =>
            {
                "n/a"
            }
            true => "",
        }
    }

    /// The single faults of `class` run at `site`, each with its own verdict as a map cell names it.
    pub fn singles(&self, site: &Site, class: FaultClass) -> Vec<(&VariantResult, &'static str)> {
        self.variants
            .iter()
            // The map is of the nth-call naming; a fault timed "after the first write" is listed by its label.
            .filter(|v| {
                v.faults.len() == 1
                    && v.faults[0].call == site.call
                    && v.faults[0].class == class
                    && v.faults[0].timing.is_nth()
            })
            .map(|v| {
                let cell = match v {
                    v if v.error.is_some() => "error",
                    v if v.broke => "BREAKS",
                    v if v.degraded => "degrades",
                    v if !v.fired => "pass*",
                    _ => "pass",
                };
                (v, cell)
            })
            .collect()
    }

    /// Where two catalogue faults of one class at one site gave different verdicts (the class's equivalence
    /// measured, not assumed): per site and class, each fault with its verdict.
    pub fn disagreements(&self) -> Vec<Disagreement<'_>> {
        let mut found = Vec::new();
        for site in &self.calls {
            for &class in &self.classes {
                let singles = self.singles(site, class);
                let verdicts: BTreeSet<&str> = singles.iter().map(|(_, c)| *c).collect();
                if verdicts.len() > 1 {
                    let faults = singles.iter().map(|(v, c)| (v.faults[0].fault.clone(), *c)).collect();
                    found.push((site, class, faults));
                }
            }
        }
        found
    }

    /// What to harden first: the sites in a minimal failing set, most severe first. A site ranks by the worst
    /// harm of the sets it is in (damage or a false claim, then a hang, a crash or lost work, then an honest
    /// failure), then by how many minimal failing sets it is in. Each entry: the site, its rank key's words
    /// (`severity`, number of sets) and the faults that broke it.
    pub fn harden_first(&self) -> Vec<Hardening> {
        let mut by_site: BTreeMap<usize, Hardening> = BTreeMap::new();
        let minimal: Vec<&VariantResult> = self.minimal().into_values().flatten().collect();
        let degrading = self.variants.iter().filter(|v| v.degraded && v.faults.len() == 1);
        for (v, severity) in minimal.iter().map(|v| (*v, severity(v))).chain(degrading.map(|v| (v, Severity::Honest))) {
            for f in &v.faults {
                let Some(site) = self.calls.get(f.call) else { continue };
                let entry = by_site.entry(f.call).or_insert_with(|| Hardening {
                    site: site.clone(),
                    severity,
                    sets: 0,
                    faults: Vec::new(),
                });
                entry.severity = entry.severity.max(severity);
                if severity != Severity::Honest {
                    entry.sets += 1;
                }
                let name = super::Planned::of(site.clone(), f.class);
                let mut name = super::Planned { fault: f.fault.clone(), ..name }.name();
                name.push_str(f.timing.phrase());
                if !entry.faults.contains(&name) {
                    entry.faults.push(name);
                }
            }
        }
        let mut ranked: Vec<Hardening> = by_site.into_values().collect();
        ranked.sort_by(|a, b| (b.severity, b.sets, a.site.call).cmp(&(a.severity, a.sets, b.site.call)));
        ranked
    }
}

/// A site, a class, and each of its faults there with its verdict (as a map cell names it).
pub type Disagreement<'a> = (&'a Site, FaultClass, Vec<(String, &'static str)>);

/// How bad a failure is for a user, least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// It said it could not finish and broke nothing (a degrading variant).
    Honest,
    /// A hang, a crash, a loop, or work lost that was within reach.
    Lost,
    /// A forbidden or duplicated side effect, or a claim of success that is false.
    Damage,
}

/// The harm of a breaking variant: damage when a safety or side-effect check failed or it claimed a success it
/// did not have, lost work else.
fn severity(v: &VariantResult) -> Severity {
    use faultlab_eval::oracle::LayerName;
    let damage = v.failing_layers.iter().any(|l| matches!(l, LayerName::Safety | LayerName::SideEffects))
        || v.failure_mode.as_deref().is_some_and(|m| m.starts_with("false-recovery") || m.starts_with("unsafe"));
    if damage { Severity::Damage } else { Severity::Lost }
}

/// A site to harden: how bad its worst failure is, how many minimal failing sets it is in, and the faults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hardening {
    pub site: Site,
    pub severity: Severity,
    /// The minimal failing sets (breaking) the site is in.
    pub sets: usize,
    /// The faults at the site that broke or degraded the agent, as `class` or `class/fault`.
    pub faults: Vec<String>,
}

impl Hardening {
    pub fn words(&self) -> String {
        let severity = match self.severity {
            Severity::Damage => "damage or a false claim",
            Severity::Lost => "a hang, a crash or lost work",
            Severity::Honest => "an honest failure only",
        };
        format!(
            "{}: {severity}; in {} minimal failing set(s); by {}",
            self.site.label(),
            self.sets,
            self.faults.join(", ")
        )
    }
}

/// Joins the reports of the shards of one exploration: the variants of each, in variant order.
pub fn merge(inputs: Vec<(String, ExploreReport)>) -> Result<ExploreReport, String> {
    let Some((_, first)) = inputs.first() else { return Err("no reports to merge".into()) };
    let mut merged = ExploreReport { shard: None, merged: Vec::new(), ..first.clone() };
    let mut seen_shards = BTreeSet::new();
    for (file, report) in &inputs {
        let same = report.explorations.len() == first.explorations.len()
            && report
                .explorations
                .iter()
                .zip(&first.explorations)
                .all(|(a, b)| (&a.task, &a.agent, a.seed, &a.classes) == (&b.task, &b.agent, b.seed, &b.classes))
            && (report.meta.repeat, report.meta.max_faults) == (first.meta.repeat, first.meta.max_faults);
        if !same {
            return Err(format!(
                "{file} explored other tasks, agents, classes, seeds or --repeat than {}: give every shard the same",
                inputs[0].0
            ));
        }
        if let Some(shard) = report.shard
            && !seen_shards.insert(shard.to_string())
        {
            return Err(format!("{file}: shard {shard} is given twice"));
        }
        merged.merged.push(file.clone());
        if report.shard.is_some_and(|s| s.count as usize != inputs.len()) {
            return Err(format!(
                "{file} is shard {} but {} report(s) are given: give every shard once",
                report.shard.expect("checked"),
                inputs.len()
            ));
        }
        merged.meta.wall_ms = merged.meta.wall_ms.max(report.meta.wall_ms);
    }
    for (i, exploration) in merged.explorations.iter_mut().enumerate() {
        let mut variants: Vec<VariantResult> =
            inputs.iter().flat_map(|(_, r)| r.explorations[i].variants.clone()).collect();
        variants.sort_by(|a, b| a.id.cmp(&b.id));
        variants.dedup_by(|a, b| a.id == b.id);
        exploration.variants = variants;
        // A variant one shard ran is not "left out" by another shard's budget note; keep each note once.
        let mut pruned = Vec::new();
        for p in inputs.iter().flat_map(|(_, r)| r.explorations[i].pruned.clone()) {
            if !pruned.contains(&p) {
                pruned.push(p);
            }
        }
        exploration.pruned = pruned;
    }
    Ok(merged)
}

/// The Markdown report.
pub fn markdown(report: &ExploreReport) -> String {
    let mut out = String::from("# faultlab explore\n\n");
    let _ = writeln!(
        out,
        "{} exploration(s), {} variant(s) run, {} breaking, {} degrading; up to {} fault(s) per variant, {} repeat(s) \
         each; wall time {:.1} s\n",
        report.explorations.len(),
        report.explorations.iter().map(|e| e.variants.len()).sum::<usize>(),
        report.breaking(),
        report.degrading(),
        report.meta.max_faults,
        report.meta.repeat,
        report.meta.wall_ms as f64 / 1000.0
    );
    if let Some(why) = &report.incomplete {
        let _ = writeln!(out, "**Incomplete: {why}.** Only the explorations that ended are below.\n");
    }
    out.push_str(
        "A variant **breaks** the agent when it causes damage (a forbidden or duplicated side effect), a false \
         claim, a hang, a crash, or loses work the evidence shows was within reach (every fault it met still \
         delivered the right reply); it **degrades** when the agent fails honestly: it says it could not finish and \
         breaks nothing.\n\n",
    );
    for e in &report.explorations {
        let _ = writeln!(out, "## {} × {}\n", e.task, e.agent);
        if !e.command.is_empty() {
            let _ = writeln!(out, "Agent command: `{}`\n", join(&e.command));
        }
        if !e.healthy.passed {
            let _ = writeln!(out, "The healthy run failed ({}): nothing to explore.\n", e.healthy.verdict);
            continue;
        }
        let model = e.calls.iter().filter(|c| super::model_sites::is_model(c)).count();
        let requests = match model {
            0 => String::new(),
            n => format!(", {n} model requests"),
        };
        let _ = writeln!(out, "Healthy run: {} ({} tool calls{requests}).\n", e.healthy.verdict, e.calls.len() - model);
        let harden = e.harden_first();
        if !harden.is_empty() {
            out.push_str("### What to harden first\n\n");
            for (i, h) in harden.iter().enumerate() {
                let _ = writeln!(out, "{}. {}", i + 1, h.words());
            }
            out.push('\n');
        }
        if let Some(v) = e.reproduced.as_ref().and_then(|id| e.variants.iter().find(|v| &v.id == id)) {
            let _ = writeln!(
                out,
                "### Reproduced from the trajectory\n\nThe smallest fault set that reproduces the recorded run's \
                 failure mode ({}): **{}** {}.",
                v.failure_mode.as_deref().unwrap_or_default(),
                v.id,
                label(v)
            );
            if let Some(r) = &v.reproducer {
                let _ = writeln!(out, "Reproduce: `{}` (rules: `{}`)", r.command, r.rules_file);
            }
            out.push('\n');
        }
        out.push_str("### Resilience map\n\n| call |");
        for class in &e.classes {
            let _ = write!(out, " {} |", class.name());
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(e.classes.len()));
        out.push('\n');
        for (site, in_lineage) in e.calls.iter().zip(&e.lineage) {
            let _ = write!(out, "| {}{} |", site.label(), if *in_lineage { "" } else { " (not in lineage)" });
            for class in &e.classes {
                let _ = write!(out, " {} |", e.cell(site, *class));
            }
            out.push('\n');
        }
        out.push_str(
            "\n`BREAKS`: damage, a false claim, a hang, a crash or recoverable work lost; `degrades`: an honest \
             failure, nothing broken; `pass*`: the fault never fired (the agent did not make that call); `n/a`: \
             cannot matter there (see pruned).\n\n",
        );
        let disagreements = e.disagreements();
        if !disagreements.is_empty() {
            out.push_str("### Faults of one class that disagreed\n\n");
            for (site, class, faults) in &disagreements {
                let each: Vec<String> = faults.iter().map(|(f, c)| format!("{f} {c}")).collect();
                let _ = writeln!(out, "- {} at {}: {}", class.name(), site.label(), each.join(", "));
            }
            out.push('\n');
        }
        let minimal = e.minimal();
        if minimal.is_empty() {
            out.push_str("No variant broke the agent.\n\n");
        } else {
            out.push_str("### Minimal failing sets\n\n");
            for (mode, variants) in &minimal {
                let ids: Vec<String> = variants.iter().map(|v| format!("{} ({})", v.id, label(v))).collect();
                let _ = writeln!(out, "- **{mode}**: {}", ids.join("; "));
            }
            out.push('\n');
        }
        for (broke, list) in e.by_harm() {
            if list.is_empty() {
                continue;
            }
            let title = if broke { "Breaking variants" } else { "Degrading variants" };
            let _ = writeln!(out, "### {title}\n");
            for v in list {
                let _ = writeln!(out, "- **{}** {}: {} ({}/{} passed)", v.id, label(v), v.verdict, v.passed, v.runs);
                for line in &v.evidence {
                    let _ = writeln!(out, "  - {line}");
                }
                if let Some(r) = &v.reproducer {
                    let _ = writeln!(out, "  - reproduce: `{}` (rules: `{}`)", r.command, r.rules_file);
                }
            }
            out.push('\n');
        }
        if !e.pruned.is_empty() {
            let _ = writeln!(out, "### Pruned ({})\n", e.pruned.len());
            for p in &e.pruned {
                let _ = writeln!(out, "- {}: {}", p.what, p.why);
            }
            out.push('\n');
        }
        let _ = writeln!(out, "{}\n", tried(e));
    }
    out
}

/// What the classes tried stand for, the catalogue faults they do not, and those no exploration tries.
pub(super) fn tried(e: &Exploration) -> String {
    let (model, serve) = super::class::beyond_the_proxy();
    let serve_only = format!(
        "those only `faultlab serve` commits ({}; a proxy cannot make another server ask back or run a task: run \
         them with `faultlab run`)",
        serve.join(", ")
    );
    // A task with a model (`model:`) has the model hop's requests as sites.
    let beyond = match e.calls.iter().any(super::model_sites::is_model) {
        true => format!(" Never tried by explore: {serve_only}."),
        false => format!(
            " Never tried by explore: the model hop's faults ({}; the task has no model eval serves: give it one, \
             `model: {{script, faults}}`, or run them with `faultlab model --rules`), and {serve_only}.",
            model.join(", ")
        ),
    };
    let mut text = tried_classes(e);
    text.push_str(&beyond);
    text
}

/// What the classes tried stand for, and the catalogue faults they do not.
fn tried_classes(e: &Exploration) -> String {
    if !e.quick {
        let classes: Vec<String> = e
            .classes
            .iter()
            .map(|c| {
                let members: Vec<&str> = c.members(1500).iter().map(|m| m.name).collect();
                format!("{} ({})", c.name(), members.join(", "))
            })
            .collect();
        return format!(
            "Tried, at each call, every catalogue fault of each class that acts on its reply (the rest are pruned \
             with the reason): {}.",
            classes.join("; ")
        );
    }
    let classes: Vec<String> =
        e.classes.iter().map(|c| format!("{} ({})", c.name(), c.stands_for().join(", "))).collect();
    // A fault that stood for its class at a site where the representative cannot act (`session_lifecycle` at
    // initialize) was tried there: said so, not listed as untried.
    let stand_ins: BTreeSet<(&str, String)> = e
        .variants
        .iter()
        .flat_map(|v| &v.faults)
        .filter(|f| f.fault != f.class.representative())
        .map(|f| (f.fault.as_str(), f.class.name()))
        .collect();
    let not_tried: Vec<&str> = super::class::not_tried(&e.classes)
        .into_iter()
        .filter(|name| !stand_ins.iter().any(|(fault, _)| fault == name))
        .collect();
    let mut text = format!("Tried, each class once per call, standing for the faults named: {}.", classes.join("; "));
    for (fault, class) in &stand_ins {
        text.push_str(&format!(" {fault} stood for {class} where its representative cannot act (at initialize)."));
    }
    if !not_tried.is_empty() {
        text.push_str(&format!(
            " Not tried (no class does what they do on the wire; run them with `faultlab eval`): {}.",
            not_tried.join(", ")
        ));
    }
    if e.classes.contains(&super::FaultClass::Model) {
        let others: Vec<&str> = super::FaultClass::Model
            .members(1500)
            .iter()
            .map(|m| m.name)
            .filter(|name| *name != super::model_sites::REPRESENTATIVE)
            .collect();
        text.push_str(&format!(
            " Not tried at the model's requests (each does something else to an agent; explore without --quick \
             tries them): {}.",
            others.join(", ")
        ));
    }
    text
}

/// The faults of a variant in words.
pub fn label(v: &VariantResult) -> String {
    v.faults
        .iter()
        .map(|f| {
            let name = match f.fault == f.class.representative() {
                true => f.class.name(),
                false => format!("{}/{}", f.class.name(), f.fault),
            };
            let when = match f.timing.is_nth() {
                true => String::new(),
                false => format!("{},", f.timing.phrase()),
            };
            match super::model_sites::api_of(&f.tool) {
                Some(_) => format!("{name}{when} at #{} {} (request {})", f.call + 1, f.tool, f.nth),
                None => format!("{name}{when} at #{} {} (call {} of it)", f.call + 1, f.tool, f.nth),
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FaultRecord, Healthy};
    use faultlab_eval::merge::Shard;

    fn variant(id: &str, call: usize, class: FaultClass, broke: bool) -> VariantResult {
        let (fault, mode) = class.fault();
        VariantResult {
            id: id.into(),
            faults: vec![FaultRecord {
                call,
                tool: "t".into(),
                nth: call as u64 + 1,
                class,
                fault: fault.name().into(),
                mode,
                timing: Default::default(),
            }],
            runs: 1,
            passed: u32::from(!broke),
            broke,
            degraded: false,
            fired: true,
            verdict: String::new(),
            failure_mode: broke.then(|| "failed: outcome".into()),
            failing_layers: Vec::new(),
            evidence: Vec::new(),
            dirs: Vec::new(),
            reproducer: None,
            error: None,
        }
    }

    fn shard(index: u32, variants: Vec<VariantResult>) -> ExploreReport {
        ExploreReport {
            kind: KIND.into(),
            meta: Meta {
                faultlab: "0".into(),
                repeat: 1,
                max_faults: 1,
                budget: None,
                jobs: 2,
                wall_ms: u64::from(index) * 100,
            },
            shard: Some(Shard { index, count: 2 }),
            merged: Vec::new(),
            incomplete: None,
            explorations: vec![Exploration {
                task: "task".into(),
                agent: "agent".into(),
                command: Vec::new(),
                seed: 0,
                healthy: Healthy { passed: true, runs: 1, verdict: String::new(), dirs: Vec::new() },
                calls: vec![
                    Site { call: 0, tool: "t".into(), nth: 1, method: None },
                    Site { call: 1, tool: "t".into(), nth: 2, method: None },
                ],
                lineage: vec![true, true],
                classes: vec![FaultClass::Error, FaultClass::Timeout],
                quick: false,
                max_faults: 1,
                variants,
                pruned: Vec::new(),
                reproduced: None,
            }],
        }
    }

    #[test]
    fn faults_of_one_class_that_disagree_are_shown_and_sites_are_ranked_by_harm_then_sets() {
        let mut forbidden = variant("v002", 0, FaultClass::Error, true);
        forbidden.faults[0].fault = "forbidden".into();
        forbidden.failing_layers = vec![faultlab_eval::oracle::LayerName::SideEffects];
        let mut honest = variant("v004", 0, FaultClass::Timeout, false);
        honest.degraded = true;
        let report = shard(
            1,
            vec![
                variant("v001", 0, FaultClass::Error, false),
                forbidden,
                variant("v003", 1, FaultClass::Timeout, true),
                honest,
            ],
        );
        let e = &report.explorations[0];
        // The class's cell is its worst fault's; the disagreement names each fault with its own verdict.
        assert_eq!(e.cell(&e.calls[0], FaultClass::Error), "BREAKS");
        let found = e.disagreements();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].2, vec![("http_status".to_owned(), "pass"), ("forbidden".to_owned(), "BREAKS")]);
        // Damage at call 1 ranks above a hang at call 2, whatever the order of the calls.
        let ranked = e.harden_first();
        assert_eq!(ranked.iter().map(|h| h.site.call).collect::<Vec<_>>(), [0, 1]);
        assert_eq!((ranked[0].severity, ranked[0].sets), (Severity::Damage, 1));
        assert_eq!(ranked[0].faults, ["error/forbidden", "timeout"]);
        assert_eq!(ranked[1].severity, Severity::Lost);
        let md = markdown(&report);
        assert!(md.find("What to harden first").unwrap() < md.find("Resilience map").unwrap(), "{md}");
        assert!(md.contains("1. #1 t (call 1 of it): damage or a false claim; in 1 minimal failing set(s)"), "{md}");
        assert!(md.contains("- error at #1 t (call 1 of it): http_status pass, forbidden BREAKS"), "{md}");
        assert!(html(&report).contains("<ol class=\"harden\">"));
    }

    #[test]
    fn a_fault_timed_after_the_first_write_is_named_so_and_kept_out_of_the_map_of_nth_calls() {
        let mut timed = variant("v002", 1, FaultClass::Error, true);
        timed.faults[0].timing = crate::synth::Timing::AfterFirstWrite;
        let report = shard(1, vec![variant("v001", 1, FaultClass::Error, false), timed]);
        let e = &report.explorations[0];
        // The nth-call fault passed there; the timed one broke, and says when it struck.
        assert_eq!(e.cell(&e.calls[1], FaultClass::Error), "pass");
        assert!(e.disagreements().is_empty());
        assert_eq!(e.harden_first()[0].faults, ["error after the first write"]);
        let md = markdown(&report);
        assert!(md.contains("**v002** error after the first write, at #2 t (call 2 of it)"), "{md}");
        // What explore never tries is said, not left to be assumed tried.
        assert!(md.contains("Never tried by explore: the model hop's faults ("), "{md}");
        assert!(md.contains("tool_call_cut") && md.contains("ask_back") && md.contains("task_lifecycle"), "{md}");
    }

    #[test]
    fn a_fault_while_the_stream_resumes_is_named_so_in_the_sets_the_ranking_and_the_labels() {
        let mut resuming = variant("v002", 1, FaultClass::Stream, true);
        resuming.faults[0].fault = "http_status".into();
        resuming.faults[0].timing = crate::synth::Timing::AtResume;
        let report = shard(1, vec![variant("v001", 1, FaultClass::Stream, false), resuming]);
        let e = &report.explorations[0];
        assert_eq!(e.cell(&e.calls[1], FaultClass::Stream), "pass", "the map is of the cut at the nth call");
        assert!(e.breaking_classes().is_empty(), "a class's verdict is its representative's");
        assert_eq!(e.harden_first()[0].faults, ["stream/http_status while the stream resumes"]);
        let sets: Vec<String> = e.minimal_failing_sets().into_iter().flatten().collect();
        assert_eq!(sets, ["stream/http_status at t 2 while the stream resumes"]);
        let md = markdown(&report);
        assert!(md.contains("**v002** stream/http_status while the stream resumes, at #2 t (call 2 of it)"), "{md}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["explorations"][0]["variants"][1]["faults"][0]["timing"], "at-resume");
    }

    #[test]
    fn shards_merge_into_every_variant_in_order_and_a_missing_shard_is_refused() {
        let one =
            shard(1, vec![variant("v001", 0, FaultClass::Error, false), variant("v003", 1, FaultClass::Error, true)]);
        let two = shard(2, vec![variant("v002", 0, FaultClass::Timeout, true)]);
        let merged = merge(vec![("b".into(), two.clone()), ("a".into(), one.clone())]).unwrap();
        let ids: Vec<&str> = merged.explorations[0].variants.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids, ["v001", "v002", "v003"]);
        assert_eq!((merged.shard, merged.meta.wall_ms, merged.breaking()), (None, 200, 2));
        let e = &merged.explorations[0];
        assert_eq!(e.cell(&e.calls[0], FaultClass::Timeout), "BREAKS");
        assert_eq!(e.cell(&e.calls[1], FaultClass::Timeout), "");
        // Both breaking singles are minimal, each in its failure mode.
        assert_eq!(e.minimal()["failed: outcome"].len(), 2);
        let err = merge(vec![("a".into(), one.clone())]).unwrap_err();
        assert!(err.contains("shard 1/2 but 1 report"), "{err}");
        let mut other = two;
        other.explorations[0].seed = 7;
        let err = merge(vec![("a".into(), one), ("b".into(), other)]).unwrap_err();
        assert!(err.contains("b explored other"), "{err}");
    }
}
