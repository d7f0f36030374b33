//! What ships with the binary: shell completions and manual pages generated from the command line, and the MCP
//! Registry entry (`server.json`) valid against the registry's published schema.

use crate::common::{BIN, faultlab};
use predicates::str::contains;
use std::path::Path;

/// The bash script, sourced by bash, completes subcommands and their flags.
#[test]
fn bash_completion_completes_subcommands_and_flags() {
    let complete = |words: &str, current: usize| {
        let script = format!(
            "source <('{BIN}' completions bash) && COMP_WORDS=({words}) && COMP_CWORD={current} && \
             _faultlab faultlab \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\" && \
             echo \"${{COMPREPLY[@]}}\""
        );
        let out = std::process::Command::new("bash").args(["--noprofile", "--norc", "-c", &script]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(complete("faultlab ev", 1).trim(), "eval");
    assert_eq!(complete("faultlab run --base", 2).trim(), "--baseline");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        faultlab().args(["completions", shell]).assert().code(0).stdout(contains("baseline"));
    }
    faultlab().args(["completions", "tcsh"]).assert().code(1).stderr(contains("possible values"));
}

#[test]
fn the_manual_pages_have_every_subcommand_and_the_exit_codes() {
    faultlab()
        .arg("man")
        .assert()
        .code(0)
        .stdout(contains(".TH faultlab 1"))
        .stdout(contains("Exit codes of serve, proxy and model:"));
    let dir = tempfile::tempdir().unwrap();
    faultlab().args(["man", "--out"]).arg(dir.path()).assert().code(0);
    let eval = std::fs::read_to_string(dir.path().join("faultlab-eval.1")).unwrap();
    assert!(eval.contains(".TH faultlab-eval 1") && eval.contains("baseline"), "{eval}");
    assert!(dir.path().join("faultlab-report-merge.1").is_file());
    assert!(!dir.path().join("faultlab-sandbox.1").exists(), "hidden helpers get no page");
}

/// `server.json` is an entry the MCP Registry accepts (its schema as vendored in schemas/vendor/), for this
/// version of faultlab.
#[test]
fn server_json_is_valid_against_the_registrys_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |path: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(path)).unwrap()).unwrap()
    };
    let schema = read("schemas/vendor/mcp-registry-server.schema.json");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let entry = read("server.json");
    let errors: Vec<String> = validator.iter_errors(&entry).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "server.json: {errors:#?}");
    assert_eq!(entry["version_detail"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(entry["packages"][0]["version"], env!("CARGO_PKG_VERSION"));
    // The check can fail: without its version, the entry is refused.
    let mut broken = entry.clone();
    broken.as_object_mut().unwrap().remove("version_detail");
    assert!(!validator.is_valid(&broken));
}
