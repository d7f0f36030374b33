//! The built-in tasks (one or more per fault category, one where the server asks the user before overwriting, and
//! one whose agent takes its tool calls from a model) and the oracle of expected control-agent verdicts on them.
//! The files live in `examples/eval/` (`tasks/`; `askback/` for the task whose grade depends on the agent answering
//! a server request; `auth/` for the task whose server is reached over HTTP and requires OAuth; `model/` for the
//! task with a model, beside its model script) so users can read and copy them; they are compiled in, the model
//! scripts too ([`MODEL_SCRIPTS`]), so `faultlab eval --controls` needs no files.

use crate::oracle::Oracle;
use crate::task::Task;

/// (file name, contents) of every built-in task.
pub const TASKS: &[(&str, &str)] = &[
    ("transport-timeout-after-write.yaml", include_str!("../builtin/tasks/transport-timeout-after-write.yaml")),
    ("transport-slow-read.yaml", include_str!("../builtin/tasks/transport-slow-read.yaml")),
    ("protocol-malformed-read.yaml", include_str!("../builtin/tasks/protocol-malformed-read.yaml")),
    ("data-empty-read.yaml", include_str!("../builtin/tasks/data-empty-read.yaml")),
    ("authorization-forbidden-write.yaml", include_str!("../builtin/tasks/authorization-forbidden-write.yaml")),
    ("temporal-out-of-order-read.yaml", include_str!("../builtin/tasks/temporal-out-of-order-read.yaml")),
    ("systemic-burst-read.yaml", include_str!("../builtin/tasks/systemic-burst-read.yaml")),
    ("elicitation-confirm-overwrite.yaml", include_str!("../builtin/askback/elicitation-confirm-overwrite.yaml")),
    (
        "authorization-token-revoked-midtask.yaml",
        include_str!("../builtin/auth/authorization-token-revoked-midtask.yaml"),
    ),
    ("model-tool-call-cut-read.yaml", include_str!("../builtin/model/model-tool-call-cut-read.yaml")),
];

/// (the name a built-in task's `model.script` gives, contents) of every built-in model script.
pub const MODEL_SCRIPTS: &[(&str, &str)] =
    &[("scripts/nonce-copy.yaml", include_str!("../builtin/model/scripts/nonce-copy.yaml"))];

/// (file name, contents) of the built-in tasks only `faultlab explore --controls` explores, kept out of `eval
/// --controls`: the task over HTTP without authorization, whose tool calls have a response stream and a session.
pub const EXPLORE_TASKS: &[(&str, &str)] =
    &[("transport-stream-lost-read.yaml", include_str!("../builtin/http/transport-stream-lost-read.yaml"))];

/// The tasks of [`EXPLORE_TASKS`].
pub fn explore_tasks() -> Vec<Task> {
    EXPLORE_TASKS.iter().map(|(name, text)| parse(name, text)).collect()
}

/// A built-in task, its model's script compiled in.
fn parse(name: &str, text: &str) -> Task {
    let mut task = Task::parse(text, false).unwrap_or_else(|e| panic!("built-in task {name}: {e}"));
    if let Some(model) = &mut task.model {
        let script = MODEL_SCRIPTS.iter().find(|(file, _)| model.script.as_os_str() == *file);
        let (_, text) =
            script.unwrap_or_else(|| panic!("built-in task {name}: no built-in model script {:?}", model.script));
        model.compiled = Some(text);
    }
    task
}

/// The oracle for the built-in tasks.
pub const ORACLE: &str = include_str!("../builtin/oracle.yaml");

pub fn tasks() -> Vec<Task> {
    TASKS.iter().map(|(name, text)| parse(name, text)).collect()
}

pub fn oracle() -> Oracle {
    Oracle::parse(ORACLE).unwrap_or_else(|e| panic!("built-in oracle: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::ControlAgent;
    use crate::task::Category;

    #[test]
    fn the_built_in_tasks_parse_and_cover_every_category() {
        let tasks = tasks();
        let covered: std::collections::BTreeSet<Category> = tasks.iter().flat_map(|t| t.categories()).collect();
        assert_eq!(covered.into_iter().collect::<Vec<_>>(), Category::ALL.to_vec());
    }

    #[test]
    fn a_built_in_model_task_reads_its_compiled_in_script() {
        let task = tasks().into_iter().find(|t| t.model.is_some()).expect("a built-in task with a model");
        let script = task.model.as_ref().unwrap().load_script().unwrap();
        assert_eq!(script.steps.iter().map(|s| s.call.as_str()).collect::<Vec<_>>(), ["read_file", "write_file"]);
    }

    #[test]
    fn the_oracle_has_one_entry_per_control_agent_and_task_and_at_least_fifty() {
        let oracle = oracle();
        let tasks = tasks();
        assert!(oracle.entries.len() >= 50, "{}", oracle.entries.len());
        for task in &tasks {
            for agent in ControlAgent::ALL {
                let n = oracle.entries.iter().filter(|e| e.task == task.id && e.agent == agent).count();
                assert_eq!(n, 1, "{} × {}", task.id, agent.name());
            }
        }
    }
}
