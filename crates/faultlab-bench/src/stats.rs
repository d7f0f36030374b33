//! Sample statistics and number formatting, shared by every figure.

use serde_json::{Value, json};

/// Summary of a sample, in the unit the samples were taken in (nearest-rank quantiles).
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub p99: f64,
    pub max: f64,
}

impl Stats {
    pub fn of(samples: &[f64]) -> Stats {
        assert!(!samples.is_empty(), "no samples");
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
        Stats { n: s.len(), min: s[0], median: at(0.5), p99: at(0.99), max: s[s.len() - 1] }
    }

    /// Of the absolute values.
    pub fn of_abs(samples: &[f64]) -> Stats {
        Stats::of(&samples.iter().map(|x| x.abs()).collect::<Vec<_>>())
    }

    pub fn json(&self) -> Value {
        json!({"n": self.n, "min": self.min, "median": self.median, "p99": self.p99, "max": self.max})
    }

    /// `min / median / max`, or `min / median / p99 / max`.
    pub fn cell(&self, p99: bool) -> String {
        if p99 {
            format!("{} / {} / {} / {}", fmt(self.min), fmt(self.median), fmt(self.p99), fmt(self.max))
        } else {
            format!("{} / {} / {}", fmt(self.min), fmt(self.median), fmt(self.max))
        }
    }

    /// `min / median / max`, each followed by `unit`.
    pub fn spread(&self, unit: &str) -> String {
        format!("{}{unit} / {}{unit} / {}{unit}", fmt(self.min), fmt(self.median), fmt(self.max))
    }
}

/// Three significant digits or so, whatever the magnitude.
pub fn fmt(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Signed, with an explicit + for positive values.
pub fn sfmt(x: f64) -> String {
    if x > 0.0 { format!("+{}", fmt(x)) } else { fmt(x) }
}

/// Per-round ratios with their spread: `{"rounds": [...], "min", "median", "max"}`.
pub fn ratio_json(ratios: &[f64]) -> Value {
    let s = Stats::of(ratios);
    json!({"rounds": ratios, "min": s.min, "median": s.median, "max": s.max})
}

/// Per round, `a[r] / b[r]`, over the rounds both have (a peer dropped during the run has fewer).
pub fn per_round(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}

/// One row of a Markdown table.
pub fn row(cells: &[String]) {
    println!("| {} |", cells.join(" | "));
}

/// The goal column of a console table.
pub fn met(b: bool) -> &'static str {
    if b { "yes" } else { "NO" }
}
