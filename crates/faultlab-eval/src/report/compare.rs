//! Two eval reports side by side: the pass rate of A and of B per fault category, per task and (when both ran the
//! same agents) per agent, the difference, and whether it is statistically significant.
//!
//! The test is Fisher's exact test, two-sided, on the 2×2 table of passed and failed runs: it is exact at the
//! small counts eval batches have (8 runs a task is typical), where a z-test's normal approximation is poor.
//! Every run is taken as an independent sample; runs that cannot differ (deterministic repeats) break that, and
//! each report's own data-quality notes say so.

use crate::report::{Rate, Report};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The significance level of every row.
pub const ALPHA: f64 = 0.05;
/// The test, as reports name it.
pub const TEST: &str = "Fisher's exact test, two-sided";

/// The two-sided p-value of Fisher's exact test for `a_passed` of `a_runs` against `b_passed` of `b_runs`: the
/// probability, with the margins fixed, of a table at most as likely as the observed one. 1 when a side has no
/// runs (nothing to compare).
pub fn fisher_exact(a_passed: u32, a_runs: u32, b_passed: u32, b_runs: u32) -> f64 {
    if a_runs == 0 || b_runs == 0 {
        return 1.0;
    }
    let (n1, n2) = (a_runs as usize, b_runs as usize);
    let (a_passed, k) = (a_passed.min(a_runs) as usize, (a_passed.min(a_runs) + b_passed.min(b_runs)) as usize);
    // ln(i!) for i up to the total: the binomial coefficients overflow f64 long before the counts get large.
    let ln_factorial: Vec<f64> = (0..=n1 + n2)
        .scan(0.0, |sum, i: usize| {
            *sum += (i.max(1) as f64).ln();
            Some(*sum)
        })
        .collect();
    let ln_choose = |n: usize, k: usize| ln_factorial[n] - ln_factorial[k] - ln_factorial[n - k];
    // The hypergeometric probability that A has x of the k passes.
    let ln_p = |x: usize| ln_choose(n1, x) + ln_choose(n2, k - x) - ln_choose(n1 + n2, k);
    let observed = ln_p(a_passed);
    // Ties with the observed table differ only by rounding: the relative tolerance R's fisher.test uses (1e-7).
    let sum: f64 = (k.saturating_sub(n2)..=k.min(n1)).map(ln_p).filter(|&p| p <= observed + 1e-7).map(f64::exp).sum();
    sum.min(1.0)
}

/// One report's side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub file: String,
    pub faultlab: String,
    pub seed: u64,
    pub repeat: u32,
    pub runs: u32,
    pub agents: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Group {
    Overall,
    Category,
    Fault,
    Task,
    Agent,
}

impl Group {
    fn name(self) -> &'static str {
        self.into()
    }
}

/// What a row says about B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// B passes significantly more often.
    Better,
    /// B passes significantly less often: a regression.
    Worse,
    NotSignificant,
    /// The row has runs in one report only: nothing to test.
    OnlyInA,
    OnlyInB,
}

impl Change {
    fn words(self) -> &'static str {
        match self {
            Change::Better => "yes: B better",
            Change::Worse => "yes: B worse",
            Change::NotSignificant => "no",
            Change::OnlyInA => "only in A",
            Change::OnlyInB => "only in B",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub group: Group,
    /// The category, task or agent name (empty for the overall row).
    pub key: String,
    pub a: Option<Rate>,
    pub b: Option<Rate>,
    /// B's rate minus A's, in percentage points.
    pub difference_points: Option<f64>,
    pub p_value: Option<f64>,
    pub significant: bool,
    pub change: Change,
}

impl Row {
    fn new(group: Group, key: &str, a: Option<Rate>, b: Option<Rate>) -> Self {
        let (difference_points, p_value, change) = match (a, b) {
            (Some(a), Some(b)) if a.runs > 0 && b.runs > 0 => {
                let p = fisher_exact(a.passed, a.runs, b.passed, b.runs);
                let change = match (p < ALPHA, b.rate < a.rate) {
                    (false, _) => Change::NotSignificant,
                    (true, true) => Change::Worse,
                    (true, false) => Change::Better,
                };
                (Some((b.rate - a.rate) * 100.0), Some(p), change)
            }
            (_, Some(b)) if b.runs > 0 => (None, None, Change::OnlyInB),
            _ => (None, None, Change::OnlyInA),
        };
        let significant = matches!(change, Change::Better | Change::Worse);
        Self { group, key: key.into(), a, b, difference_points, p_value, significant, change }
    }

