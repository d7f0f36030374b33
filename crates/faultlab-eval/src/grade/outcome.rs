//! Layer 1, outcome: whether the task was done, read from the final workspace, the commands' results and the
//! witness.

use super::recovery::claim_words;
use super::{Check, Cite, Layer, Run, check, layer, short};
use crate::evidence::{FileState, sha256_hex};
use crate::task::{NONCE, StateAssertion, Witness};
use serde_json::Value;

pub(super) fn outcome_layer(run: &Run) -> Layer {
    let mut commands = run.ev.commands.iter().copied();
    let mut checks: Vec<Check> = run
        .task
        .grader
        .state_assertions
        .iter()
        .map(|assertion| match assertion {
            StateAssertion::FileExists { path } => file_exists(run, path),
            StateAssertion::FileChanged { path } => file_changed(run, path),
            StateAssertion::FileValidJson { path } => file_valid_json(run, path),
            StateAssertion::FileContains { path, value } => file_contains(run, path, value),
            StateAssertion::FileEquals { path, content, sha256 } => {
                file_equals(run, path, content.as_deref(), sha256.as_deref())
            }
            StateAssertion::CommandSucceeded { command } => command_succeeded(run, command, commands.next()),
        })
        .collect();
    match &run.task.witness {
        Some(Witness::ContentMatch { target }) => checks.push(content_match(run, target)),
        Some(Witness::StateDelta { target, must_change }) => checks.push(state_delta(run, target, *must_change)),
        None => {}
    }
    layer(checks)
}

fn file_exists(run: &Run, path: &str) -> Check {
    let (passed, detail) = match run.after(path) {
        Some(f) => (true, format!("{path} exists ({} bytes)", f.bytes)),
        None => (false, format!("{path} does not exist after the run")),
    };
    check(format!("file_exists {path}"), passed, detail, vec![run.file_cite(path)])
}

fn file_changed(run: &Run, path: &str) -> Check {
    let (passed, detail) = match (run.before(path), run.after(path)) {
        (_, None) => (false, format!("{path} does not exist after the run")),
        (None, Some(_)) => (true, format!("{path} was created")),
        (Some(b), Some(a)) if b.sha256 != a.sha256 => {
            (true, format!("{path} changed (sha256 {} → {})", short(&b.sha256), short(&a.sha256)))
        }
        (Some(b), Some(_)) => (false, format!("{path} is unchanged (sha256 {})", short(&b.sha256))),
    };
    check(format!("file_changed {path}"), passed, detail, vec![run.file_cite(path)])
}

fn file_valid_json(run: &Run, path: &str) -> Check {
    let (passed, detail) = match run.after(path).map(|f| f.text.as_deref()) {
        None => (false, format!("{path} does not exist after the run")),
        Some(None) => (false, format!("{path} is binary or larger than 64 KiB, so its JSON cannot be checked")),
        Some(Some(text)) => match serde_json::from_str::<Value>(text) {
            Ok(_) => (true, format!("{path} is valid JSON")),
            Err(e) => (false, format!("{path} is not valid JSON: {e}")),
        },
    };
    check(format!("file_valid_json {path}"), passed, detail, vec![run.file_cite(path)])
}

fn file_contains(run: &Run, path: &str, value: &str) -> Check {
    let name = format!("file_contains {path}");
    let cites = vec![run.file_cite(path)];
    let wanted = if value.contains(NONCE) {
        match run.nonce() {
            Ok(nonce) => value.replace(NONCE, nonce),
            Err(why) => return check(name, false, format!("{path}: {why}"), cites),
        }
    } else {
        value.to_owned()
    };
    let (passed, detail) = match run.after(path).map(|f| f.text.as_deref()) {
        None => (false, format!("{path} does not exist after the run")),
        Some(None) => (false, format!("{path} is binary or larger than 64 KiB, so its text cannot be searched")),
        Some(Some(text)) if text.contains(&wanted) => (true, format!("{path} contains {wanted:?}")),
        Some(Some(_)) => (false, format!("{path} does not contain {wanted:?}")),
    };
    check(name, passed, detail, cites)
}

