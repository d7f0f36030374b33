//! `faultlab explore` end to end on the real binary: a control agent's breaking fault found from its healthy run,
//! reported with its faults and reproduced by the `faultlab eval` command the report gives; a healthy run that
//! already fails; bad arguments. The controls' oracle runs in `scripts/eval-oracle.sh`.

use crate::common::{BIN, control_agent, exits, faultlab, read_json, repo};
use predicates::prelude::PredicateBooleanExt as _;
use predicates::str::contains;
use serde_json::Value;
use std::path::Path;

fn explore(agent: &str, out: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    let task = repo("examples/eval/tasks/transport-timeout-after-write.yaml");
    let agent_args = ["explore", "--agent", &control_agent(agent), "--agent-name", agent, "--out"];
    faultlab().args(agent_args).arg(out).arg(task).args(extra).assert()
}

#[test]
fn a_timeout_after_the_write_breaks_the_blind_retrier_and_the_reproducer_replays_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    explore("blind-retrier", &out, &["--classes", "timeout-after"])
        .code(2)
        .stdout(contains("BREAKS v001 timeout-after at #2 write_file"));
    let report = read_json(out.join("report.json"));
    let e = &report["explorations"][0];
    assert_eq!(e["healthy"]["passed"], true);
    assert_eq!(e["calls"].as_array().unwrap().len(), 2, "{:#}", e["calls"]);
    // A read changes nothing: a timeout after executing it is a plain timeout, pruned with the reason.
    assert!(e["pruned"][0]["what"].as_str().unwrap().contains("read_file"), "{:#}", e["pruned"]);
    let variants = e["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 1);
    let v = &variants[0];
    assert_eq!(v["faults"][0]["tool"], "write_file");
    assert_eq!(v["faults"][0]["fault"], "timeout");
    assert_eq!(v["faults"][0]["mode"], "after");
    assert_eq!((v["broke"].as_bool(), v["fired"].as_bool()), (Some(true), Some(true)));
    assert_eq!(v["failing_layers"], serde_json::json!(["side_effects"]));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| #2 write_file (call 1 of it) | BREAKS |"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#"<td class="cell breaks" data-class="timeout-after">"#), "{html}");

    // The reproducer: its rules file holds the one rule, and its command grades the same failure again.
    let repro = &v["reproducer"];
    let rules = read_json(repro["rules_file"].as_str().unwrap());
    assert_eq!(rules["rules"].as_array().unwrap().len(), 1);
    let words = shlex::split(repro["command"].as_str().unwrap()).unwrap();
    assert_eq!(words[..2], [BIN.to_owned(), "eval".to_owned()]);
    let status = std::process::Command::new(&words[0]).args(&words[1..]).output().unwrap();
    assert_eq!(status.status.code(), Some(2), "{}", String::from_utf8_lossy(&status.stderr));
    let eval_out = words.iter().skip_while(|w| *w != "--out").nth(1).unwrap();
    let replayed = read_json(Path::new(eval_out).join("report.json"));
    let run = &replayed["runs"][0];
    assert_eq!(run["verdict"]["side_effects"]["passed"], false, "{:#}", run["verdict"]);
    assert_eq!(run["nonce"], report_nonce(&out));
}

/// The nonce of the explored variant's run (the reproducer must get the same one).
fn report_nonce(out: &Path) -> Value {
    let run = out.join("runs/transport-timeout-after-write/blind-retrier.v001/1/task.json");
    assert!(run.exists(), "{}", run.display());
    read_json(out.join("runs/transport-timeout-after-write/blind-retrier.v001/1/claim.json"))["answer"].clone()
}

#[test]
fn a_healthy_run_that_already_fails_stops_the_exploration_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    explore("hallucinating", &dir.path().join("out"), &[])
        .code(1)
        .stderr(contains("the healthy run (no faults) already fails").and(contains("nothing to explore")));
}

