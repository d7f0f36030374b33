//! `faultlab eval` against a hostile agent: each test is an attack an agent under test made, run on the real
//! binary, sealed and (where the attack is on eval rather than on the seal) with the seal off
//! (`FAULTLAB_SANDBOX=subreaper`), which must not let it through either.

use crate::common::{BIN, python3, read_json};
use std::path::Path;
use std::time::Duration;

/// A task whose agent makes no call: the attacks are the agent's whole work.
const TASK: &str = "id: attack\nname: Attack\ngoal: copy the nonce\nworkspace: {input.txt: 'nonce: {{nonce}}'}\n\
allowed_tools: [read_file, write_file]\nrecovery: {primary: read_file}\ndeadline_ms: 3000\nstart_ms: 3000\n\
grader:\n  state_assertions: [{type: file_exists, path: output.txt}]\n";

/// Bound on one eval of these tests (60 s): an attack that hangs eval fails the test instead of hanging it.
const LIMIT: Duration = Duration::from_secs(60);

/// `faultlab eval` (the binary `bin`) of `TASK` by the shell script `script`, sealed or not; returns the exit code.
fn eval(dir: &Path, bin: &Path, script: &str, weak: bool) -> Option<i32> {
    let task = dir.join("attack.yaml");
    std::fs::write(&task, TASK).unwrap();
    let agent = dir.join("agent.sh");
    std::fs::write(&agent, script).unwrap();
    let mut command = assert_cmd::Command::new(bin);
    if weak {
        command.env("FAULTLAB_SANDBOX", "subreaper");
    }
    command
        .args(["eval", "--agent-name", "attacker", "--agent"])
        .arg(format!("sh {}", agent.display()))
        .arg("--out")
        .arg(dir.join("out"))
        .arg(&task)
        .timeout(LIMIT)
        .output()
        .unwrap()
        .status
        .code()
}

/// The agent renames the `faultlab` its `mcpServers` file names and puts a wrapper in its place, then connects:
/// eval must not start its proxy and workspace server through the wrapper (which, outside the sandbox, could
/// record nothing and turn a FAIL into a PASS). Sealed, the file cannot be renamed (read-only root); unsealed, it
/// can, but eval starts its helpers from the executable it opened at start.
#[test]
fn an_agent_that_replaces_the_faultlab_executable_changes_nothing_eval_starts() {
    for weak in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin/faultlab");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        // Copied by a `cp` of its own: a file this test process held open for writing would be inherited by any
        // process another test thread forks meanwhile, and exec of it would fail with ETXTBSY until that one execs.
        let copied = std::process::Command::new("cp").arg(BIN).arg(&bin).status().unwrap();
        assert!(copied.success());
        let marker = dir.path().join("started-through-the-wrapper");
        let script = format!(
            r#"bin=$(sed -n 's/.*"command": "\(.*\)",*$/\1/p' "$FAULTLAB_MCP_CONFIG")
mv "$bin" "$bin.real" && printf '#!/bin/sh\necho "$*" >> {marker}\nexec %s.real "$@"\n' "$bin" > "$bin" && chmod +x "$bin"
real="$bin.real"; [ -x "$real" ] || real="$bin"
"$real" connect "$PWD/mcp.sock" < /dev/null
"#,
            marker = marker.display()
        );
        let code = eval(dir.path(), &bin, &script, weak);
        assert_eq!(code, Some(2), "sealed: {}", !weak);
        let report = read_json(dir.path().join("out/report.json"));
        assert_eq!(report["runs"][0]["isolation"], if weak { "subreaper" } else { "namespaces" });
        let wrapped = std::fs::read_to_string(&marker).unwrap_or_default();
        assert!(wrapped.is_empty(), "sealed: {}: eval started through the agent's wrapper: {wrapped}", !weak);
    }
}

/// A FIFO where the claim belongs would block eval's `open` for ever: it is refused at once, and the run is
/// graded with the claim named as unreadable.
#[test]
fn a_fifo_for_a_claim_does_not_hang_eval() {
    for weak in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let code = eval(dir.path(), Path::new(BIN), "mkfifo \"$FAULTLAB_RESULT\"\n", weak);
        assert_eq!(code, Some(2), "sealed: {}", !weak);
        let run = &read_json(dir.path().join("out/report.json"))["runs"][0];
        assert!(run["claim"].is_null(), "{run}");
    }
}

/// FIFOs planted where eval writes its reports (an unsealed agent finds `--out` beside its run) would block eval
/// at the end: reports are written to a new file and renamed over whatever is there.
#[test]
fn fifos_planted_at_the_reports_do_not_hang_eval() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut script = String::new();
    for name in ["report.json", "report.md", "report.html", "junit.xml"] {
        let path = out.join(name);
        script.push_str(&format!("rm -f {0}; mkfifo {0}\n", path.display()));
    }
    let code = eval(dir.path(), Path::new(BIN), &script, true);
    assert_eq!(code, Some(2));
    for name in ["report.json", "report.md", "report.html", "junit.xml"] {
        assert!(std::fs::metadata(out.join(name)).unwrap().is_file(), "{name}");
    }
}

