//! What the `serve` and `proxy` benches share: sample statistics, number formatting and facts about processes
//! and tools read from `/proc` or the tools themselves.

use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

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

    pub fn json(&self) -> Value {
        json!({"n": self.n, "min": self.min, "median": self.median, "p99": self.p99, "max": self.max})
    }

    /// `min / median / max`, or `min / median / p99 / max`.
    #[allow(dead_code)] // each bench binary compiles this module on its own and uses one of the two layouts
    pub fn cell(&self, p99: bool) -> String {
        if p99 {
            format!("{} / {} / {} / {}", fmt(self.min), fmt(self.median), fmt(self.p99), fmt(self.max))
        } else {
            format!("{} / {} / {}", fmt(self.min), fmt(self.median), fmt(self.max))
        }
    }

    /// `min / median / max`, each followed by `unit`.
    #[allow(dead_code)] // see `cell`
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

/// What `cmd args` prints (stdout, else stderr), trimmed; "unknown" when it prints nothing or does not run.
pub fn version_of(cmd: &Path, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            String::from_utf8_lossy(&text).trim().to_owned()
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The version in the `package.json` one folder above the folder of the npm package's entry point `js`.
pub fn package_version(js: &Path) -> String {
    let manifest = js.parent().and_then(Path::parent).map(|p| p.join("package.json"));
    let text = manifest.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let version = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["version"].as_str().map(str::to_owned));
    version.unwrap_or_else(|| "unknown".into())
}

/// Fields after `pid (comm)` of /proc/PID/stat (comm may hold spaces).
pub fn proc_stat(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat.rsplit_once(')')?.1.split_whitespace().map(str::to_owned).collect())
}

/// Microseconds per clock tick of /proc/PID/stat (`getconf CLK_TCK`, 100 when unknown).
static TICK_US: std::sync::OnceLock<f64> = std::sync::OnceLock::new();

/// User + system CPU time of one process (all its threads) so far, µs (0 when it is gone).
pub fn cpu_us(pid: u32) -> f64 {
    let tick_us = *TICK_US.get_or_init(|| {
        let out = Command::new("getconf").arg("CLK_TCK").stdin(Stdio::null()).output().ok();
        let hz = out.and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<f64>().ok()).unwrap_or(100.0);
        1e6 / hz
    });
    let Some(fields) = proc_stat(&pid.to_string()) else { return 0.0 };
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after `pid (comm)`.
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    ticks as f64 * tick_us
}

/// Waits up to `stall` for a line on a server's `stderr` from which `ready` extracts its endpoint URL (`None` if it
/// exits or never prints one). The rest of stderr is drained on a thread, so a full pipe never blocks the server,
/// and every line is copied to `log` when one is given.
pub fn ready_line(
    stderr: ChildStderr,
    mut log: Option<std::fs::File>,
    stall: Duration,
    ready: impl Fn(&str) -> Option<String> + Send + 'static,
) -> Option<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(log) = log.as_mut() {
                let _ = writeln!(log, "{line}");
            }
            if let Some(url) = tx.as_ref().and_then(|_| ready(&line)) {
                let _ = tx.take().unwrap().send(url);
            }
        }
    });
    rx.recv_timeout(stall).ok()
}
