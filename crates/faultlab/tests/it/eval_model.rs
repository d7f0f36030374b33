//! `faultlab eval` with a task's model (`model: {script, faults}`): eval serves the scripted model endpoint
//! outside the agent's sandbox, with the task's model faults, and the agent reaches it at `FAULTLAB_MODEL_URL`
//! through the sandbox's relay; the recording is the run's evidence.

use crate::common::{faultlab, python3, read_json, repo};
use predicates::prelude::PredicateBooleanExt as _;
use predicates::str::contains;
use std::path::Path;

/// The scripted model: read input.txt, save its nonce, write it to output.txt, answer with it.
const SCRIPT: &str = "steps:\n  - call: read_file\n    arguments: {path: input.txt}\n    save: {nonce: 'nonce: ([0-9a-f]{16})'}\n    on_error: retry_once\n  - call: write_file\n    arguments: {path: output.txt, content: '{{nonce}}'}\n    on_error: give_up\nanswer: '{{nonce}}'\ngive_up: 'FAILED: a tool kept failing'\n";

/// The task, with `{model_faults}` in place of its model's rules.
const TASK: &str = "id: model-hop\nname: The model hop\ngoal: 'Read input.txt, find the line \"nonce: <value>\", and write exactly that value to output.txt.'\nworkspace: {input.txt: \"nonce: {{nonce}}\\n\"}\nallowed_tools: [read_file, write_file]\nrecovery: {primary: read_file, allowed_strategies: [retry, fallback, replan, not-applicable]}\nwitness: {type: content_match, target: output.txt}\ndeadline_ms: 10000\nmodel:\n  script: model.yaml\n  faults: {model_faults}\ngrader:\n  state_assertions:\n    - {type: file_equals, path: output.txt, content: '{{nonce}}'}\n";

/// The task file and its script in `dir`, the model's rules given.
fn task(dir: &Path, model_faults: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("model.yaml"), SCRIPT).unwrap();
    let path = dir.join("model-hop.yaml");
    std::fs::write(&path, TASK.replace("{model_faults}", model_faults)).unwrap();
    path
}

fn eval(task: &Path, out: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    faultlab().arg("eval").args(extra).arg("--out").arg(out).arg(task).assert()
}

/// The model is overloaded at its first request: the agent sees the 503, asks again, and does the task. The run's
/// `model.jsonl` holds both requests (the first with its fault), sealed in the report, and the report names the
/// fault with its rule and request.
#[test]
fn an_agent_retries_an_overloaded_model_and_the_run_names_the_fault_at_its_request() {
    if !python3("an_agent_retries_an_overloaded_model_and_the_run_names_the_fault_at_its_request") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let task = task(dir.path(), "[{name: busy, match: {nth: 1}, fault: {type: overloaded}}]");
    let agent = format!("python3 {} careful", repo("crates/faultlab/tests/it/model_loop_agent.py").display());
    // The sealed agent reaches the model through the sandbox's relay; with the machine's network, directly.
    for network in ["private", "host"] {
        let out = dir.path().join(network);
        let graded = eval(&task, &out, &["--agent", &agent, "--agent-name", "careful", "--network", network]);
        overloaded_once(&out, graded, network);
    }
}

