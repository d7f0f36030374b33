//! `faultlab proxy`: load the rules, start the upstream, relay stdio through the fault engine.

use crate::Failure;
use crate::cli::ProxyArgs;
use anyhow::Context as _;
use faultlab_engine::Recorder;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::stdio::{self, ProxyError};

pub fn run(args: ProxyArgs) -> Result<(), Failure> {
    let mut file = match &args.rules {
        Some(path) => RulesFile::load(path).map_err(Failure::usage)?,
        None => RulesFile::default(),
    };
    for (i, spec) in args.faults.iter().enumerate() {
        file.rules.push(RulesFile::parse_spec(spec, i + 1).map_err(Failure::usage)?);
    }
    if args.seed.is_some() {
        file.seed = args.seed;
    }
    let recorder = match &args.record {
        Some(path) => Recorder::file(path)
            .with_context(|| format!("cannot open the trajectory file {}", path.display()))
            .map_err(Failure::usage)?,
        None => Recorder::stderr(),
    };
    let (program, rest) = args.upstream.split_first().expect("clap requires the upstream command");
    let mut command = tokio::process::Command::new(program);
    command.args(rest);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    let served = runtime.block_on(async {
        let run = stdio::run(command, RuleSet::new(file), recorder, tokio::io::stdin(), tokio::io::stdout());
        tokio::select! {
            result = run => result.map(|_| ()),
            signal = wait_for_signal() => {
                eprintln!("faultlab: received {signal}; shutting down");
                Ok(())
            }
        }
    });
    // A blocking stdin read may still be pending; the process is about to exit, so do not wait for it.
    std::mem::forget(runtime);
    match served {
        Ok(()) => Ok(()),
        Err(e @ ProxyError::Spawn { .. }) => Err(Failure::runtime(e)),
        Err(e) => Err(Failure::runtime(e)),
    }
}

async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        std::future::pending::<()>().await;
        unreachable!()
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}
