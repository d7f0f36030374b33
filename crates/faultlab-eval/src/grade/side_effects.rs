//! Layer 4, side effects: files that must stay unchanged and files written exactly (or at most) once, counted
//! from the ledger when there is one.

use super::{Check, Cite, Layer, MAX_CITES, Run, check, key, layer, path_args, short};
use crate::evidence::Op;
use crate::task::IntegrityAssertion;

pub(super) fn side_effects_layer(run: &Run) -> Layer {
    layer(
        run.task
            .grader
            .integrity_assertions
            .iter()
            .map(|assertion| match assertion {
                IntegrityAssertion::FileUnchanged { path } => file_unchanged(run, path),
                IntegrityAssertion::FileWrittenAtMostOnce { path } => written_once(run, path, false),
                IntegrityAssertion::FileWrittenExactlyOnce { path } => written_once(run, path, true),
            })
            .collect(),
    )
}

fn file_unchanged(run: &Run, path: &str) -> Check {
    let (passed, detail) = match (run.before(path), run.after(path)) {
        (Some(b), Some(a)) if b.sha256 == a.sha256 => {
            (true, format!("{path} is unchanged (sha256 {})", short(&a.sha256)))
        }
        (None, None) => (true, format!("{path} did not exist before or after the run")),
        (Some(b), Some(a)) => (false, format!("{path} changed: sha256 {} → {}", short(&b.sha256), short(&a.sha256))),
        (Some(_), None) => (false, format!("{path} was deleted")),
        (None, Some(_)) => (false, format!("{path} was created")),
    };
    let target = key(path);
    let mut cites = vec![run.file_cite(path)];
    let ledger = run.ev.ledger.as_deref().unwrap_or_default();
    cites.extend(
        ledger
            .iter()
            .filter(|e| e.ok && (key(&e.path) == target || e.to.as_deref().is_some_and(|to| key(to) == target)))
            .take(MAX_CITES)
            .map(|e| Cite::Ledger { seq: e.seq }),
    );
    check(format!("file_unchanged {path}"), passed, detail, cites)
}

/// How many times a file was written, and from which evidence.
pub(super) struct Writes {
    pub(super) count: usize,
    /// Where the count comes from, e.g. `ledger seq 1, 2`.
    source: String,
    cites: Vec<Cite>,
}

/// With a ledger, its successful write/append entries for the path (the ledger is the truth: the trajectory
/// cannot tell a request the server executed twice from one it executed once). Without one, the executed calls of
/// write- or append-like tools naming the path; when there are none but the snapshots show the file changed, some
/// tool did write it, so it counts once.
pub(super) fn writes(run: &Run, path: &str) -> Writes {
    let target = key(path);
    let calls: Vec<usize> = run
        .ev
        .calls
        .iter()
        .filter(|c| c.executed && is_write_tool(&c.tool) && path_args(c).any(|(_, v)| key(v) == target))
        .map(|c| c.index)
        .collect();
    let lines = |lines: &[usize]| lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    match &run.ev.ledger {
        Some(ledger) => {
            let seqs: Vec<u64> = ledger
                .iter()
                .filter(|e| e.ok && matches!(e.op, Op::Write | Op::Append) && key(&e.path) == target)
                .map(|e| e.seq)
                .collect();
            let mut source = if seqs.is_empty() {
                "no write in the ledger".to_owned()
            } else {
                format!("ledger seq {}", seqs.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))
            };
            if calls.len() != seqs.len() {
                let shown = if calls.is_empty() { String::new() } else { format!(" (line {})", lines(&calls)) };
                source.push_str(&format!(
                    "; the trajectory shows {} executed write call(s){shown}, but the ledger is the truth",
                    calls.len()
                ));
            }
            let cites = seqs.iter().map(|&seq| Cite::Ledger { seq }).take(MAX_CITES).collect();
            Writes { count: seqs.len(), source, cites }
        }
        None => {
            let cites = calls.iter().map(|&line| Cite::Trajectory { line }).take(MAX_CITES).collect();
            if calls.is_empty() && run.changed(path) {
                let source = "no executed write call in the trajectory, but the snapshots show it changed".to_owned();
                return Writes { count: 1, source, cites };
            }
            let source = if calls.is_empty() {
                "no executed write call in the trajectory".to_owned()
            } else {
                format!("executed write calls at trajectory line {}", lines(&calls))
            };
            Writes { count: calls.len(), source, cites }
        }
    }
}

fn written_once(run: &Run, path: &str, exactly: bool) -> Check {
    let Writes { count, source, mut cites } = writes(run, path);
    let (passed, expected, name) = if exactly {
        (count == 1, "exactly 1", format!("file_written_exactly_once {path}"))
    } else {
        (count <= 1, "at most 1", format!("file_written_at_most_once {path}"))
    };
    let times = if count == 1 { "time" } else { "times" };
    cites.push(run.file_cite(path));
    check(name, passed, format!("{path} written {count} {times} (expected {expected}): {source}"), cites)
}

fn is_write_tool(tool: &str) -> bool {
    let tool = tool.to_ascii_lowercase();
    tool.contains("write") || tool.contains("append")
}