/// What the run of the overloaded model in `out` must show.
fn overloaded_once(out: &Path, graded: assert_cmd::assert::Assert, network: &str) {
    let report = read_json(out.join("report.json"));
    let run = &report["runs"][0];
    assert_eq!(run["network"], network, "{run:#}");
    assert_eq!(run["verdict"]["passed"], true, "{run:#}");
    graded.code(0);
    assert_eq!(run["model"]["requests"], 4, "the 503, then a request per turn: {run:#}");
    assert_eq!(run["model"]["fired"], serde_json::json!([{"rule": "busy", "fault": "overloaded", "request": 1}]));
    assert_eq!(run["faults"], serde_json::json!(["overloaded"]));
    assert_eq!(run["faults_fired"], serde_json::json!(["overloaded"]));
    let folder = out.join(run["dir"].as_str().unwrap());
    let recording = std::fs::read_to_string(folder.join("model.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = recording.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["fault"]["fault"]["type"], "overloaded");
    assert_eq!(lines[0]["request"], lines[1]["request"], "the retry asked the same");
    assert!(lines[1].get("fault").is_none());
    let digest = run["evidence"]["model.jsonl"].as_str().unwrap();
    assert_eq!(digest.len(), 64, "model.jsonl is sealed in the report: {run:#}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        markdown.contains("4 model requests") && markdown.contains("overloaded (rule busy) at request 1"),
        "{markdown}"
    );
}

/// A fault of the model hop among the MCP faults, an MCP fault among the model's, and a key the model block does
/// not know are each refused with the task file's key named.
#[test]
fn a_fault_on_the_wrong_hop_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mcp = task(dir.path(), "[]");
    let text = std::fs::read_to_string(&mcp).unwrap();
    let with_model_fault = text
        .replace("grader:", "faults: [{name: cut, match: {tool: read_file}, fault: {type: tool_call_cut}}]\ngrader:");
    std::fs::write(&mcp, with_model_fault).unwrap();
    eval(&mcp, &out, &["--controls"]).code(1).stderr(contains("faults: rule \"cut\"").and(contains("model.faults")));
    let wrong = task(dir.path(), "[{name: dup, fault: {type: duplicate}}]");
    eval(&wrong, &out, &["--controls"]).code(1).stderr(
        contains("model.faults").and(contains("rule \"dup\"")).and(contains("does not apply on the model hop")),
    );
    let unknown = task(dir.path(), "[]");
    let text =
        std::fs::read_to_string(&unknown).unwrap().replace("  script: model.yaml", "  script: model.yaml\n  seed: 3");
    std::fs::write(&unknown, text).unwrap();
    eval(&unknown, &out, &["--controls"]).code(1).stderr(contains("model").and(contains("seed")));
}

/// `faultlab explore` on the task with a model, model class only, its representative (`tool_call_cut`) at each
/// model request of the healthy run: the agent that runs a cut call with `{}` and claims success breaks at the
/// model requests that asked for a tool call, named as model sites after the tool calls; the careful one (it asks
/// again) survives every one.
#[test]
fn explore_finds_the_agent_that_acts_on_a_cut_tool_call_at_its_model_request_and_the_careful_one_survives() {
    if !python3(
        "explore_finds_the_agent_that_acts_on_a_cut_tool_call_at_its_model_request_and_the_careful_one_survives",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let task = task(dir.path(), "[{name: busy, match: {nth: 1}, fault: {type: overloaded}}]");
    let script = repo("crates/faultlab/tests/it/model_loop_agent.py");
    let mut found = Vec::new();
    for mode in ["trusting", "careful"] {
        let out = dir.path().join(mode);
        let agent = format!("python3 {} {mode}", script.display());
        let args = ["explore", "--agent", &agent, "--agent-name", mode, "--quick", "--classes", "model", "--out"];
        let explored = faultlab().args(args).arg(&out).arg(&task).assert();
        let report = read_json(out.join("report.json"));
        let e = &report["explorations"][0];
        assert_eq!(e["healthy"]["passed"], true, "{mode}: {e:#}");
        explored.code(if mode == "trusting" { 2 } else { 0 });
        let calls = e["calls"].as_array().unwrap();
        // Two tool calls, then the three model requests (read, write, answer).
        let labels: Vec<String> = calls[2..].iter().map(|c| format!("{} {}", c["tool"], c["nth"])).collect();
        assert_eq!(
            labels,
            [r#""model chat.completions" 1"#, r#""model chat.completions" 2"#, r#""model chat.completions" 3"#]
        );
        let variants = e["variants"].as_array().unwrap();
        assert_eq!(variants.len(), 3, "{mode}: {variants:#?}");
        for v in variants {
            assert_eq!(
                (v["faults"][0]["class"].as_str(), v["faults"][0]["fault"].as_str()),
                (Some("model"), Some("tool_call_cut"))
            );
            assert_eq!(v["fired"], true, "{mode}: {v:#}");
        }
        let broke: Vec<u64> =
            variants.iter().filter(|v| v["broke"] == true).map(|v| v["faults"][0]["call"].as_u64().unwrap()).collect();
        found.push((mode, broke));
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("#3 model chat.completions (request 1)"), "{md}");
        assert!(!md.contains("Never tried by explore: the model hop's faults"), "{md}");
    }
    assert_eq!(found, [("trusting", vec![3, 4]), ("careful", vec![])]);
}

/// The sandbox's relays come in pairs of a port and a socket, at most 4: a port without its socket, or a fifth
/// pair, is refused before anything starts.
#[test]
fn the_sandbox_takes_its_relays_in_pairs_and_at_most_four() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().to_str().unwrap();
    let pairs = |ports: u16, sockets: u16| {
        let mut args: Vec<String> = ["sandbox", "--scratch", scratch, "--status-fd", "3"].map(String::from).to_vec();
        args.extend((1..=ports).flat_map(|p| ["--relay-port".into(), (40000 + p).to_string()]));
        args.extend((1..=sockets).flat_map(|s| ["--relay-socket".into(), format!("{scratch}/{s}.sock")]));
        args.extend(["--".into(), "true".into()]);
        faultlab().args(args).assert()
    };
    pairs(2, 1).code(2).stderr(contains("in pairs, at most 4 (2 ports, 1 sockets)"));
    pairs(5, 5).code(2).stderr(contains("at most 4 (5 ports, 5 sockets)"));
}

/// The example folder of the built-in task with a model is a folder of tasks as users give one: its script lies
/// below it, so `faultlab eval examples/eval/model/` runs the one task (it once read the script as a second task and
/// refused it), and the good control, asking its model again after the cut call, passes.
#[test]
fn the_example_folder_with_a_model_evaluates_as_its_one_task() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let agent = crate::common::control_agent("good");
    eval(&repo("examples/eval/model"), &out, &["--agent", &agent, "--agent-name", "good"]).code(0);
    let report = read_json(out.join("report.json"));
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{report:#}");
    assert_eq!(runs[0]["task"], "model-tool-call-cut-read", "{report:#}");
    assert_eq!(runs[0]["verdict"]["passed"], true, "{report:#}");
    assert_eq!(runs[0]["model"]["fired"][0]["fault"], "tool_call_cut", "{report:#}");
}

/// Beyond single faults at the model hop: a survived run's model requests are its support like its tool calls
/// (the agent acted on every answer), and a request asked again after a cut is a recovery site. So the search
/// extends a cut at the read's request by cuts at the requests the good control asked again, and finds where its
/// bound of three requests a step gives out: three cuts in a row at one step's requests, an honest failure
/// (degrades), never a break. (Sets at model requests were never built: the support held tool calls only.)
#[test]
fn the_search_extends_sets_at_the_model_requests_a_survived_run_made() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let agent = crate::common::control_agent("good");
    let args = ["explore", "--agent", &agent, "--agent-name", "good", "--quick", "--classes", "model"];
    let explored = faultlab()
        .args(args)
        .args(["--max-faults", "3", "--out"])
        .arg(&out)
        .arg(repo("examples/eval/model/model-tool-call-cut-read.yaml"))
        .assert();
    let report = read_json(out.join("report.json"));
    let e = &report["explorations"][0];
    explored.code(0);
    let variants = e["variants"].as_array().unwrap();
    let requests = |v: &serde_json::Value| -> Vec<u64> {
        let faults = v["faults"].as_array().unwrap();
        assert!(faults.iter().all(|f| f["class"] == "model"), "{v:#}");
        faults.iter().map(|f| f["nth"].as_u64().unwrap()).collect()
    };
    assert!(variants.iter().any(|v| requests(v).len() == 2), "{variants:#?}");
    assert!(variants.iter().all(|v| v["broke"] == false), "{variants:#?}");
    let degraded: Vec<Vec<u64>> = variants.iter().filter(|v| v["degraded"] == true).map(requests).collect();
    assert_eq!(degraded, [vec![1, 2, 3], vec![2, 3, 4]], "{variants:#?}");
    // Request 4 is no request of the healthy run (three: read, write, answer): the retry a cut added.
    let sites: Vec<u64> = e["calls"].as_array().unwrap().iter().filter_map(|c| c["nth"].as_u64()).collect();
    assert!(sites.contains(&4), "{e:#}");
}
