//! The exit-code table: one type every command returns through ([`Failure`] carries its row with the error), and the
//! table's text for each `--help` and the reference (docs/reference.md; a test checks it holds the same rows).
//!
//! A red build in CI must mean "the client regressed", never "the set-up broke": 2 is only ever a check that
//! failed; anything that kept the command from checking is 1. `serve` and `proxy` check nothing, so they keep the
//! meaning a server's exit code has (2 bad input).

/// What a command's end means; [`Exit::code`] turns it into the number for the command's [`Table`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything ended as expected.
    Success,
    /// The command could not do its job: a target or upstream that could not start or died, an agent program
    /// that could not be started, a file that cannot be written, an internal error. (An eval agent that started
    /// and then died is graded, [`Exit::Failed`]: eval grades agents, and dying is that agent's failure.)
    CouldNotRun,
    /// An expectation, grade, oracle, baseline or `--fail-on` check failed.
    Failed,
    /// A bad flag, value or input file.
    BadInput,
    /// `eval`, `explore` or `demo` stopped by SIGINT (`sigterm: false`, 130) or SIGTERM (143): the shell's
    /// 128 + signal number. The runs that ended are reported, marked incomplete.
    Interrupted { sigterm: bool },
}

/// Which of the two tables a subcommand follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// Commands that check something: `run`, `demo`, `diagnose`, `eval`, `explore`, `replay`, `report`, `compare`
    /// (and the `faults`, `init`, `config`, `completions` and `man` helpers).
    Check,
    /// Commands that serve: `serve`, `proxy`, `model` (and the hidden helpers eval starts).
    Service,
}

impl Exit {
    pub fn code(self, table: Table) -> u8 {
        match (self, table) {
            (Exit::Success, _) => 0,
            (Exit::CouldNotRun, _) => 1,
            (Exit::Failed, _) => 2,
            (Exit::BadInput, Table::Check) => 1,
            (Exit::BadInput, Table::Service) => 2,
            (Exit::Interrupted { sigterm: false }, _) => 130,
            (Exit::Interrupted { sigterm: true }, _) => 143,
        }
    }
}

/// The rows of a table: (code, meaning).
pub fn rows(table: Table) -> Vec<(u8, &'static str)> {
    match table {
        Table::Check => vec![
            (0, "everything as expected"),
            (
                1,
                "could not run: a bad flag, value or input file (naming the file, line and key), a target or \
                 upstream that could not start or died, an agent program that could not be started, an internal \
                 error",
            ),
            (
                2,
                "a check failed: an expectation, grade (an eval agent that started and then died, even at once, is \
                 graded: it failed), oracle verdict, baseline or --fail-on finding",
            ),
            (
                130,
                "interrupted (143 for SIGTERM): eval, explore or demo stopped by Ctrl-C; what had ended is \
                 reported (eval: the runs that ended, marked incomplete), the rest stopped and the temporary \
                 folders removed",
            ),
        ],
        Table::Service => vec![
            (0, "the session ended cleanly (the client left, a signal, a disconnect fault)"),
            (1, "could not run: the port is taken, the upstream could not start or died, stdout cannot be written"),
            (2, "bad input: a flag, value, rules file (naming the file, line and key) or LAB_* variable"),
        ],
    }
}

/// The table as the paragraph each `--help` ends with.
pub fn help(table: Table) -> String {
    let mut text = String::from("Exit codes:");
    for (code, meaning) in rows(table) {
        text.push_str(&format!("\n  {code}  {meaning}"));
    }
    text
}

/// Both tables, for the top-level `--help` and the manual page.
pub fn both() -> String {
    format!(
        "{}\n\n{}",
        help(Table::Check).replace(
            "Exit codes:",
            "Exit codes of run, demo, diagnose, eval, explore, replay, report, compare, faults, init, config:"
        ),
        help(Table::Service).replace("Exit codes:", "Exit codes of serve, proxy and model:")
    )
}

/// The subcommands of each table, as the reference's table (docs/reference.md) names them.
pub const CHECK_COMMANDS: [&str; 13] = [
    "run",
    "demo",
    "diagnose",
    "eval",
    "explore",
    "replay",
    "report",
    "compare",
    "faults",
    "init",
    "config",
    "completions",
    "man",
];

/// The table of the subcommand named `name` (the hidden helpers eval starts are services).
pub fn table_of(name: &str) -> Table {
    if CHECK_COMMANDS.contains(&name) { Table::Check } else { Table::Service }
}

/// An error and the row of the exit-code table it ends the command with.
pub struct Failure {
    pub exit: Exit,
    pub error: anyhow::Error,
    /// Already reported in the command's own output format; main only sets the exit code.
    pub silent: bool,
}

impl Failure {
    /// Bad input: a flag, value or input file (exit 1 for a check, 2 for a service).
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self { exit: Exit::BadInput, error: error.into(), silent: false }
    }

    /// A check failed: an expectation, grade, oracle verdict, baseline or `--fail-on` finding (exit 2).
    pub fn failed(error: anyhow::Error) -> Self {
        Self { exit: Exit::Failed, error, silent: false }
    }

    /// The error has been reported already.
    pub fn silenced(self) -> Self {
        Self { silent: true, ..self }
    }

    /// The command could not do its job: exit 1.
    pub fn runtime(error: impl Into<anyhow::Error>) -> Self {
        Self { exit: Exit::CouldNotRun, error: error.into(), silent: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_1_for_checks_and_2_for_services_and_2_is_only_ever_a_failed_check() {
        assert_eq!(Exit::BadInput.code(Table::Check), 1);
        assert_eq!(Exit::BadInput.code(Table::Service), 2);
        assert_eq!(Exit::Failed.code(Table::Check), 2);
        for table in [Table::Check, Table::Service] {
            assert_eq!(Exit::Success.code(table), 0);
            assert_eq!(Exit::CouldNotRun.code(table), 1);
        }
        assert_eq!(Exit::Interrupted { sigterm: false }.code(Table::Check), 130);
        assert_eq!(Exit::Interrupted { sigterm: true }.code(Table::Check), 143);
    }

    /// The reference's table (docs/reference.md) is the one the binary prints: each row's meaning is in it, under its code.
    #[test]
    fn the_readme_holds_every_row() {
        let readme = include_str!("../../../docs/reference.md");
        for table in [Table::Check, Table::Service] {
            for (code, meaning) in rows(table) {
                let row = format!("| {code} | {meaning} |");
                let found = readme.lines().any(|l| l.starts_with(&format!("| {code} |")) && l.contains(meaning));
                assert!(found, "docs/reference.md lacks the row {row:?}");
            }
        }
    }
}
