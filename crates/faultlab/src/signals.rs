//! SIGINT and SIGTERM, shared by the commands that run until told to stop.

/// Resolves with the signal's name on SIGINT or SIGTERM. Without signal handlers (they could not be installed)
/// it never resolves, and Ctrl-C ends the process the default way.
pub async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}
