//! `faultlab`: parse the command line, run the chosen command, map the outcome to the documented exit code.
//!
//! Exit codes: 0 success; 1 the command could not do its job (a runtime failure); 2 the input was wrong (an
//! unknown flag, a bad value, a bad `LAB_*` variable). Every error names what to fix.

/// `print!` for command output: never panics, even when stdout is a pipe whose reader is gone (`faultlab run … |
/// head -1`). From then on output is dropped and the command finishes its work and its exit code as usual.
macro_rules! out {
    ($($arg:tt)*) => { $crate::write_stdout(format_args!($($arg)*)) };
}

/// `println!` as [`out!`] is `print!`.
macro_rules! outln {
    () => { $crate::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

mod agent;
mod builtin;
mod cli;
mod compare;
mod config;
mod connect;
mod console;
mod demo;
mod diagnose;
mod eval;
mod explore;
mod faults;
mod init;
mod inputs;
mod model;
mod pipes;
mod proxy;
mod replay;
mod report;
mod run;
mod serve;
mod signals;
mod workspace;

use clap::Parser;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout cannot be written (its reader closed it): later output is dropped without trying.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Writes and flushes command output. A closed pipe (EPIPE; Rust ignores SIGPIPE) ends the output, not the
/// command; any other write error is reported once on stderr.
pub fn write_stdout(args: std::fmt::Arguments) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    // Through anstream: the verdicts' colours reach a terminal, and are stripped in a pipe or under NO_COLOR.
    let text = console::colour_verdicts(&args.to_string());
    let mut stdout = anstream::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ =
                writeln!(std::io::stderr(), "faultlab: cannot write to stdout: {e}; the rest of the output is dropped");
        }
    }
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // Before anything can start a thread: the sandbox forks.
    if let cli::Command::Sandbox(args) = &cli.command {
        return sandbox(args);
    }
    init_tracing();
    let result = match cli.command {
        cli::Command::Serve(args) => serve::run(args),
        cli::Command::Proxy(args) => proxy::run(*args),
        cli::Command::Model(args) => model::run(args),
        cli::Command::Run(args) => run::run(args),
        cli::Command::Demo(args) => demo::run(args),
        cli::Command::Diagnose(args) => diagnose::run(args),
        cli::Command::Eval(args) => eval::run(args),
        cli::Command::Explore(args) => explore::run(args),
        cli::Command::Report(args) => report::run(args),
        cli::Command::Compare(args) => compare::run(args),
        cli::Command::Faults(args) => faults::run(args),
        cli::Command::Init(args) => init::run(args),
        cli::Command::Config(args) => config::run(args),
        cli::Command::Agent(args) => agent::run(args),
        cli::Command::WorkspaceServer(args) => workspace::run(args),
        cli::Command::Replay(args) => replay::run(args),
        cli::Command::Connect(args) => connect::run(args),
        cli::Command::Sandbox(_) => unreachable!("handled before tracing starts"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if !failure.silent {
                // Not eprintln!: a closed stderr must not turn an error exit into a panic.
                let line = console::error_line(&failure.error);
                let _ = writeln!(anstream::stderr(), "{} {line}", console::error_prefix());
            }
            ExitCode::from(failure.code)
        }
    }
}

/// `faultlab sandbox`: exits with the agent's code (see `faultlab_eval::sandbox`).
fn sandbox(args: &cli::SandboxArgs) -> ExitCode {
    let Some((program, rest)) = args.command.split_first() else { return ExitCode::from(2) };
    let spec = faultlab_eval::sandbox::Spec {
        scratch: args.scratch.clone(),
        hide: args.hide.clone(),
        status: args.status_fd,
        program: program.clone(),
        args: rest.to_vec(),
    };
    ExitCode::from(faultlab_eval::sandbox::run(&spec).clamp(0, 255) as u8)
}

/// An error and the exit code it maps to.
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
    /// Already reported in the command's own output format; main only sets the exit code.
    pub silent: bool,
}

impl Failure {
    /// Bad input: exit 2.
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self { code: 2, error: error.into(), silent: false }
    }

    pub fn new(code: u8, error: anyhow::Error) -> Self {
        Self { code, error, silent: false }
    }

    /// The error has been reported already.
    pub fn silenced(self) -> Self {
        Self { silent: true, ..self }
    }

    /// The command could not do its job: exit 1.
    pub fn runtime(error: impl Into<anyhow::Error>) -> Self {
        Self { code: 1, error: error.into(), silent: false }
    }
}

/// Logs go to stderr (stdout may be the MCP channel); `FAULTLAB_LOG` sets the filter (default: warnings).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FAULTLAB_LOG")
        // rmcp logs an abandoned request (a client that gave up on `hang`) as an error; here that is the point.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp::service=off"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