#[test]
fn bad_arguments_are_named_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    explore("good", &dir.path().join("out"), &["--classes", "timeout,slow"])
        .code(1)
        .stderr(contains("unknown class \"slow\"").and(contains("timeout-after")));
    explore("good", &dir.path().join("out"), &["--max-faults", "2", "--shard", "1/2"])
        .code(1)
        .stderr(contains("--shard with --max-faults 2"));
    exits(1, ["explore"]).stderr(contains("--agent 'CMD ARGS' or --controls"));
    // One control agent, named as the oracle names them; the others are listed.
    exits(1, ["explore", "--controls", "--control", "nobody"])
        .stderr(contains("--control nobody").and(contains("good, bad-retry")));
}

#[test]
fn report_merge_joins_explore_shards_and_refuses_an_incomplete_set() {
    let dir = tempfile::tempdir().unwrap();
    let shard = |index: u32| {
        let path = dir.path().join(format!("shard-{index}.json"));
        let report = serde_json::json!({
            "kind": "explore",
            "meta": {"faultlab": "0.1.0", "repeat": 1, "max_faults": 1, "jobs": 2, "wall_ms": 100 * index},
            "shard": {"index": index, "count": 2},
            "explorations": [],
        });
        std::fs::write(&path, report.to_string()).unwrap();
        path
    };
    let (one, two) = (shard(1), shard(2));
    let merged = dir.path().join("merged/report.json");
    let (merged_arg, one, two) = (merged.to_str().unwrap(), one.to_str().unwrap(), two.to_str().unwrap());
    exits(0, ["report", "merge", merged_arg, one, two]);
    let report = read_json(&merged);
    assert_eq!((report["kind"].as_str(), report["meta"]["wall_ms"].as_u64()), (Some("explore"), Some(200)));
    assert_eq!(report["merged"].as_array().unwrap().len(), 2);
    assert!(merged.with_extension("md").exists() && merged.with_extension("html").exists());
    exits(1, ["report", "merge", merged_arg, one]).stderr(contains("shard 1/2 but 1 report(s) are given"));
}

/// A task whose own fault makes the right end an honest failure (`aborted-safely`) is still explorable: its healthy
/// run (no fault) is graded on the goal and the policies, so the good agent passes it; and a folder of tasks is read
/// as eval reads one.
#[test]
fn a_folder_with_a_task_that_expects_an_honest_failure_is_explored() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    for name in ["authorization-forbidden-write.yaml", "transport-timeout-after-write.yaml"] {
        std::fs::copy(repo(&format!("examples/eval/tasks/{name}")), tasks.join(name)).unwrap();
    }
    let out = dir.path().join("out");
    faultlab()
        .args(["explore", "--agent", &control_agent("good"), "--agent-name", "good", "--classes", "error", "--out"])
        .arg(&out)
        .arg(&tasks)
        .assert()
        .code(0);
    let report = read_json(out.join("report.json"));
    let explorations = report["explorations"].as_array().unwrap();
    let healthy: Vec<(&str, bool)> =
        explorations.iter().map(|e| (e["task"].as_str().unwrap(), e["healthy"]["passed"].as_bool().unwrap())).collect();
    assert_eq!(healthy, [("authorization-forbidden-write", true), ("transport-timeout-after-write", true)]);
    assert!(explorations.iter().all(|e| !e["variants"].as_array().unwrap().is_empty()), "{report:#}");
}

/// The agent that gives up reports failure at its first failed call and breaks nothing: after a lost connection
/// that is an honest failure, so the variant degrades it, shown apart from breaks, and fails the command only with
/// `--fail-on degrade`. (The good agent connects again and recovers: the run's rules do not fire anew.)
#[test]
fn an_honest_failure_degrades_and_fails_the_command_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // --quick: the class's representative alone, so the report names what no class stands for as not tried.
    explore("gives-up", &out, &["--classes", "transport-loss", "--quick"])
        .code(0)
        .stdout(contains("DEGRADES v001 transport-loss at #1 read_file").and(contains("BREAKS").not()));
    let report = read_json(out.join("report.json"));
    let v = &report["explorations"][0]["variants"][0];
    assert_eq!((v["broke"].as_bool(), v["degraded"].as_bool()), (Some(false), Some(true)), "{v:#}");
    assert!(v["reproducer"]["command"].is_string(), "{v:#}");
    // report.json counts calls from 1, as the console's `#1 read_file` does.
    assert_eq!(
        (v["faults"][0]["call"].as_u64(), v["faults"][0]["tool"].as_str()),
        (Some(1), Some("read_file")),
        "{v:#}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| #1 read_file (call 1 of it) | degrades |") && md.contains("### Degrading variants"), "{md}");
    assert!(md.contains("Not tried") && md.contains("non_json_line"), "{md}");
    explore(
        "gives-up",
        &dir.path().join("strict"),
        &["--classes", "transport-loss", "--quick", "--fail-on", "degrade"],
    )
    .code(2)
    .stderr(contains("degraded the agent").and(contains("--fail-on degrade")));
}

