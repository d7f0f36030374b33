//! Figure 5: wall time of one `faultlab run` of the built-in suite (examples/scenarios) against the built-in
//! server, per era, eras alternating.

use super::{Config, MODERN_ERA, NODE_ERA};
use crate::stats::{Stats, met};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

pub(super) struct Suite {
    scenarios: usize,
    modern: Stats,
    legacy: Stats,
}

/// Seconds. Panics (with the report) if a scenario fails: a suite that does not pass has no meaningful time.
fn wall_time(cfg: &Config, files: &[PathBuf], era: &str) -> f64 {
    let start = Instant::now();
    let out = Command::new(&cfg.tools.faultlab)
        .arg("run")
        .args(files)
        .args(["--protocol-version", era])
        .stdin(Stdio::null())
        .output()
        .expect("start faultlab run");
    let secs = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "faultlab run of the built-in suite in {era} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    secs
}

pub(super) fn measure(cfg: &Config) -> Suite {
    let mut files: Vec<PathBuf> = std::fs::read_dir(&cfg.scenarios)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", cfg.scenarios.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    eprintln!("bench: built-in suite ({} scenarios) x{} per era", files.len(), cfg.suite_rounds);
    let (mut modern, mut legacy) = (Vec::new(), Vec::new());
    for _ in 0..cfg.suite_rounds {
        modern.push(wall_time(cfg, &files, MODERN_ERA));
        legacy.push(wall_time(cfg, &files, NODE_ERA));
    }
    Suite { scenarios: files.len(), modern: Stats::of(&modern), legacy: Stats::of(&legacy) }
}

impl Suite {
    fn met(&self) -> bool {
        self.modern.median < 10.0 && self.legacy.median < 10.0
    }

    pub(super) fn print(&self, cfg: &Config) {
        println!(
            "\n| `faultlab run` of the built-in suite ({} scenarios), wall time, s (min / median / max of {}) | {MODERN_ERA} | {NODE_ERA} | goal | met |",
            self.scenarios, cfg.suite_rounds
        );
        println!("|---|---|---|---|---|");
        println!(
            "| against the built-in server (in process) | {} | {} | < 10 s per era | {} |",
            self.modern.cell(false),
            self.legacy.cell(false),
            met(self.met())
        );
    }

    pub(super) fn json(&self, cfg: &Config) -> Value {
        json!({"scenarios": self.scenarios, "rounds": cfg.suite_rounds, "modern": self.modern.json(),
            "legacy": self.legacy.json(), "goal": "< 10 s per era (median)", "met": self.met()})
    }
}