    /// "overall", or the group and the key, e.g. "task data-empty-read".
    pub fn label(&self) -> String {
        match self.group {
            Group::Overall => "overall".into(),
            group => format!("{} {}", group.name(), self.key),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub test: String,
    pub alpha: f64,
    pub a: Side,
    pub b: Side,
    pub rows: Vec<Row>,
    /// What to keep in mind reading the rows (multiple comparisons, missing per-agent rows, data quality).
    pub notes: Vec<String>,
}

impl Comparison {
    /// The rows where B is significantly worse than A.
    pub fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.change == Change::Worse)
    }
}

fn side(file: &str, report: &Report) -> Side {
    Side {
        file: file.into(),
        faultlab: report.meta.faultlab.clone(),
        seed: report.meta.seed,
        repeat: report.meta.repeat,
        runs: report.stats.overall.runs,
        agents: report.stats.by_agent.keys().cloned().collect(),
    }
}

/// Compares B against A, from the statistics each report holds.
pub fn compare(a_file: &str, a: &Report, b_file: &str, b: &Report) -> Comparison {
    let (sa, sb) = (&a.stats, &b.stats);
    let mut rows = vec![Row::new(Group::Overall, "", Some(sa.overall), Some(sb.overall))];
    let mut group = |group: Group, a: &BTreeMap<String, Rate>, b: &BTreeMap<String, Rate>| {
        let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        rows.extend(keys.into_iter().map(|k| Row::new(group, k, a.get(k).copied(), b.get(k).copied())));
    };
    group(Group::Category, &sa.by_category, &sb.by_category);
    group(Group::Fault, &sa.by_fault, &sb.by_fault);
    group(Group::Task, &sa.by_task, &sb.by_task);
    let (side_a, side_b) = (side(a_file, a), side(b_file, b));
    let mut notes = Vec::new();
    if side_a.agents == side_b.agents {
        group(Group::Agent, &sa.by_agent, &sb.by_agent);
    } else {
        notes.push(format!(
            "A and B ran different agents (A: {}; B: {}), so there are no per-agent rows: each category and task row \
             compares all of A's runs with all of B's.",
            side_a.agents.join(", "),
            side_b.agents.join(", ")
        ));
    }
    let tested = rows.iter().filter(|r| r.p_value.is_some()).count();
    if tested > 1 {
        notes.push(format!(
            "{tested} rows are each tested at α = {ALPHA} with no correction for multiple comparisons: even with no \
             real change, about {:.1} of them would come out significant by chance.",
            tested as f64 * ALPHA
        ));
    }
    if rows.iter().any(|r| r.change == Change::NotSignificant) {
        notes.push(
            "Not significant is not the same as no difference: with few runs only large differences can be told \
             from chance (see how wide the intervals are)."
                .into(),
        );
    }
    for (name, report) in [("A", a), ("B", b)] {
        notes.extend(report.stats.data_quality.iter().map(|note| format!("{name}: {note}")));
    }
    Comparison { test: TEST.into(), alpha: ALPHA, a: side_a, b: side_b, rows, notes }
}

fn rate(rate: &Option<Rate>) -> String {
    match rate {
        Some(r) if r.runs > 0 => {
            format!("{:.0}% ({}/{}; {:.0}–{:.0}%)", r.rate * 100.0, r.passed, r.runs, r.low * 100.0, r.high * 100.0)
        }
        _ => "—".into(),
    }
}

/// The cells of a row: label, A, B, difference, p, significant.
fn cells(row: &Row) -> [String; 6] {
    [
        row.label(),
        rate(&row.a),
        rate(&row.b),
        row.difference_points.map_or("—".into(), |d| format!("{d:+.1}")),
        row.p_value.map_or("—".into(), |p| if p < 0.001 { "<0.001".into() } else { format!("{p:.3}") }),
        row.change.words().into(),
    ]
}

const HEADER: [&str; 6] = ["", "A pass rate (95% CI)", "B pass rate (95% CI)", "Δ points", "p", "significant"];

fn describe(name: &str, side: &Side) -> String {
    format!("{name}: {} (faultlab {}, seed {}, {} runs)", side.file, side.faultlab, side.seed, side.runs)
}

fn test_line(comparison: &Comparison) -> String {
    format!(
        "Test: {}, α = {}; Δ is B − A in percentage points; intervals are 95% Wilson.",
        comparison.test, comparison.alpha
    )
}

/// What every format opens with: report A, report B, the test used.
fn opening(comparison: &Comparison) -> [String; 3] {
    [describe("A", &comparison.a), describe("B", &comparison.b), test_line(comparison)]
}

/// A plain-text table for the terminal.
pub fn console(comparison: &Comparison) -> String {
    let table: Vec<[String; 6]> =
        std::iter::once(HEADER.map(String::from)).chain(comparison.rows.iter().map(cells)).collect();
    let mut widths = [0; 6];
    for row in &table {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let [a, b, test] = opening(comparison);
    let _ = writeln!(out, "{a}\n{b}\n{test}\n");
    for row in &table {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    for note in &comparison.notes {
        let _ = writeln!(out, "\nNote: {note}");
    }
    out
}

/// The comparison as Markdown.
pub fn markdown(comparison: &Comparison) -> String {
    let mut md = String::from("# faultlab eval comparison\n\n");
    let [a, b, test] = opening(comparison);
    let _ = writeln!(md, "- {a}\n- {b}\n\n{test}\n");
    let _ = writeln!(md, "| {} |\n|---|---|---|---|---|---|", HEADER.join(" | "));
    for row in &comparison.rows {
        let cells = cells(row).map(|c| c.replace('|', "\\|"));
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    for note in &comparison.notes {
        let _ = writeln!(md, "\n> {note}");
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::tests::{meta, record};
    use crate::runner::RunRecord;
    use crate::task::Category;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn fisher_matches_known_p_values() {
        // Fisher's tea-tasting: 3 of 4 against 1 of 4, p = 0.4857 (R: fisher.test(matrix(c(3, 1, 1, 3), 2))).
        assert!(close(fisher_exact(3, 4, 1, 4), 0.485_714), "{}", fisher_exact(3, 4, 1, 4));
        // 1 of 10 against 11 of 14: p = 0.002759 (R: fisher.test(matrix(c(1, 11, 9, 3), 2))).
        assert!(close(fisher_exact(1, 10, 11, 14), 0.002_759), "{}", fisher_exact(1, 10, 11, 14));
        // All against none of 10: only the two extreme tables, 2 / C(20, 10).
        assert!((fisher_exact(10, 10, 0, 10) - 2.0 / 184_756.0).abs() < 1e-12);
        // The test is symmetric in A and B, and in passes and failures.
        assert!(close(fisher_exact(11, 14, 1, 10), fisher_exact(1, 10, 11, 14)));
        assert!(close(fisher_exact(9, 10, 3, 14), fisher_exact(1, 10, 11, 14)));
        // No difference, and no runs: p = 1.
        assert!(close(fisher_exact(4, 8, 4, 8), 1.0));
        assert_eq!(fisher_exact(0, 0, 3, 4), 1.0);
        // Large counts stay finite (log-factorials): 600/1000 against 500/1000 is far beyond α.
        let p = fisher_exact(600, 1000, 500, 1000);
        assert!(p > 0.0 && p < 1e-5, "{p}");
    }

    fn report(runs: &[(&str, &str, Category, bool)]) -> Report {
        let mut meta = meta(1);
        meta.repeat = 1;
        Report::new(
            meta,
            runs.iter().map(|&(task, agent, category, passed)| record(task, agent, 0, category, passed)).collect(),
        )
    }

    /// `passed` passing and `failed` failing runs of `task` by `agent`, each a repeat of its own.
    fn runs(task: &str, agent: &str, category: Category, passed: u32, failed: u32) -> Vec<RunRecord> {
        (0..passed + failed).map(|i| record(task, agent, i, category, i < passed)).collect()
    }

    #[test]
    fn rows_cover_categories_tasks_and_shared_agents_and_flag_regressions() {
        let mut meta = meta(1);
        meta.repeat = 10;
        let a = Report::new(
            meta.clone(),
            [runs("read", "good", Category::Data, 10, 0), runs("write", "good", Category::Transport, 5, 5)].concat(),
        );
        let b = Report::new(
            meta,
            [runs("read", "good", Category::Data, 0, 10), runs("write", "good", Category::Transport, 6, 4)].concat(),
        );
        let c = compare("a.json", &a, "b.json", &b);
        let labels: Vec<String> = c.rows.iter().map(Row::label).collect();
        assert_eq!(labels, ["overall", "category data", "category transport", "task read", "task write", "agent good"]);
        let read = &c.rows[3];
        assert_eq!(read.change, Change::Worse);
        assert!(read.significant && close(read.difference_points.unwrap(), -100.0));
        assert!(close(read.p_value.unwrap(), 2.0 / 184_756.0));
        let write = &c.rows[4];
        assert_eq!(write.change, Change::NotSignificant);
        assert!(close(write.difference_points.unwrap(), 10.0) && !write.significant);
        let regressions: Vec<String> = c.regressions().map(Row::label).collect();
        assert_eq!(regressions, ["overall", "category data", "task read", "agent good"]);
        // The other way round, the same rows are improvements.
        let back = compare("b.json", &b, "a.json", &a);
        assert_eq!(back.regressions().count(), 0);
        assert_eq!(back.rows[3].change, Change::Better);

        let text = console(&c);
        assert!(
            text.contains(TEST) && text.contains("yes: B worse") && text.contains("100% (10/10; 72–100%)"),
            "{text}"
        );
        let md = markdown(&c);
        assert!(
            md.contains("| task read | 100% (10/10; 72–100%) | 0% (0/10; 0–28%) | -100.0 | <0.001 | yes: B worse |"),
            "{md}"
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["rows"][3]["change"], "worse");
        assert_eq!(json["test"], TEST);
    }

    #[test]
    fn rows_in_one_report_only_are_not_tested_and_different_agents_give_no_agent_rows() {
        let a = report(&[("read", "good", Category::Data, true), ("old", "good", Category::Data, true)]);
        let b = report(&[("read", "mine", Category::Data, false), ("new", "mine", Category::Temporal, true)]);
        let c = compare("a", &a, "b", &b);
        let find = |label: &str| c.rows.iter().find(|r| r.label() == label).unwrap();
        assert_eq!(find("task old").change, Change::OnlyInA);
        assert_eq!(find("task new").change, Change::OnlyInB);
        assert_eq!(find("category temporal").change, Change::OnlyInB);
        assert!(find("task new").p_value.is_none() && find("task new").a.is_none());
        assert!(c.rows.iter().all(|r| r.group != Group::Agent));
        assert!(c.notes.iter().any(|n| n.contains("different agents (A: good; B: mine)")), "{:?}", c.notes);
        assert!(c.notes.iter().any(|n| n.starts_with("A: Only 2 runs")), "{:?}", c.notes);
        assert!(console(&c).contains("only in B"));
    }
}
