//! The exploration report: `report.json` (every variant with its faults and verdict), `report.md` and
//! `report.html` (the resilience map, calls × fault classes; the breaking variants with their failing layers and
//! evidence; the minimal failing sets per failure mode; a reproducer per breaking variant), and the shards of an
//! exploration joined into one.

use super::{Exploration, Explore, FaultClass, Site, Variant, VariantResult};
use crate::runner::AgentSpec;
use faultlab_diagnose::render::html::esc;
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
    pub shard: Option<crate::merge::Shard>,
    /// The shard reports `faultlab report merge` joined into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
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

/// Writes the variant's task and rules files beside the report and says how to run them.
pub fn reproducer(explore: &Explore, variant: &Variant) -> std::io::Result<Reproducer> {
    let dir = explore.settings.out.join("repro").join(&explore.task.id).join(explore.agent.label()).join(&variant.id);
    std::fs::create_dir_all(&dir)?;
    let mut task = explore.task.as_ref().clone();
    task.faults = variant.rules();
    let task_file = dir.join("task.json");
    std::fs::write(&task_file, serde_json::to_string_pretty(&task).expect("plain data serialises"))?;
    let rules = RulesFile { seed: Some(explore.seed()), rules: variant.rules() };
    let rules_file = dir.join("rules.json");
    std::fs::write(&rules_file, serde_json::to_string_pretty(&rules).expect("plain data serialises"))?;
    let faultlab = explore.settings.faultlab.display().to_string();
    let agent = match &explore.agent {
        AgentSpec::Control(agent) => vec![faultlab.clone(), "agent".into(), agent.name().into()],
        AgentSpec::Named { command, .. } | AgentSpec::Command(command) => command.clone(),
    };
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
fn join(words: &[String]) -> String {
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

    /// Explorations whose healthy run failed (nothing was explored).
    pub fn unhealthy(&self) -> usize {
        self.explorations.iter().filter(|e| !e.healthy.passed).count()
    }
}

impl Exploration {
    /// The classes that broke the agent with a single fault (at any call).
    pub fn breaking_classes(&self) -> BTreeSet<FaultClass> {
        self.variants.iter().filter(|v| v.broke && v.faults.len() == 1).map(|v| v.faults[0].class).collect()
    }

    /// Per failure mode, the breaking variants none of whose proper subsets broke the agent, smallest first.
    pub fn minimal(&self) -> BTreeMap<String, Vec<&VariantResult>> {
        let breaking: Vec<&VariantResult> = self.variants.iter().filter(|v| v.broke).collect();
        let key = |v: &VariantResult| v.faults.iter().map(|f| (f.call, f.class)).collect::<BTreeSet<_>>();
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

    /// The resilience map's cell for a single fault: `pass`, `BREAKS`, `pass*` (the fault never fired), `error`,
    /// `n/a` (pruned: cannot matter there), or empty (not run: budget or another shard).
    pub fn cell(&self, site: &Site, class: FaultClass) -> &'static str {
        let single = self
            .variants
            .iter()
            .find(|v| v.faults.len() == 1 && v.faults[0].call == site.call && v.faults[0].class == class);
        match single {
            Some(v) if v.error.is_some() => "error",
            Some(v) if v.broke => "BREAKS",
            Some(v) if !v.fired => "pass*",
            Some(_) => "pass",
            None if self.pruned.iter().any(|p| {
                p.what == super::Planned { site: site.clone(), class }.label() && !p.why.contains("--budget")
            }) =>
            {
                "n/a"
            }
            None => "",
        }
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
        "{} exploration(s), {} variant(s) run, {} breaking; up to {} fault(s) per variant, {} repeat(s) each; wall \
         time {:.1} s\n",
        report.explorations.len(),
        report.explorations.iter().map(|e| e.variants.len()).sum::<usize>(),
        report.breaking(),
        report.meta.max_faults,
        report.meta.repeat,
        report.meta.wall_ms as f64 / 1000.0
    );
    for e in &report.explorations {
        let _ = writeln!(out, "## {} × {}\n", e.task, e.agent);
        if !e.healthy.passed {
            let _ = writeln!(out, "The healthy run failed ({}): nothing to explore.\n", e.healthy.verdict);
            continue;
        }
        let _ = writeln!(out, "Healthy run: {} ({} tool calls).\n", e.healthy.verdict, e.calls.len());
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
        out.push_str("\n`pass*`: the fault never fired (the agent did not make that call); `n/a`: cannot matter there (see pruned).\n\n");
        let minimal = e.minimal();
        if minimal.is_empty() {
            out.push_str("No variant broke the agent.\n\n");
        } else {
            out.push_str("### Minimal failing sets\n\n");
            for (mode, variants) in &minimal {
                let ids: Vec<String> = variants.iter().map(|v| format!("{} ({})", v.id, label(v))).collect();
                let _ = writeln!(out, "- **{mode}**: {}", ids.join("; "));
            }
            out.push_str("\n### Breaking variants\n\n");
            for v in e.variants.iter().filter(|v| v.broke) {
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
        let equivalents: Vec<String> = e
            .classes
            .iter()
            .map(|c| format!("{} ({}) for {}", c.name(), c.effect().name(), c.stands_for().join(", ")))
            .collect();
        let _ = writeln!(
            out,
            "Each class is tried once and stands for its equivalent faults: {}.\n",
            equivalents.join("; ")
        );
    }
    out
}

/// The faults of a variant in words.
pub fn label(v: &VariantResult) -> String {
    v.faults
        .iter()
        .map(|f| format!("{} at #{} {} (call {} of it)", f.class.name(), f.call + 1, f.tool, f.nth))
        .collect::<Vec<_>>()
        .join(" + ")
}

const CSS: &str = r#"table.map { border-collapse: collapse; margin: 8px 0 16px; background: var(--paper); }
table.map th, table.map td { border: 1px solid var(--line); padding: 4px 8px; font-size: 13px; text-align: center; }
table.map th.call { text-align: left; }
td.pass { background: var(--ok-bg); color: var(--ok); }
td.breaks { background: var(--error-bg); color: var(--error); font-weight: 700; }
td.unfired, td.na, td.notrun { background: var(--lost-bg); color: var(--lost); }
td.error { background: var(--warning-bg); color: var(--warning); }
section.exploration { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px;
  margin: 16px 0; }
li.variant { margin: 6px 0; }
"#;

/// The HTML report: one self-contained page.
pub fn html(report: &ExploreReport) -> String {
    let headline = format!(
        "{} breaking variant(s) of {}",
        report.breaking(),
        report.explorations.iter().map(|e| e.variants.len()).sum::<usize>()
    );
    let mut out = crate::html::head("explore", "Fault-space exploration", &headline, CSS);
    out.push_str("</header>\n<main>\n");
    for e in &report.explorations {
        let _ = writeln!(out, "<section class=\"exploration\">\n<h2>{} × {}</h2>", esc(&e.task), esc(&e.agent));
        if !e.healthy.passed {
            let _ = writeln!(
                out,
                "<p>The healthy run failed ({}): nothing to explore.</p>\n</section>",
                esc(&e.healthy.verdict)
            );
            continue;
        }
        let _ = writeln!(
            out,
            "<p>Healthy run: {}</p>\n<table class=\"map\">\n<tr><th class=\"call\">call</th>",
            esc(&e.healthy.verdict)
        );
        for class in &e.classes {
            let _ = write!(out, "<th title=\"{}\">{}</th>", esc(&class.stands_for().join(", ")), esc(&class.name()));
        }
        out.push_str("</tr>\n");
        for (site, in_lineage) in e.calls.iter().zip(&e.lineage) {
            let _ = write!(
                out,
                "<tr class=\"site\"><th class=\"call\">{}{}</th>",
                esc(&site.label()),
                if *in_lineage { "" } else { " <small>(not in lineage)</small>" }
            );
            for class in &e.classes {
                let cell = e.cell(site, *class);
                let css = match cell {
                    "pass" => "pass",
                    "BREAKS" => "breaks",
                    "pass*" => "unfired",
                    "n/a" => "na",
                    "error" => "error",
                    _ => "notrun",
                };
                let _ =
                    write!(out, "<td class=\"cell {css}\" data-class=\"{}\">{}</td>", esc(&class.name()), esc(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        for (mode, variants) in e.minimal() {
            let ids: Vec<String> = variants.iter().map(|v| format!("{} ({})", v.id, label(v))).collect();
            let _ = writeln!(out, "<p><b>minimal failing set, {}</b>: {}</p>", esc(&mode), esc(&ids.join("; ")));
        }
        if !e.variants.iter().any(|v| v.broke) {
            out.push_str("<p>No variant broke the agent.</p>\n");
        }
        out.push_str("<ul>\n");
        for v in e.variants.iter().filter(|v| v.broke) {
            let _ = write!(
                out,
                "<li class=\"variant\" id=\"{}\"><b>{}</b> {}: {}<ul>",
                // Unique on the page, which shows every (task, agent) exploration.
                esc(&format!("{}-{}-{}", e.task, e.agent, v.id)),
                esc(&v.id),
                esc(&label(v)),
                esc(&v.verdict)
            );
            for line in &v.evidence {
                let _ = write!(out, "<li>{}</li>", esc(line));
            }
            if let Some(r) = &v.reproducer {
                let _ = write!(out, "<li>reproduce: <code>{}</code></li>", esc(&r.command));
            }
            out.push_str("</ul></li>\n");
        }
        out.push_str("</ul>\n");
        if !e.pruned.is_empty() {
            let _ = writeln!(out, "<details><summary>pruned ({})</summary><ul>", e.pruned.len());
            for p in &e.pruned {
                let _ = writeln!(out, "<li>{}: {}</li>", esc(&p.what), esc(&p.why));
            }
            out.push_str("</ul></details>\n");
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::{FaultRecord, Healthy};
    use crate::merge::Shard;

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
            }],
            runs: 1,
            passed: u32::from(!broke),
            broke,
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
            explorations: vec![Exploration {
                task: "task".into(),
                agent: "agent".into(),
                seed: 0,
                healthy: Healthy { passed: true, runs: 1, verdict: String::new(), dirs: Vec::new() },
                calls: vec![Site { call: 0, tool: "t".into(), nth: 1 }, Site { call: 1, tool: "t".into(), nth: 2 }],
                lineage: vec![true, true],
                classes: vec![FaultClass::Error, FaultClass::Timeout],
                variants,
                pruned: Vec::new(),
            }],
        }
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