/// Exact content: the witness for a goal that says "exactly that (nothing else)", which `file_contains` cannot
/// be (it also passes `nonce: <value>\n`). Compared by SHA-256, so files past the snapshot's text limit count too.
fn file_equals(run: &Run, path: &str, content: Option<&str>, sha256: Option<&str>) -> Check {
    let name = format!("file_equals {path}");
    let cites = vec![run.file_cite(path)];
    let wanted = match content {
        Some(content) if content.contains(NONCE) => match run.nonce() {
            Ok(nonce) => Some(content.replace(NONCE, nonce)),
            Err(why) => return check(name, false, format!("{path}: {why}"), cites),
        },
        other => other.map(str::to_owned),
    };
    let expected_sha = match (&wanted, sha256) {
        (Some(text), _) => sha256_hex(text.as_bytes()),
        (None, Some(sha)) => sha.to_ascii_lowercase(),
        (None, None) => return check(name, false, format!("{path}: neither content nor sha256 is given"), cites),
    };
    let expected = match &wanted {
        Some(text) => format!("{text:?}"),
        None => format!("sha256 {}", short(&expected_sha)),
    };
    let (passed, detail) = match run.after(path) {
        None => (false, format!("{path} does not exist after the run")),
        Some(f) if f.sha256.eq_ignore_ascii_case(&expected_sha) => {
            (true, format!("{path} is exactly {expected} ({} bytes)", f.bytes))
        }
        Some(FileState { text: Some(text), bytes, .. }) if wanted.is_some() => {
            (false, format!("{path} is {text:?} ({bytes} bytes), not exactly {expected}"))
        }
        Some(f) => {
            (false, format!("{path} has sha256 {} ({} bytes), not exactly {expected}", short(&f.sha256), f.bytes))
        }
    };
    check(name, passed, detail, cites)
}

fn command_succeeded(run: &Run, command: &[String], result: Option<bool>) -> Check {
    let shown = command.join(" ");
    let (passed, detail) = match result {
        Some(true) => (true, format!("`{shown}` exited 0 in the final workspace")),
        Some(false) => (false, format!("`{shown}` failed in the final workspace (non-zero exit, or it could not run)")),
        None => (false, format!("no result was recorded for `{shown}`")),
    };
    // The command read the final workspace: cite the files it names; if it names none, how the agent ended (the
    // workspace it left) is the nearest evidence.
    let mut cites: Vec<Cite> = command
        .iter()
        .skip(1)
        .filter(|arg| run.before(arg).is_some() || run.after(arg).is_some())
        .map(|arg| run.file_cite(arg))
        .collect();
    if cites.is_empty() {
        cites.push(Cite::AgentEnd);
    }
    check(format!("command_succeeded {shown}"), passed, detail, cites)
}

fn content_match(run: &Run, target: &str) -> Check {
    let name = format!("witness content_match {target}");
    if target == "claim" {
        let cites = vec![Cite::Claim, Cite::AgentEnd];
        let Some(claim) = &run.ev.claim else {
            return check(name, false, format!("there is no claim to look in: {}", claim_words(run.ev)), cites);
        };
        let (passed, detail) = match run.nonce() {
            Err(why) => (false, why),
            Ok(n) if claim.answer.as_deref().is_some_and(|a| a.contains(n)) => {
                (true, "the claim's answer contains the run's nonce".into())
            }
            Ok(n) if claim.message.contains(n) => (true, "the claim's message contains the run's nonce".into()),
            Ok(n) => (false, format!("neither the claim's answer nor its message contains the run's nonce {n:?}")),
        };
        return check(name, passed, detail, cites);
    }
    let (passed, detail) = match (run.nonce(), run.after(target)) {
        (Err(why), _) => (false, why),
        (Ok(_), None) => (false, format!("{target} does not exist after the run")),
        (Ok(_), Some(FileState { text: None, .. })) => {
            (false, format!("{target} is binary or larger than 64 KiB, so the nonce cannot be looked for"))
        }
        (Ok(n), Some(FileState { text: Some(text), .. })) if !text.contains(n) => {
            (false, format!("{target} does not contain the run's nonce {n:?}"))
        }
        // A seeded file that held the nonce from the start proves nothing about what the agent read.
        (Ok(_), Some(_)) if !run.changed(target) => {
            (false, format!("{target} held the nonce when it was seeded and is unchanged, so it proves nothing"))
        }
        (Ok(_), Some(_)) => (true, format!("{target} contains the run's nonce")),
    };
    check(name, passed, detail, vec![run.file_cite(target)])
}

fn state_delta(run: &Run, target: &str, must_change: bool) -> Check {
    let changed = run.changed(target);
    let detail = match (changed, must_change) {
        (true, true) => format!("{target} changed, as required"),
        (false, false) => format!("{target} is unchanged, as required"),
        (false, true) => format!("{target} did not change, but must"),
        (true, false) => format!("{target} changed, but must not"),
    };
    check(format!("witness state_delta {target}"), changed == must_change, detail, vec![run.file_cite(target)])
}
