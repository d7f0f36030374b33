//! One reader for the config files the lab loads (scenarios, targets, baselines, eval tasks, model scripts): the
//! text is read, refused when it nests too deep ([`crate::nesting`], before any parser sees it), parsed as JSON
//! for a `.json` name and as YAML otherwise (the types refuse unknown keys), and every error names the file.

use crate::nesting;
use serde::de::DeserializeOwned;
use std::path::Path;

/// A config file that could not be read, or is not valid. `kind` names what the file is (`task file`).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {kind} {path}: {source}")]
    Read { kind: &'static str, path: String, source: std::io::Error },
    #[error("{kind} {path} is invalid: {message}")]
    Invalid { kind: &'static str, path: String, message: String },
}

/// Reads `path` and hands its text to `parse`, with whether it is JSON (a `.json` name, in any case).
pub fn load<T>(
    path: &Path,
    kind: &'static str,
    parse: impl FnOnce(&str, bool) -> Result<T, String>,
) -> Result<T, FileError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| FileError::Read { kind, path: shown.clone(), source })?;
    let json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
    parse(&text, json).map_err(|message| FileError::Invalid { kind, path: shown, message })
}

/// Parses `text` as JSON or YAML after the depth check; the error is the parser's (YAML's names the line and key).
pub fn parse<T: DeserializeOwned>(text: &str, json: bool) -> Result<T, String> {
    let syntax = if json { nesting::Syntax::Json } else { nesting::Syntax::Yaml };
    nesting::check(text, syntax).map_err(|e| e.to_string())?;
    match json {
        true => serde_json::from_str(text).map_err(|e| e.to_string()),
        false => yaml_serde::from_str(text).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        name: String,
    }

    #[test]
    fn a_json_name_is_read_as_json_anything_else_as_yaml_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("a.JSON");
        std::fs::write(&json, r#"{"name": "x"}"#).unwrap();
        let yaml = dir.path().join("a.yaml");
        std::fs::write(&yaml, "name: y\ncolour: red\n").unwrap();
        let read = |path: &Path| load(path, "settings file", parse::<Settings>);
        assert_eq!(read(&json).unwrap(), Settings { name: "x".into() });
        let invalid = read(&yaml).unwrap_err().to_string();
        assert!(invalid.starts_with(&format!("settings file {} is invalid: ", yaml.display())), "{invalid}");
        assert!(invalid.contains("colour"), "{invalid}");
        let missing = read(&dir.path().join("none.yaml")).unwrap_err().to_string();
        assert!(missing.starts_with("cannot read settings file "), "{missing}");
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse::<serde_json::Value>(&deep, true).unwrap_err().contains("nested deeper"));
    }
}
