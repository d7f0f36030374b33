//! `faultlab agent KIND`: one of the built-in control agents, as its own MCP client process (started by
//! `faultlab eval`, which sets the `FAULTLAB_*` environment). The behaviours live in `faultlab_eval::agent`.

use crate::cli::AgentArgs;
use crate::exit::Failure;
use anyhow::{Context, anyhow};
use faultlab_eval::agent::ControlAgent;

/// Exit 0 once the claim is written (whatever it says); 2 for an unknown kind; 1 when the agent could not work
/// (a missing variable, an unreadable file, a task without a plan, a server that cannot start).
pub fn run(args: AgentArgs) -> Result<(), Failure> {
    let Some(kind) = ControlAgent::from_name(&args.kind) else {
        let kinds: Vec<&str> = ControlAgent::ALL.iter().map(|a| a.name()).collect();
        return Err(Failure::usage(anyhow!("unknown agent kind {:?}; use one of: {}", args.kind, kinds.join(", "))));
    };
    // One thread is enough: the agent makes one call at a time, and the connection's reader tasks share it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(Failure::runtime)?;
    runtime
        .block_on(faultlab_eval::agent::run(kind))
        .with_context(|| format!("agent {}", kind.name()))
        .map_err(Failure::runtime)
}
