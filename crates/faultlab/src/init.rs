//! `faultlab init DIR`: a starter folder for testing your own client, agent or server: a target file (the server
//! behind the fault proxy), the proxy's rules file and a scenario set that expects exactly what those rules do,
//! so that the command it prints passes as written. Nothing is ever overwritten.
//!
//! Exit codes: 0 written; 1 a file it would write exists already, or the folder cannot be written.

use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use std::io::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(after_help = "Example: faultlab init my-lab && cd my-lab && faultlab run scenarios/ --target target.json\n\
Exit codes: 0 written; 1 a file it would write exists already (nothing is written then), or the folder cannot be \
written.")]
pub struct InitArgs {
    /// The folder to create (or an existing one without the starter's files).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// The server under test, behind the fault proxy with the rules; the proxy records what it did.
const TARGET: &str = r#"{
  "adapter": "mcp",
  "config": {
    "stdio": {
      "command": "faultlab",
      "args": ["proxy", "--rules", "faults.yaml", "--record", "trajectory.jsonl", "--", "faultlab", "serve"]
    }
  }
}
"#;

const RULES: &str = r#"# The faults `faultlab proxy` injects between the client and the server (`faultlab faults` lists them all,
# `faultlab faults NAME` explains one). Each scenario is a new connection, so `nth` counts from its first call.
# For your own server, replace `ping` with one of its tools (here and in scenarios/).
seed: 1
rules:
  - name: second-call-duplicated
    match: { tool: ping, nth: 2 }
    fault: { type: duplicate }
  - name: third-call-rate-limited
    match: { tool: ping, nth: 3 }
    fault: { type: rate_limit, retry_after_sec: 1 }
  - name: fourth-call-never-answered
    match: { tool: ping, nth: 4 }
    fault: { type: timeout }
"#;

const HEALTHY: &str = r#"# The first call passes the proxy untouched.
name: a call the rules leave alone succeeds
call: { tool: ping, args: {} }
timeoutMs: 5000
expect: { outcome: success }
"#;

const DUPLICATE: &str = r#"# faults.yaml duplicates the second call's reply: a robust client uses it once and notices the second.
name: a duplicated reply is used once and seen twice
steps:
  - call: { tool: ping, args: {} }
    expect: { outcome: success }
  - call: { tool: ping, args: {} }
    expect: { outcome: success, responses: 2, anomalies: { duplicateResponses: 1 } }
"#;

const RATE_LIMIT: &str = r#"# faults.yaml answers the third call "too many requests" (JSON-RPC error -32029 on stdio).
name: a rate-limited call is an error, not a success
steps:
  - call: { tool: ping, args: {} }
    repeat: 2
    expect: { outcome: success }
  - call: { tool: ping, args: {} }
    expect: { outcome: error, errorCode: -32029 }
"#;

const TIMEOUT: &str = r#"# faults.yaml never answers the fourth call: the client gives up at its deadline and the connection stays usable.
name: an unanswered call times out and the next one succeeds
steps:
  - call: { tool: ping, args: {} }
    repeat: 2
    expect: { outcome: success }
  - call: { tool: ping, args: {} }
    expect: { outcome: error }
  - call: { tool: ping, args: {} }
    timeoutMs: 200
    expect: { outcome: timeout, connection: alive }
  - call: { tool: ping, args: {} }
    expect: { outcome: success }
"#;

/// Every file, relative to DIR, with what it is for.
const FILES: [(&str, &str, &str); 6] = [
    ("target.json", TARGET, "the server under test (`faultlab serve`; put yours there) behind the fault proxy"),
    ("faults.yaml", RULES, "the proxy's rules: which call gets which fault"),
    ("scenarios/01-healthy.yaml", HEALTHY, "what a robust client observes, call by call"),
    ("scenarios/02-duplicate.yaml", DUPLICATE, ""),
    ("scenarios/03-rate-limit.yaml", RATE_LIMIT, ""),
    ("scenarios/04-timeout.yaml", TIMEOUT, ""),
];

pub fn run(args: InitArgs) -> Result<(), Failure> {
    let dir = &args.dir;
    let paths: Vec<PathBuf> = FILES.iter().map(|(name, ..)| dir.join(name)).collect();
    if let Some(taken) = paths.iter().find(|p| p.symlink_metadata().is_ok()) {
        return Err(Failure::usage(anyhow!(
            "{} exists already; faultlab init never overwrites a file: give a new folder, or move it away",
            taken.display()
        )));
    }
    std::fs::create_dir_all(dir.join("scenarios"))
        .with_context(|| format!("cannot create {}", dir.join("scenarios").display()))
        .map_err(Failure::runtime)?;
    for ((_, text, _), path) in FILES.iter().zip(&paths) {
        write_new(path, text).map_err(Failure::runtime)?;
    }
    let shown = dir.display().to_string();
    outln!("Wrote a starter lab in {shown}/:");
    for (name, _, what) in FILES.iter().filter(|(.., what)| !what.is_empty()) {
        let name = name.split_once('/').map_or(*name, |(folder, _)| folder);
        outln!("  {:<13} {what}", if name == "scenarios" { "scenarios/" } else { name });
    }
    let quoted = shlex::try_quote(&shown).map_or_else(|_| shown.clone(), |q| q.into_owned());
    outln!("Next (with faultlab on your PATH), run them; the proxy records what it did in trajectory.jsonl:");
    outln!("  cd {quoted} && faultlab run scenarios/ --target target.json");
    Ok(())
}

/// Writes `text` to a file that must not exist yet (another process may have created it since the check).
fn write_new(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}
