//! `faultlab connect SOCKET` (hidden): the command an agent under `faultlab eval` finds in its `mcpServers` file.
//! It relays its stdin to the run's Unix socket and the socket to its stdout, byte for byte, so the agent speaks
//! stdio MCP to a proxy and server that run outside its sandbox. When the proxy closes its end (a `disconnect`
//! fault, or the end of the run) stdout closes and this process exits, as a server process would.

use crate::cli::ConnectArgs;
use crate::exit::Failure;
use anyhow::Context as _;
use std::io::{Read as _, Write as _};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;

pub fn run(args: ConnectArgs) -> Result<(), Failure> {
    let socket = UnixStream::connect(&args.socket)
        .with_context(|| format!("cannot reach the faultlab proxy at {}", args.socket.display()))
        .map_err(Failure::runtime)?;
    let mut upstream = socket.try_clone().context("cannot share the socket").map_err(Failure::runtime)?;
    // stdin → socket on a thread of its own; at the agent's EOF the socket's write side closes, as a server's
    // stdin would.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if upstream.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = upstream.shutdown(Shutdown::Write);
    });
    let mut downstream = socket;
    let mut stdout = std::io::stdout().lock();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match downstream.read(&mut buffer) {
            Ok(0) | Err(_) => return Ok(()),
            Ok(n) => {
                // The agent closed its end: nothing more to deliver.
                if stdout.write_all(&buffer[..n]).and_then(|()| stdout.flush()).is_err() {
                    return Ok(());
                }
            }
        }
    }
}
