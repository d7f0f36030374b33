//! Input paths as users give them: a folder stands for the files in it (not below it) whose extension the
//! command reads, in name order, so `faultlab run scenarios/` is `faultlab run scenarios/*.yaml`.

use anyhow::{Context as _, anyhow};
use std::path::PathBuf;

/// Scenario and task files.
pub const YAML_OR_JSON: &[&str] = &["yaml", "yml", "json"];
/// Traces: OpenAI-message JSON and trajectories (JSON lines).
pub const TRACES: &[&str] = &["json", "jsonl"];

/// `paths` with each folder replaced by its files with one of `extensions`. A folder with none is an error naming
/// it and the extensions; a path that is not a folder is kept as given (its loader reports it if it is wrong).
pub fn expand(paths: &[PathBuf], extensions: &[&str]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path).with_context(|| format!("cannot read the folder {}", path.display()))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .filter(|p| p.extension().and_then(|e| e.to_str()).is_some_and(|e| extensions.contains(&e)))
            .collect();
        if found.is_empty() {
            let wanted: Vec<String> = extensions.iter().map(|e| format!(".{e}")).collect();
            return Err(anyhow!("the folder {} has no {} files", path.display(), wanted.join(" or ")));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}
