//! `faultlab workspace-server`: the built-in workspace MCP server over stdio, confined to `--root`, logging every
//! side effect to `--ledger`. `faultlab eval` starts it behind the fault proxy; it is hidden from `--help`.

use crate::cli::WorkspaceServerArgs;
use crate::exit::Failure;
use anyhow::Context as _;
use faultlab_engine::{Engine, Recorder};
use faultlab_server::workspace::WorkspaceServer;
use faultlab_wire::MAX_LINE_BYTES;
use std::sync::Arc;

pub fn run(args: WorkspaceServerArgs) -> Result<(), Failure> {
    // Checked before any MCP traffic, so a bad root or ledger fails at once with a message instead of a silent server.
    let mut server = WorkspaceServer::open(&args.root, args.ledger.as_deref()).map_err(Failure::runtime)?;
    if args.confirm_destructive {
        server = server.confirming();
    }
    let runtime = crate::pipes::runtime().map_err(Failure::runtime)?;
    // The lab's stdio front with an engine that never has a fault armed: lines pass unchanged, and an
    // over-long line is reported on stderr rather than silently dropped.
    let engine = Arc::new(Engine::new(Recorder::stderr().scoped("workspace")));
    // The pipes register with the runtime's reactor, so they are made inside it.
    let served = runtime.block_on(crate::serve::serve_on_stdio(server, engine, MAX_LINE_BYTES));
    // As in `serve`: a blocking stdin read may still hold a runtime thread; the process is about to exit anyway.
    std::mem::forget(runtime);
    served.context("the stdio connection failed").map_err(Failure::runtime)
}
