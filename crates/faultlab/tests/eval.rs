//! `faultlab eval` end to end on the real binary: bad input, and an agent that hangs (killed at the task deadline
//! with everything it started, then graded). The oracle matrix itself runs in `scripts/eval-oracle.sh`.

use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt as _;
use predicates::str::contains;
use std::path::Path;

fn faultlab() -> Command {
    Command::cargo_bin("faultlab").unwrap()
}

const TASK: &str = "id: hang\nname: Hang\ngoal: copy the nonce\nworkspace: {input.txt: 'nonce: {{nonce}}'}\n\
allowed_tools: [read_file, write_file]\nrecovery: {primary: read_file}\ndeadline_ms: 400\n\
grader:\n  state_assertions: [{type: file_exists, path: output.txt}]\n";

#[test]
fn a_bad_task_file_names_the_file_the_line_and_the_key_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("bad.yaml");
    std::fs::write(&task, TASK.replace("deadline_ms", "deadline")).unwrap();
    faultlab()
        .args(["eval", "--controls", "--out"])
        .arg(dir.path().join("out"))
        .arg(&task)
        .assert()
        .code(1)
        .stderr(contains("bad.yaml").and(contains("deadline")).and(contains("line 7")));
}

#[test]
fn without_an_agent_it_says_how_to_name_one_and_exits_2() {
    faultlab().args(["eval"]).assert().code(2).stderr(contains("--agent 'CMD ARGS' or --controls"));
}

#[test]
fn a_hanging_agent_is_killed_at_the_deadline_with_its_children_and_graded() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("hang.yaml");
    std::fs::write(&task, TASK).unwrap();
    let pid_file = dir.path().join("child.pid");
    // The agent starts a child of its own and waits for it: both must be gone after the run.
    let agent = format!("sh -c 'sleep 600 & echo $! > {}; wait'", pid_file.display());
    let out = dir.path().join("out");
    faultlab().args(["eval", "--agent", &agent, "--out"]).arg(&out).arg(&task).assert().code(2);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let run = &report["runs"][0];
    assert_eq!(run["end"]["end"], "killed_at_deadline", "{run}");
    assert_eq!(run["verdict"]["recovery"]["outcome"], "failed");
    assert_eq!(run["verdict"]["passed"], false);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists(), "the agent's child {pid} outlived the run");
}
