//! `faultlab proxy --listen-unix PATH -- CMD` (or `--listen-fd N`): every connection to the socket a stdio session
//! with a server of its own, all sharing the run's rule state (see `faultlab_proxy::front::unix`).

use super::max_frame_bytes;
use crate::cli::ProxyArgs;
use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use faultlab_engine::recording::Recording;
use faultlab_proxy::front::unix::{self, Record};
use faultlab_proxy::recording::SharedRecording;
use faultlab_proxy::relay::ProxyOptions;
use faultlab_proxy::remote::Remote;
use faultlab_proxy::rules::SharedRules;
use faultlab_proxy::upstream::child::Child;
use faultlab_proxy::upstream::http::Endpoint;
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

pub fn serve(
    runtime: tokio::runtime::Runtime,
    args: &ProxyArgs,
    rules: SharedRules,
    record: Record,
    recording: Option<Recording>,
    remote: Option<Remote>,
) -> Result<(), Failure> {
    let server = args.command.split_first();
    if server.is_none() && remote.is_none() {
        return Err(Failure::usage(anyhow!(
            "--listen-unix and --listen-fd start an upstream for each connection: name it after -- (-- CMD ARGS) \
             or with --upstream URL"
        )));
    }
    let overlay = match (recording, server) {
        (Some(recording), Some(_)) => Some(SharedRecording::new(recording, super::replay_log(args)?)),
        (Some(_), None) => {
            return Err(Failure::usage(anyhow!(
                "--replay with --listen-unix or --listen-fd lays the recording over a server: name it after --"
            )));
        }
        (None, _) => None,
    };
    let options = ProxyOptions { shutdown_grace: args.shutdown_grace, max_frame_bytes: max_frame_bytes(args) };
    let served = runtime.block_on(async {
        let (listener, shown) = listener(args)?;
        outln!("{}", serde_json::json!({"listening": shown}));
        let stop = CancellationToken::new();
        super::cancel_on_signal(stop.clone());
        let child = || {
            let (program, rest) = server.expect("a server is named when there is no --upstream");
            let mut command = tokio::process::Command::new(program);
            command.args(rest);
            Child(command)
        };
        let accepted = |n: u64| outln!("{}", serde_json::json!({"connection": n}));
        Ok::<_, Failure>(match (overlay, remote) {
            (Some(overlay), _) => {
                let upstream = |_| overlay.over(child());
                unix::serve(listener, options, upstream, rules, record, accepted, stop).await
            }
            (None, Some(remote)) => {
                let upstream = |_| Endpoint(remote.clone());
                unix::serve(listener, options, upstream, rules, record, accepted, stop).await
            }
            (None, None) => unix::serve(listener, options, |_| child(), rules, record, accepted, stop).await,
        })
    })?;
    // The socket this proxy created goes with it (an inherited one is its owner's to remove).
    if let Some(path) = &args.listen_unix {
        let _ = std::fs::remove_file(path);
    }
    for failure in &served.failures {
        errln!("faultlab: {failure}");
    }
    match served.failures.len() {
        0 => Ok(()),
        n => Err(Failure::runtime(anyhow!(
            "{n} of {} lost {} upstream (it did not start, or exited on its own); see above",
            crate::console::count(served.connections as usize, "connection", "connections"),
            if n == 1 { "its" } else { "their" }
        ))
        .silenced()),
    }
}

/// The socket to serve: bound here (`--listen-unix`), or inherited bound and listening (`--listen-fd`); and how
/// the ready line names it.
fn listener(args: &ProxyArgs) -> Result<(UnixListener, String), Failure> {
    if let Some(path) = &args.listen_unix {
        let listener = UnixListener::bind(path)
            .with_context(|| {
                format!("cannot listen on the Unix socket {}; remove it or choose another", path.display())
            })
            .map_err(Failure::runtime)?;
        return Ok((listener, path.display().to_string()));
    }
    let fd = args.listen_fd.unwrap_or(-1);
    let not_a_listener = || Failure::usage(anyhow!("--listen-fd {fd}: not a listening Unix socket this process has"));
    // Only a socket this process really has is adopted (and closed when the listener drops).
    let std = faultlab_proc::fd::inherited_unix_listener(fd).ok_or_else(not_a_listener)?;
    let shown = std.local_addr().ok().and_then(|a| a.as_pathname().map(|p| p.display().to_string()));
    let shown = shown.ok_or_else(not_a_listener)?;
    std.set_nonblocking(true).map_err(|_| not_a_listener())?;
    let listener = UnixListener::from_std(std).map_err(|_| not_a_listener())?;
    Ok((listener, shown))
}
