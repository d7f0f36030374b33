//! `faultlab faults`: the catalogue listed and each fault explained from its own docs, with a rule that loads.

use super::common::faultlab;
use faultlab_engine::catalogue::docs;
use faultlab_engine::rules::RulesFile;

fn stdout(args: &[&str]) -> String {
    let output = faultlab().args(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_list_has_one_line_per_fault_with_its_category_and_summary() {
    let list = stdout(&["faults"]);
    for entry in docs::entries() {
        let line = list.lines().find(|l| l.split_whitespace().next() == Some(entry.name));
        let line = line.unwrap_or_else(|| panic!("{} is not listed:\n{list}", entry.name));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[1], entry.category.name(), "{line}");
        assert_eq!(words[2], entry.effect.name(), "{line}");
        assert!(line.ends_with(&entry.summary), "{line}");
    }
}

#[test]
fn each_fault_is_explained_with_a_rule_that_loads() {
    let dir = tempfile::tempdir().unwrap();
    let schema: serde_json::Value = serde_json::from_str(include_str!("../../../../schemas/task.schema.json")).unwrap();
    let task_keys: Vec<String> = schema["properties"].as_object().unwrap().keys().cloned().collect();
    // One process per fault, all at once: each only prints.
    let children: Vec<_> = docs::entries()
        .into_iter()
        .map(|entry| {
            let child = std::process::Command::new(super::common::BIN)
                .args(["faults", entry.name])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (entry, child)
        })
        .collect();
    for (entry, child) in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "faults {}", entry.name);
        let text = String::from_utf8(output.stdout).unwrap();
        let name = entry.name;
        assert!(text.starts_with(&format!("{name} — {}", entry.summary)), "{text}");
        for title in [docs::WIRE, docs::ROBUST, docs::GRADED, "Example rule", "Where it exists"] {
            assert!(text.lines().any(|l| l.starts_with(title)), "faults {name} has no {title:?} section:\n{text}");
        }
        // The wire section's first words, as the fault's file writes them.
        let wire = entry.section(docs::WIRE).unwrap();
        let opening: String = wire.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
        assert!(text.split_whitespace().collect::<Vec<_>>().join(" ").contains(&opening), "{name}: {opening}");

        // The example rule, unindented, is a rules file the proxy loads; the inline one a valid --fault.
        let rule: String = text
            .split("Example rule (a rules file, e.g. faults.yaml)\n")
            .nth(1)
            .unwrap()
            .lines()
            .take_while(|l| l.starts_with("  ") && !l.starts_with("  other example"))
            .map(|l| format!("{}\n", &l[2..]))
            .collect();
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, &rule).unwrap();
        let file = RulesFile::load(&path).unwrap_or_else(|e| panic!("{name}: {e}\n{rule}"));
        let expected: faultlab_engine::FaultKind = serde_json::from_str(entry.examples[0]).unwrap();
        assert_eq!(file.rules[0].fault, expected, "{name}");
        // The model hop: a model-only fault is refused on the MCP wire and its rule matches model requests (a
        // rule on a tool the model endpoint refuses); every fault the hop carries names `faultlab model`.
        let model = text.lines().find(|l| l.starts_with("  faultlab model:"));
        assert_eq!(model.is_some(), faultlab_model::hop::HopFault::of(&expected).is_some(), "{name}: {text}");
        if expected.model_only() {
            let refused = text.lines().find(|l| l.starts_with("  faultlab proxy and faultlab eval: refused"));
            assert!(refused.is_some_and(|l| l.contains("model hop")), "{name}: {text}");
            assert!(!text.contains("--fault '"), "{name}: no inline proxy rule for a fault the proxy refuses");
            assert!(file.rules[0].matcher.tool.is_none(), "{name}: the model hop has no tool to match: {rule}");
            faultlab_model::hop::check(&file).unwrap_or_else(|e| panic!("{name}: faultlab model refuses {rule}: {e}"));
        } else if let Some(why) = expected.serve_only() {
            // Only `faultlab serve` commits it: the proxy and eval refuse it, and the text says why.
            let refused = text.lines().find(|l| l.starts_with("  faultlab proxy and faultlab eval: refused"));
            assert!(refused.is_some_and(|l| l.contains(why)), "{name}: {text}");
            assert!(!text.contains("--fault '"), "{name}: no inline proxy rule for a fault the proxy refuses");
        } else {
            let spec = text.split("--fault '").nth(1).and_then(|s| s.split("' --").next()).unwrap();
            RulesFile::parse_spec(spec, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
            // The eval line names the task key a rule goes under, and a task has that key.
            let eval = text.lines().find(|l| l.starts_with("  faultlab eval:")).unwrap();
            let key = eval.split("a task's `").nth(1).and_then(|s| s.split(":`").next()).unwrap();
            assert!(task_keys.contains(&key.to_owned()), "{name}: a task has no key {key:?} ({task_keys:?}): {eval}");
        }
        let serve = text.lines().find(|l| l.starts_with("  faultlab serve:")).unwrap();
        let named = entry.serve_tool.is_some_and(|tool| serve.contains(&format!("`{}`", tool.name)));
        assert_eq!(named, entry.serve_tool.is_some(), "{serve}");
        assert!(entry.serve_tool.is_none_or(|tool| serve.ends_with(tool.restriction())), "{serve}");
    }
}