/// Words of `--agent` other than the program and its script are passed as written, even when they name a folder
/// here: the exploration, and its printed reproducer run from the same folder, start the agent that was meant.
#[test]
fn agent_words_naming_a_folder_here_are_left_alone_and_the_reproducer_runs_from_here() {
    let dir = tempfile::tempdir().unwrap();
    // The report goes to a folder named like the agent's argument, which exists already (a second exploration).
    std::fs::create_dir(dir.path().join("blind-retrier")).unwrap();
    let task = repo("examples/eval/tasks/transport-timeout-after-write.yaml");
    let agent = control_agent("blind-retrier");
    let run = |args: &[&str]| faultlab().current_dir(dir.path()).args(args).assert();
    run(&[
        "explore",
        "--agent",
        &agent,
        "--classes",
        "timeout-after",
        "--out",
        "blind-retrier",
        task.to_str().unwrap(),
    ])
    .code(2)
    .stdout(contains("BREAKS v001 timeout-after"));
    let report = read_json(dir.path().join("blind-retrier/report.json"));
    let e = &report["explorations"][0];
    assert_eq!(e["command"], serde_json::json!([BIN, "agent", "blind-retrier"]));
    let words = shlex::split(e["variants"][0]["reproducer"]["command"].as_str().unwrap()).unwrap();
    let status = std::process::Command::new(&words[0]).args(&words[1..]).current_dir(dir.path()).output().unwrap();
    assert_eq!(status.status.code(), Some(2), "{}", String::from_utf8_lossy(&status.stderr));
}

/// `--from-trajectory`: the faults a failing run's trajectory shows are replayed and shrunk to the smallest set
/// that fails the same way, with a reproducer; a trajectory with no fault on a tool call is refused by name.
#[test]
fn a_recorded_failing_run_is_reproduced_by_its_smallest_fault_set() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    explore("blind-retrier", &first, &["--classes", "timeout-after"]).code(2);
    let failing = first.join("runs/transport-timeout-after-write/blind-retrier.v001/1/trajectory.jsonl");
    let out = dir.path().join("again");
    explore("blind-retrier", &out, &["--from-trajectory", failing.to_str().unwrap()])
        .code(2)
        .stdout(contains("BREAKS v001 timeout-after at #2 write_file"));
    let report = read_json(out.join("report.json"));
    let e = &report["explorations"][0];
    assert_eq!(e["reproduced"], "v001", "{e:#}");
    assert_eq!(e["variants"][0]["faults"][0]["fault"], "timeout");
    assert!(e["variants"][0]["reproducer"]["command"].is_string());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### Reproduced from the trajectory"), "{md}");
    // The healthy run's trajectory shows no fault: nothing to reproduce, said with the flag and the file.
    let healthy = first.join("runs/transport-timeout-after-write/blind-retrier.healthy/1/trajectory.jsonl");
    explore("blind-retrier", &dir.path().join("none"), &["--from-trajectory", healthy.to_str().unwrap()])
        .code(1)
        .stderr(contains("--from-trajectory").and(contains("nothing to reproduce")));
}

fn md_of(out: &Path) -> String {
    std::fs::read_to_string(out.join("report.md")).unwrap()
}

