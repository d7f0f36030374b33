//! `faultlab`: parse the command line, run the chosen command, map the outcome to the documented exit code.
//!
//! Exit codes: one table for every subcommand, in `exit`; every error names what to fix.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]
// `eprintln!` panics when stderr's reader is gone: errln! instead (below).
#![deny(clippy::print_stderr)]

// The output macros (`out!`, `outln!`, `errln!`) first: every module below uses them.
#[macro_use]
mod output;

mod agent;
mod auth;
mod baseline;
mod builtin;
mod cli;
mod compare;
mod config;
mod connect;
mod console;
mod control_token;
mod demo;
mod diagnose;
mod eval;
mod exit;
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

use clap::{CommandFactory as _, FromArgMatches as _};
use exit::{Exit, Failure};
use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    // Before anything can start a thread: the sandbox forks.
    if let cli::Command::Sandbox(args) = &cli.command {
        return sandbox(args);
    }
    init_tracing();
    let table = exit::table_of((&cli.command).into());
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
        cli::Command::Completions(args) => completions(&args),
        cli::Command::Man(args) => man(&args),
        cli::Command::Sandbox(_) => unreachable!("handled before tracing starts"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if !failure.silent {
                // Through anstream (colour on a terminal) and, like errln!, never a panic on a closed stderr.
                let line = console::error_line(&failure.error);
                let _ = writeln!(anstream::stderr(), "{} {line}", console::error_prefix());
            }
            ExitCode::from(failure.exit.code(table))
        }
    }
}

/// `command`'s help with `table` after what it says after its options.
fn with_table(command: clap::Command, table: &str) -> clap::Command {
    let text = match command.get_after_help() {
        Some(before) => format!("{before}\n\n{table}"),
        None => table.to_owned(),
    };
    command.after_help(text)
}

/// The command line, with the exit-code table at the end of each subcommand's `--help`. A usage error (clap's)
/// exits with the bad-input code of the subcommand it was for; `--help` and `--version` exit 0.
fn parse() -> Result<cli::Cli, ExitCode> {
    let command = command();
    let names: Vec<String> = command.get_subcommands().map(|s| s.get_name().to_owned()).collect();
    let error = match command.try_get_matches().and_then(|m| cli::Cli::from_arg_matches(&m)) {
        Ok(cli) => return Ok(cli),
        Err(error) => error,
    };
    let _ = error.print();
    if !error.use_stderr() {
        return Err(ExitCode::SUCCESS);
    }
    // The subcommand is the first argument (faultlab has no options of its own but --help and --version); without
    // a known one, clap's own usage code.
    let table = std::env::args().nth(1).filter(|a| names.contains(a)).map(|a| exit::table_of(&a));
    Err(ExitCode::from(table.map_or(2, |t| Exit::BadInput.code(t))))
}

/// The command line as users see it: each subcommand's help ends with its exit-code table, the top level's with
/// both (what --help, the completions and the manual page are made from).
pub fn command() -> clap::Command {
    let mut command = cli::Cli::command().after_help(exit::both());
    let names: Vec<String> = command.get_subcommands().map(|s| s.get_name().to_owned()).collect();
    for name in &names {
        let table = exit::help(exit::table_of(name));
        command = command.mut_subcommand(name, |sub| {
            // `report merge` too: every level a user asks for help on.
            let nested: Vec<String> = sub.get_subcommands().map(|s| s.get_name().to_owned()).collect();
            let sub = nested.iter().fold(sub, |sub, n| sub.mut_subcommand(n, |s| with_table(s, &table)));
            with_table(sub, &table)
        });
    }
    command
}

/// `faultlab completions SHELL`: the script on stdout.
fn completions(args: &cli::CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command(), "faultlab", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(())
}

/// `faultlab man`: faultlab(1) on stdout, or every page into `--out`.
fn man(args: &cli::ManArgs) -> Result<(), Failure> {
    let command = command();
    match &args.out {
        Some(dir) => std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(command, dir))
            .map_err(|e| Failure::runtime(anyhow::anyhow!("cannot write the manual pages to {}: {e}", dir.display()))),
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page).map_err(Failure::runtime)?;
            out!("{}", String::from_utf8_lossy(&page));
            Ok(())
        }
    }
}

/// `faultlab sandbox`: exits with the agent's code (see `faultlab_proc::sandbox`).
fn sandbox(args: &cli::SandboxArgs) -> ExitCode {
    let Some((program, rest)) = args.command.split_first() else { return ExitCode::from(2) };
    let (ports, sockets) = (args.relay_port.len(), args.relay_socket.len());
    if ports != sockets || ports > faultlab_proc::sandbox::MAX_RELAYS {
        errln!(
            "faultlab sandbox: give --relay-port and --relay-socket in pairs, at most {} ({ports} ports, {sockets} sockets)",
            faultlab_proc::sandbox::MAX_RELAYS
        );
        return ExitCode::from(2);
    }
    let spec = faultlab_proc::sandbox::Spec {
        scratch: args.scratch.clone(),
        hide: args.hide.clone(),
        status: args.status_fd,
        network: match args.host_network {
            true => faultlab_proc::sandbox::Network::Host,
            false => faultlab_proc::sandbox::Network::Private,
        },
        // Paired in order (checked above).
        relays: args
            .relay_port
            .iter()
            .zip(&args.relay_socket)
            .map(|(port, socket)| faultlab_proc::sandbox::Relay { port: *port, socket: socket.clone() })
            .collect(),
        program: program.clone(),
        args: rest.to_vec(),
    };
    ExitCode::from(faultlab_proc::sandbox::run(&spec).clamp(0, 255) as u8)
}

/// Logs go to stderr (stdout may be the MCP channel); `FAULTLAB_LOG` sets the filter (default: warnings).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FAULTLAB_LOG")
        // rmcp logs an abandoned request (a client that gave up on `hang`) as an error; here that is the point.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp::service=off"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