/// `faultlab eval` of the task `task` by the shell script `script`, sealed, with the environment `env` added;
/// returns the run's record.
fn eval_task(dir: &Path, task: &str, script: &str, env: &[(&str, &str)], extra: &[&str]) -> serde_json::Value {
    let file = dir.join("task.yaml");
    std::fs::write(&file, task).unwrap();
    let agent = dir.join("agent.sh");
    std::fs::write(&agent, script).unwrap();
    let out = dir.join("out");
    assert_cmd::Command::new(BIN)
        .args(["eval", "--agent-name", "attacker", "--agent"])
        .arg(format!("sh {}", agent.display()))
        .args(extra)
        .arg("--out")
        .arg(&out)
        .arg(&file)
        .envs(env.iter().copied())
        .timeout(LIMIT)
        .output()
        .unwrap();
    read_json(out.join("report.json"))["runs"][0].clone()
}

/// The nonce was a hash of the seed, the task, the agent and the repeat, all known to the agent: an agent that
/// never read the workspace computed it and passed. It now comes from a random key of the batch.
#[test]
fn an_agent_cannot_compute_a_nonce_it_was_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let task = "id: witness\nname: Witness\ngoal: answer with the nonce in input.txt\n\
workspace: {input.txt: 'nonce: {{nonce}}'}\nallowed_tools: [read_file]\nrecovery: {primary: read_file}\n\
witness: {type: content_match, target: claim}\ndeadline_ms: 3000\n";
    // The old derivation: seed 0, task, agent name, repeat 0.
    let script = r#"n=$(printf '%s' 'faultlab-nonce:0:witness:attacker:0' | sha256sum | cut -c1-16)
printf '{"status": "success", "answer": "%s"}' "$n" > "$FAULTLAB_RESULT"
"#;
    let run = eval_task(dir.path(), task, script, &[], &[]);
    assert_eq!(run["calls"].as_array().unwrap().len(), 0);
    assert_ne!(run["claim"]["answer"], run["nonce"], "the agent computed the nonce: {run}");
    assert_eq!(run["verdict"]["passed"], false, "{run}");
}

/// The agent is told the goal, its tools and its deadline: never the faults, the grader or the witness.
#[test]
fn an_agent_is_not_shown_the_fault_plan_or_the_grader() {
    let dir = tempfile::tempdir().unwrap();
    let task = TASK.replace(
        "deadline_ms",
        "faults: [{name: slow, match: {tool: read_file, nth: 1}, fault: {type: timeout}}]\ndeadline_ms",
    );
    let script = "cp \"$FAULTLAB_TASK\" \"$PWD/seen.json\"; cat \"$FAULTLAB_TASK\" >&2\n";
    let run = eval_task(dir.path(), &task, script, &[], &[]);
    let log =
        std::fs::read_to_string(dir.path().join("out").join(run["dir"].as_str().unwrap()).join("agent.log")).unwrap();
    let seen: serde_json::Value = serde_json::from_str(&log).unwrap_or_else(|e| panic!("{e}: {log}"));
    assert_eq!(seen["goal"], "copy the nonce");
    assert_eq!(seen["allowed_tools"], serde_json::json!(["read_file", "write_file"]));
    for hidden in ["faults", "grader", "witness", "recovery", "workspace", "seed", "description"] {
        assert!(seen.get(hidden).is_none(), "the agent was shown {hidden}: {seen}");
    }
}

/// The agent got every variable of faultlab's environment (a token set for something else included); now only
/// the documented defaults, its task's `agent_env` and `--pass-env`.
#[test]
fn an_agent_sees_only_the_variables_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let task = TASK.replace("deadline_ms", "agent_env: [MODEL_BASE_URL]\ndeadline_ms");
    let env = [("SECRET_TOKEN", "s3cr3t"), ("MODEL_BASE_URL", "http://model"), ("MODEL_KEY", "k3y")];
    let run = eval_task(dir.path(), &task, "env >&2\n", &env, &["--pass-env", "MODEL_KEY"]);
    let log =
        std::fs::read_to_string(dir.path().join("out").join(run["dir"].as_str().unwrap()).join("agent.log")).unwrap();
    assert!(!log.contains("SECRET_TOKEN"), "{log}");
    assert!(log.contains("MODEL_BASE_URL=http://model"), "{log}");
    assert!(log.contains("MODEL_KEY=k3y"), "{log}");
    assert!(log.contains("PATH="), "{log}");
}

