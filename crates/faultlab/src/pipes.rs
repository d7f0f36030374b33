//! stdin and stdout for the commands that speak MCP over them (`serve`, `proxy` with a stdio front).

use anyhow::Context as _;
use std::os::fd::AsFd as _;
use tokio::net::unix::pipe;

/// A one-thread runtime: a stdio connection is one stream of messages, and hand-offs between worker threads cost
/// more than they win (about 11 context switches per ping round trip on the multi-thread runtime).
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")
}

/// The process's stdin: a non-blocking pipe when it is one (as an MCP client gives it), read on the runtime's own
/// thread; otherwise (a terminal, a file) tokio's stdin, which reads on a blocking thread.
pub fn stdin() -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok();
    match fd.and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok()) {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdin()),
    }
}

/// The process's stdout, as [`stdin`] does for stdin.
pub fn stdout() -> Box<dyn tokio::io::AsyncWrite + Unpin + Send> {
    let fd = std::io::stdout().as_fd().try_clone_to_owned().ok();
    match fd.and_then(|fd| pipe::Sender::from_owned_fd(fd).ok()) {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdout()),
    }
}
