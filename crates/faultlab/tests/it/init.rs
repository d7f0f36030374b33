//! `faultlab init DIR`: the starter folder's target, rules and scenarios work together, and the command it prints
//! passes as written; nothing is overwritten.

use super::common::{BIN, faultlab};

/// PATH with the binary under test first, as if installed.
fn installed_path() -> std::ffi::OsString {
    let bin_dir = std::path::Path::new(BIN).parent().unwrap().to_owned();
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&path))).unwrap()
}

/// Runs `command` in `dir` with the binary installed on PATH: the starter's four scenarios must pass.
fn passes_the_starter(mut command: std::process::Command, dir: &std::path::Path) {
    let run = command.current_dir(dir).env("PATH", installed_path()).output().unwrap();
    let report = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{command:?}:\n{report}{}", String::from_utf8_lossy(&run.stderr));
    assert!(report.contains("4 passed, 0 failed"), "{report}");
}

#[test]
fn the_printed_next_command_passes_as_written() {
    let parent = tempfile::tempdir().unwrap();
    let output = faultlab().current_dir(parent.path()).args(["init", "my lab"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed = String::from_utf8(output.stdout).unwrap();
    let next = printed.lines().last().unwrap().trim();
    assert!(next.starts_with("cd 'my lab' && faultlab run"), "{printed}");

    let mut run = std::process::Command::new("sh");
    run.args(["-c", next]);
    passes_the_starter(run, parent.path());
    // The proxy recorded the faults the rules fired, one per scenario after the first.
    let trajectory = std::fs::read_to_string(parent.path().join("my lab/trajectory.jsonl")).unwrap();
    for rule in ["second-call-duplicated", "third-call-rate-limited", "fourth-call-never-answered"] {
        assert!(trajectory.contains(rule), "{rule} did not fire");
    }
}

#[test]
fn an_existing_file_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    faultlab().arg("init").arg(dir.path()).assert().success();
    std::fs::write(dir.path().join("faults.yaml"), "my rules").unwrap();
    std::fs::remove_file(dir.path().join("target.json")).unwrap();
    let output = faultlab().arg("init").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "bad input exits 1 (the exit-code table)");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("faults.yaml exists already") && stderr.lines().count() == 1, "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("faults.yaml")).unwrap(), "my rules");
    assert!(!dir.path().join("target.json").exists(), "nothing is written when one file exists");
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "mine");
}

#[test]
fn the_starter_runs_from_the_parent_folder_as_its_target_file_names_paths_from_its_own() {
    let parent = tempfile::tempdir().unwrap();
    faultlab().current_dir(parent.path()).args(["init", "my-lab"]).assert().success();
    let mut run = std::process::Command::new(BIN);
    run.args(["run", "my-lab/scenarios/", "--target", "my-lab/target.json"]);
    passes_the_starter(run, parent.path());
    assert!(parent.path().join("my-lab/trajectory.jsonl").exists(), "the proxy records beside the target file");
}
