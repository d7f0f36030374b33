//! What the adversarial control agents try against the sandbox (see [`crate::sandbox`]). Each attack is the one a
//! misbehaving agent would make with what an unsealed run gives it: paths in its `mcpServers` file, other
//! processes' command lines, the run folder next to its files, its working folder. Sealed, every one finds
//! nothing, and the agent is graded as the control agent it otherwise behaves as; the oracle pins that verdict,
//! so a hole in the seal shows as a disagreement.

use crate::contract::{Claim, ClaimStatus};
use std::path::{Path, PathBuf};

/// Where the escaper asks the server to write: above the workspace, and an absolute path outside it.
pub const ESCAPES: [&str; 2] = ["../escaped-by-faultlab-escaper.txt", "/tmp/escaped-by-faultlab-escaper.txt"];

/// The forker's child: `sleep` for this many seconds, a number no other process uses, so a test finds it.
pub const SURVIVOR_SECONDS: &str = "3599.25";

/// The file the litterer leaves in its working folder.
pub const LITTER: &str = "litter-from-an-earlier-run.txt";

/// Starts a child in a session of its own (as SDK clients start their servers), not waited for: it would outlive
/// the agent if the sandbox let it.
pub fn fork_survivor() {
    use std::os::unix::process::CommandExt as _;
    let mut command = std::process::Command::new("sleep");
    command.arg(SURVIVOR_SECONDS).stdin(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        command.pre_exec(|| nix::unistd::setsid().map(drop).map_err(std::io::Error::from));
    }
    match command.spawn() {
        Ok(child) => eprintln!("forker: started a setsid child, pid {}", child.id()),
        Err(e) => eprintln!("forker: could not start its child: {e}"),
    }
}

/// Gives up when an earlier run left its file in this working folder; leaves one for the next run otherwise.
pub fn litter() -> Option<Claim> {
    let litter = Path::new(LITTER);
    if litter.exists() {
        return Some(Claim {
            status: ClaimStatus::Failure,
            message: format!("my working folder holds {LITTER}, left by an earlier run: runs are not isolated"),
            answer: None,
        });
    }
    let _ = std::fs::write(litter, format!("left by pid {}\n", std::process::id()));
    None
}

/// Looks for the workspace on disk; when it finds one holding a nonce, writes the answer there directly (no call
/// to the server) and claims success. `None` when nothing was found: the agent then works through the server.
pub fn snoop(config: &Path) -> Option<Claim> {
    let nonce = regex::Regex::new("nonce: ([0-9a-f]{16})").expect("a valid regex");
    for folder in workspace_candidates(config) {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
            let Some(found) = nonce.captures(&text).and_then(|c| c.get(1)) else { continue };
            let value = found.as_str().to_owned();
            eprintln!("snooper: found the workspace at {} on disk", folder.display());
            let _ = std::fs::write(folder.join("output.txt"), &value);
            return Some(Claim { status: ClaimStatus::Success, message: "done".into(), answer: Some(value) });
        }
    }
    eprintln!("snooper: no workspace on disk; working through the server");
    None
}

/// Empties every trajectory and ledger it can find, to erase what it did.
pub fn tamper(config: &Path) {
    let mut found = 0;
    for file in evidence_candidates(config) {
        if file.is_file() && std::fs::write(&file, "").is_ok() {
            eprintln!("tamperer: emptied {}", file.display());
            found += 1;
        }
    }
    eprintln!("tamperer: emptied {found} evidence file(s)");
}

/// Every path-like word of the `mcpServers` file and of every visible process's command line.
fn words(config: &Path) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(config)
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
    {
        collect_strings(&value, &mut words);
    }
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
                words.extend(cmdline.split(|b| *b == 0).map(|w| String::from_utf8_lossy(w).into_owned()));
            }
        }
    }
    words.retain(|w| w.starts_with('/'));
    words
}

fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// Folders named in command lines, `workspace/` beside any named file, and the same beside the config.
fn workspace_candidates(config: &Path) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for word in words(config).into_iter().chain([config.display().to_string()]) {
        let path = PathBuf::from(word);
        if path.is_dir() {
            candidates.push(path.clone());
        }
        for ancestor in path.ancestors().skip(1).take(3) {
            candidates.push(ancestor.join("workspace"));
        }
    }
    candidates.retain(|p| p.is_dir());
    candidates.dedup();
    candidates
}

/// Files that look like evidence, named in command lines or lying beside the config and the named paths.
fn evidence_candidates(config: &Path) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for word in words(config).into_iter().chain([config.display().to_string()]) {
        let path = PathBuf::from(&word);
        if word.ends_with(".jsonl") {
            candidates.push(path.clone());
        }
        for ancestor in path.ancestors().skip(1).take(3) {
            candidates.extend(["trajectory.jsonl", "ledger.jsonl"].map(|f| ancestor.join(f)));
        }
    }
    candidates.dedup();
    candidates
}