#[test]
fn an_alias_explains_its_fault_and_an_unknown_name_names_close_ones() {
    assert!(stdout(&["faults", "delayed"]).starts_with("latency — "));
    let output = faultlab().args(["faults", "rate-limit"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "bad input exits 1 (the exit-code table)");
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("\"rate-limit\"") && stderr.contains("did you mean rate_limit"), "{stderr}");
    for (typed, meant) in [("latncy", "latency"), ("outage", "server_outage")] {
        let output = faultlab().args(["faults", typed]).output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(&format!("did you mean {meant}")), "{typed}: {stderr}");
    }
    let output = faultlab().args(["faults", "zzzz"]).output().unwrap();
    assert!(!String::from_utf8(output.stderr).unwrap().contains("did you mean"));
}

#[test]
fn the_auth_faults_are_listed_and_each_explained_with_its_sections() {
    let list = stdout(&["faults"]);
    let auth = list.split("Auth faults").nth(1).expect("an auth faults section");
    for (name, _) in faultlab_auth::faults::DOCS {
        assert!(auth.lines().any(|l| l.split_whitespace().next() == Some(name)), "{name} is not listed:\n{auth}");
        let text = stdout(&["faults", name]);
        assert!(text.starts_with(&format!("{name} — ")), "{text}");
        for title in ["What it does on the wire", "What a robust client should do", "Example", "How it is graded"] {
            assert!(text.lines().any(|l| l == title), "faults {name} has no {title:?} section:\n{text}");
        }
        assert!(text.contains("--auth-fault"), "{text}");
        // The rules file it shows loads as written, with a `match` exactly for the faults that act at a request.
        let (_, shown) = text.split_once("In a rules file").unwrap_or_else(|| panic!("no rules file:\n{text}"));
        let file: String =
            shown.lines().skip(1).map_while(|l| l.strip_prefix("  ")).map(|l| format!("{l}\n")).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.yaml");
        std::fs::write(&path, &file).unwrap();
        let loaded = faultlab_engine::rules::RulesFile::load(&path).unwrap_or_else(|e| panic!("{e}\n{file}"));
        let auth = loaded.auth.unwrap();
        assert_eq!(auth.fault.name(), *name);
        let at_request = ["token_expired", "token_revoked", "insufficient_scope"].contains(name);
        assert_eq!(auth.matcher.is_some(), at_request, "{file}");
    }
}

/// The surface faults are armed by serve's surface tools as standing faults on the connection's later replies:
/// `faultlab faults` must send a user to those tools, not tell them no tool arms the fault.
#[test]
fn the_surface_faults_name_the_serve_tool_that_arms_them_on_later_replies() {
    for (fault, tool) in [
        ("list_drift", "tool_list_drift"),
        ("unknown_tool", "tool_list_drift"),
        ("broken_pagination", "list_pagination"),
        ("page_error", "list_pagination"),
    ] {
        let text = stdout(&["faults", fault]);
        let serve = text.lines().find(|l| l.starts_with("  faultlab serve:")).unwrap();
        assert!(!serve.contains("no tool arms it"), "{fault}: {serve}");
        assert!(serve.contains(&format!("`{tool}`")), "{fault}: {serve}");
        assert!(serve.contains("later"), "{fault}: a standing fault acts on later replies, not its own: {serve}");
        assert!(serve.contains("stdio and 2025-11-25 HTTP sessions only"), "{fault}: {serve}");
    }
}
