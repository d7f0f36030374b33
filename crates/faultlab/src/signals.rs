//! SIGINT and SIGTERM, shared by the commands that run until told to stop.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// The handlers of SIGINT and SIGTERM, installed when made. A command makes them before it prints that it is
/// listening: a signal sent the moment that line is read must stop it cleanly (exit 0), never by the default,
/// fatal action. Without handlers (they could not be installed) [`Signals::recv`] never resolves, and Ctrl-C ends
/// the process the default way.
pub struct Signals(Option<(Signal, Signal)>);

impl Signals {
    /// Installs the handlers (within a tokio runtime).
    pub fn install() -> Self {
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(int), Ok(term)) => Signals(Some((int, term))),
            _ => Signals(None),
        }
    }

    /// Resolves with the signal's name on the first SIGINT or SIGTERM since [`Signals::install`].
    pub async fn recv(self) -> &'static str {
        let Some((mut int, mut term)) = self.0 else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        }
    }
}
