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

/// Runs `work` until it ends or SIGINT/SIGTERM comes. On a signal `work` is dropped, which stops what it
/// started (every child the lab starts is killed on drop), and the signal's name comes back.
pub async fn until_signal<T>(work: impl std::future::Future<Output = T>) -> Result<T, &'static str> {
    let signals = Signals::install();
    tokio::select! {
        done = work => Ok(done),
        signal = signals.recv() => Err(signal),
    }
}

/// The end of a command a signal stopped: the eval runs' temporary folders removed, one line on stderr saying
/// what was kept, and exit 130 (SIGINT) or 143 (SIGTERM).
pub fn interrupted(command: &str, signal: &str, kept: &str) -> crate::exit::Failure {
    faultlab_eval::runner::remove_scratch_root();
    errln!(
        "faultlab: {command}: interrupted by {signal}: nothing new was started; {kept}; the temporary folders were removed"
    );
    crate::exit::Failure {
        exit: crate::exit::Exit::Interrupted { sigterm: signal == "SIGTERM" },
        error: anyhow::anyhow!("interrupted by {signal}"),
        silent: true,
    }
}