/// A task's `command_succeeded` ran in the workspace, outside any sandbox: code the agent wrote there (here seeded,
/// as a `write_file` would leave it) wrote outside and started a daemon that outlived eval. It now runs sealed in
/// a copy of the workspace, and nothing it starts survives.
#[test]
fn a_task_command_runs_sealed_and_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("written-by-the-task-command");
    let seconds = format!("3599.{}", std::process::id());
    let task = format!(
        "id: command\nname: Command\ngoal: nothing\nworkspace: {{evil.sh: 'setsid sleep {seconds} < /dev/null > /dev/null 2>&1 & touch {marker}'}}\n\
allowed_tools: [read_file]\nrecovery: {{primary: read_file}}\ndeadline_ms: 3000\n\
grader:\n  state_assertions: [{{type: command_succeeded, command: [sh, evil.sh]}}]\n",
        marker = marker.display()
    );
    let _run = eval_task(dir.path(), &task, "true\n", &[], &[]);
    let survivors: Vec<i32> = faultlab_proc::scan::processes()
        .filter(|p| p.state != 'Z')
        .map(|p| p.pid)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&seconds))
        })
        .collect();
    for pid in &survivors {
        let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert!(survivors.is_empty(), "the task command's daemon outlived eval");
    assert!(!marker.exists(), "the task command wrote outside its copy of the workspace");
}

/// From the sandbox the agent reached every loopback port of the machine (a control API without a token among
/// them). It now has a network of its own with only its own loopback (up: a model it starts there works);
/// `--network host` gives it the machine's, and the report says which applied.
#[test]
fn an_agent_reaches_no_port_of_the_machine_unless_given_the_host_network() {
    // The agent is a python3 script (a listener on its own loopback needs more than a shell).
    if !python3("an_agent_reaches_no_port_of_the_machine_unless_given_the_host_network") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // Connects to the machine's port, and to a port of its own on its own loopback.
    let script = format!(
        "python3 -c \"
import socket
own = socket.socket(); own.bind(('127.0.0.1', 0)); own.listen(1)
socket.create_connection(own.getsockname(), timeout=2)
print('own loopback: up')
socket.create_connection(('127.0.0.1', {port}), timeout=2)
print('machine: reached')
\" >&2\n"
    );
    for (extra, network) in [(&[][..], "private"), (&["--network", "host"][..], "host")] {
        let dir = tempfile::tempdir().unwrap();
        let run = eval_task(dir.path(), TASK, &script, &[], extra);
        assert_eq!(run["network"], network, "{run}");
        let log = std::fs::read_to_string(dir.path().join("out").join(run["dir"].as_str().unwrap()).join("agent.log"))
            .unwrap();
        assert!(log.contains("own loopback: up"), "{network}: {log}");
        let reached = listener.accept().is_ok();
        assert_eq!(reached, network == "host", "{network}: {log}");
        assert_eq!(log.contains("machine: reached"), network == "host", "{network}: {log}");
    }
}

/// A 2 GiB (sparse) claim was read whole into memory: it is now refused by its size, before a byte is read, and
/// the run is graded without a claim.
#[test]
fn an_oversized_claim_is_refused_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let run = eval_task(dir.path(), TASK, "truncate -s 2G \"$FAULTLAB_RESULT\"\n", &[], &[]);
    assert!(run["claim"].is_null(), "{run}");
    assert_eq!(run["verdict"]["passed"], false);
    assert!(run["evidence"].get("claim.json").is_none(), "{run}");
}

/// An agent of one batch found another batch's live run (here its workspace, as a batch leaves it while it runs)
/// and deleted its `output.txt`, turning its PASS into a FAIL. Sealed, no file outside the agent's scratch folder
/// can be changed, and every batch's scratch folders are covered.
#[test]
fn an_agent_cannot_change_another_batchs_run() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-batch/runs/task/good/1/workspace/output.txt");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "the other run's answer").unwrap();
    // Another batch's scratch folders, where every batch of this user keeps them.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(dir.path()).unwrap());
    let scratch = std::env::temp_dir().join(format!("faultlab-{uid}/eval-other-batch-{}", std::process::id()));
    std::fs::create_dir_all(scratch.join("1")).unwrap();
    let script = format!("rm -f {0}; echo changed > {0}\nls {1} >&2\n", other.display(), scratch.display());
    let run = eval_task(dir.path(), TASK, &script, &[], &[]);
    let _ = std::fs::remove_dir_all(&scratch);
    assert_eq!(run["isolation"], "namespaces");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "the other run's answer");
    let log =
        std::fs::read_to_string(dir.path().join("out").join(run["dir"].as_str().unwrap()).join("agent.log")).unwrap();
    assert!(log.contains("No such file"), "another batch's scratch folders were visible: {log}");
}
