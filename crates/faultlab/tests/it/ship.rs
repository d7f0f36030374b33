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

/// `server.json` is an entry the MCP Registry accepts: valid against the registry's current published schema
/// (vendored in schemas/vendor/ with its URL and date), no field the schema does not name (the old entry's
/// snake_case fields are ignored by the schema's validator but refused by `mcp-publisher`), this version of
/// faultlab everywhere, and a namespace the publisher can prove: `io.github.OWNER` is proved by GitHub login, so
/// it must be the owner of the repository the entry and the crates name, and the image must carry the label the
/// registry reads to tie an OCI package to the entry.
#[test]
fn server_json_is_valid_against_the_registrys_current_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let read = |path: &str| -> serde_json::Value { serde_json::from_str(&text(path)).unwrap() };
    let schema = read("schemas/vendor/mcp-registry-server-2025-12-11.schema.json");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let entry = read("server.json");
    let errors: Vec<String> = validator.iter_errors(&entry).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "server.json: {errors:#?}");
    assert_eq!(entry["$schema"], schema["$id"], "server.json names the schema it is checked against");

    // Every key is one the schema names somewhere (the schema leaves additional properties open).
    let mut named = std::collections::BTreeSet::new();
    collect_property_names(&schema, &mut named);
    let mut unknown = Vec::new();
    unknown_keys(&entry, "", &named, &mut unknown);
    assert!(unknown.is_empty(), "server.json has fields the registry's schema does not name: {unknown:?}");

    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(entry["version"], version);
    let package = &entry["packages"][0];
    assert_eq!(package["registryType"], "oci");
    let image = package["identifier"].as_str().unwrap();
    assert!(image.ends_with(&format!(":{version}")), "the image tag is this version: {image}");

    let name = entry["name"].as_str().unwrap();
    let owner = name.strip_prefix("io.github.").and_then(|n| n.split('/').next()).unwrap();
    let repository = format!("https://github.com/{owner}/faultlab");
    assert_eq!(entry["repository"]["url"], repository.as_str(), "the namespace is the repository's owner");
    assert!(image.starts_with(&format!("ghcr.io/{owner}/faultlab:")), "{image}");
    assert!(
        text("Cargo.toml").contains(&format!("repository = \"{repository}\"")),
        "the crates name the same repository as server.json"
    );
    let label = format!("LABEL io.modelcontextprotocol.server.name=\"{name}\"");
    assert!(text("Containerfile").contains(&label), "the Containerfile lacks {label}");

    // The checks can fail: without its version the entry is refused, and so is the pre-release entry's shape.
    let mut broken = entry.clone();
    broken.as_object_mut().unwrap().remove("version");
    assert!(!validator.is_valid(&broken));
    let old = serde_json::json!({
        "name": "invalid.example/faultlab",
        "description": "x".repeat(170),
        "version_detail": {"version": version},
        "packages": [{"registry_name": "docker", "name": "faultlab", "version": version}],
    });
    assert!(!validator.is_valid(&old));
    let mut snake = entry.clone();
    snake["packages"][0]["runtime_hint"] = "docker".into();
    let mut found = Vec::new();
    unknown_keys(&snake, "", &named, &mut found);
    assert_eq!(found, ["/packages/0/runtime_hint"]);
}

/// The names of every `properties` entry anywhere in a schema.
fn collect_property_names(schema: &serde_json::Value, into: &mut std::collections::BTreeSet<String>) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(properties)) = map.get("properties") {
                into.extend(properties.keys().cloned());
            }
            map.values().for_each(|v| collect_property_names(v, into));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_property_names(v, into)),
        _ => {}
    }
}

/// The JSON pointers of the object keys in `value` that `named` lacks.
fn unknown_keys(
    value: &serde_json::Value,
    at: &str,
    named: &std::collections::BTreeSet<String>,
    into: &mut Vec<String>,
) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                if !named.contains(key) {
                    into.push(format!("{at}/{key}"));
                }
                unknown_keys(v, &format!("{at}/{key}"), named, into);
            }
        }
        serde_json::Value::Array(items) => {
            items.iter().enumerate().for_each(|(i, v)| unknown_keys(v, &format!("{at}/{i}"), named, into))
        }
        _ => {}
    }
}