/// A task over HTTP: the response stream and the session of each tool call are sites, run through the proxy's HTTP
/// front; the agent that gives up at a lost stream or session degrades there (the map's `stream` and `session`
/// columns), the good agent survives them. Over stdio the same classes are listed as not tried, with why.
#[test]
fn over_http_the_stream_and_the_session_are_sites_and_over_stdio_they_are_listed_as_not_tried() {
    let dir = tempfile::tempdir().unwrap();
    let task = repo("examples/eval/http/transport-stream-lost-read.yaml");
    let run = |agent: &str, out: &Path| {
        let agent_args = ["explore", "--agent", &control_agent(agent), "--agent-name", agent, "--out"];
        faultlab().args(agent_args).arg(out).arg(&task).args(["--quick", "--classes", "stream,session"]).assert()
    };
    let gave_up = dir.path().join("gives-up");
    run("gives-up", &gave_up)
        .code(0)
        .stdout(contains("DEGRADES v001 stream at #1 read_file").and(contains("session at #1 read_file")));
    let e = &read_json(gave_up.join("report.json"))["explorations"][0];
    let variants = e["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 6, "two calls × two classes, and a 503 while each call's stream resumes: {variants:#?}");
    assert!(variants.iter().all(|v| v["degraded"] == true), "{variants:#?}");
    let resuming: Vec<&serde_json::Value> =
        variants.iter().filter(|v| v["faults"][0]["timing"] == "at-resume").collect();
    assert_eq!(resuming.len(), 2, "{variants:#?}");
    for v in &resuming {
        assert_eq!((&v["faults"][0]["class"], &v["faults"][0]["fault"]), (&"stream".into(), &"http_status".into()));
        assert_eq!(v["fired"], true, "its client resumed after the 100 ms retry and met the 503: {v:#}");
    }
    let pruned = e["pruned"].as_array().unwrap();
    assert!(
        pruned.iter().any(|p| p["what"].as_str().unwrap().starts_with("disconnect, latency, timeout")),
        "--quick says which faults at a resume it left out: {pruned:#?}"
    );
    let rules = read_json(resuming[0]["reproducer"]["rules_file"].as_str().unwrap());
    let rules = rules["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 2, "the cut and the fault at its resume: {rules:#?}");
    assert_eq!((&rules[0]["fault"]["type"], &rules[1]["match"]["at"]), (&"stream_cut".into(), &"resume".into()));
    assert!(md_of(&gave_up).contains("stream/http_status while the stream resumes, at #1 read_file"));
    let session = variants.iter().find(|v| v["faults"][0]["class"] == "session").unwrap();
    assert_eq!(session["faults"][0]["fault"], "session_expired_in_flight");
    let md = md_of(&gave_up);
    assert!(md.contains("| call | stream | session |"), "{md}");
    assert!(md.contains("| #1 read_file (call 1 of it) | degrades | degrades |"), "{md}");

    // The good agent resumes the cut stream and starts a new session: it survives, and every fault fired (a
    // survived cell is a pass, not `pass*`, a fault that never fired).
    let good = dir.path().join("good");
    run("good", &good).code(0).stdout(contains("0 breaking, 0 degrading"));
    let e = &read_json(good.join("report.json"))["explorations"][0];
    let variants = e["variants"].as_array().unwrap();
    assert!(variants.iter().all(|v| v["fired"] == true && v["passed"] == 1), "{variants:#?}");

    let stdio = dir.path().join("stdio");
    explore("good", &stdio, &["--quick", "--classes", "stream,session"]).code(0);
    let e = &read_json(stdio.join("report.json"))["explorations"][0];
    assert_eq!(e["variants"].as_array().unwrap().len(), 0);
    let pruned = e["pruned"].as_array().unwrap();
    let over_stdio = |class: &str| {
        pruned.iter().any(|p| {
            p["what"].as_str().unwrap().starts_with(&format!("{class} faults"))
                && p["why"].as_str().unwrap().starts_with("the task is over stdio")
        })
    };
    assert!(over_stdio("stream") && over_stdio("session"), "{pruned:#?}");
}
