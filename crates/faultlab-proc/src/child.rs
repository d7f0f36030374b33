//! A child process that speaks JSON lines on stdin/stdout: the one way the lab starts, talks to and stops one
//! (the reference client's stdio server, the proxy's child upstream, the HTTP front's bridge, replay's server).
//!
//! - Started in a process group of its own, so stopping it reaches the helpers it started too, and with a parent
//!   death signal, so the kernel ends it if the lab dies (even by SIGKILL): no orphan is left.
//! - Its stdout is a stream of [`Line`](faultlab_wire::Line)s ([`Lines`]); its stdin a [`LineWriter`] that frames each
//!   message with [`line::encode_into`](faultlab_wire::line::encode_into).
//! - [`ChildProcess::stop`] stops it in the spec's order with one grace: close its stdin, wait, SIGTERM to the
//!   group, wait, SIGKILL to the group. [`ChildProcess::crash`] kills it at once (a `server_outage`).
//! - A [`ChildCommand`] is configured once and spawns again for a restart.

use bytes::BytesMut;
use faultlab_wire::line::{self, LineCodec};
use nix::sys::signal::Signal;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncWriteExt as _;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio_util::codec::FramedRead;

/// How long a child gets to exit after its stdin is closed, and again after SIGTERM, unless the caller says
/// otherwise (`--shutdown-grace`): 2 s.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// The child's stdout, split into lines (with the size limit given at spawn).
pub type Lines = FramedRead<ChildStdout, LineCodec>;

/// A command ready to start children: stdin and stdout piped, a process group of its own, the parent death
/// signal. Its stderr is left as the caller set it (inherited by default).
pub struct ChildCommand {
    command: Command,
    shown: String,
}

/// A freshly started child: the process, its stdin and its stdout.
pub struct Spawned {
    pub process: ChildProcess,
    pub stdin: LineWriter,
    pub stdout: Lines,
}

impl ChildCommand {
    pub fn new(mut command: Command) -> Self {
        let shown = format!("{:?}", command.as_std().get_program());
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true).process_group(0);
        crate::hooks::parent_death_signal(command.as_std_mut(), Signal::SIGTERM);
        Self { command, shown }
    }

    /// The program, as an error message shows it (`"cat"`).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Starts one child; its stdout lines may be at most `max_line_bytes` long.
    pub fn spawn(&mut self, max_line_bytes: usize) -> std::io::Result<Spawned> {
        let mut child = self.command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the child has no stdin or stdout"));
        };
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        Ok(Spawned {
            process: ChildProcess { child, pid, ended: false },
            stdin: LineWriter { stdin, buf: BytesMut::new() },
            stdout: FramedRead::new(stdout, LineCodec::new(max_line_bytes)),
        })
    }
}

/// The child's stdin: one message a line.
pub struct LineWriter {
    stdin: ChildStdin,
    /// Reused for every write: one allocation for the life of the child, not one per message.
    buf: BytesMut,
}

impl LineWriter {
    /// Writes one message as a line.
    pub async fn send(&mut self, message: &[u8]) -> std::io::Result<()> {
        self.send_all([message]).await
    }

    /// Writes messages as lines with one write (one wake-up of the child for all of them).
    pub async fn send_all<'a>(&mut self, messages: impl IntoIterator<Item = &'a [u8]>) -> std::io::Result<()> {
        self.buf.clear();
        for message in messages {
            line::encode_into(&mut self.buf, message);
        }
        let written = self.stdin.write_all(&self.buf).await;
        // A large frame must not keep its buffer for the rest of the run (64 KiB kept).
        if self.buf.capacity() > 64 * 1024 {
            self.buf = BytesMut::new();
        }
        written?;
        self.stdin.flush().await
    }
}

/// A step of [`ChildProcess::stop`], reported as it is taken (before its wait).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopStep {
    StdinClosed,
    Sigterm,
    Sigkill,
}

/// What became of the child's stdin when [`ChildProcess::stop`] starts.
pub enum Stdin {
    /// Closed now (or already closed: `None`): the child gets the grace to exit on its own.
    Close(Option<LineWriter>),
    /// Held by a write the child does not read: it cannot be closed, so the stop begins with SIGTERM.
    Stuck,
}

/// How a [`ChildProcess::stop`] ended.
#[derive(Debug, Clone, Copy)]
pub struct Stopped {
    /// The leader's exit status (`None`: unknown).
    pub status: Option<ExitStatus>,
    /// It exited on its own once its stdin was closed, without a signal.
    pub on_its_own: bool,
    /// Something was left of its process group after the leader ended, and got SIGKILL.
    pub leftovers: bool,
}

/// A running child in its own process group. Dropping it kills the whole group.
pub struct ChildProcess {
    child: Child,
    /// Also the process group id.
    pid: Option<i32>,
    /// A stop or a crash has ended the whole group: nothing is left for the drop to kill (and its id may be free
    /// for reuse).
    ended: bool,
}

impl ChildProcess {
    pub fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// The pid as a message shows it (`?` once unknown).
    pub fn shown_pid(&self) -> String {
        self.pid.map_or_else(|| "?".into(), |p| p.to_string())
    }

    /// Sends `signal` to the child's process group; whether some process got it (false: the group is empty).
    pub fn signal_group(&self, signal: Signal) -> bool {
        self.pid.is_some_and(|g| crate::group::signal_group(g, signal))
    }

    /// The child's stderr pipe, when the command asked for one (once).
    pub fn take_stderr(&mut self) -> Option<tokio::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// Waits until the child has exited.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Kills the child at once: SIGKILL to its process group (no chance to finish work or flush), and reaps it.
    /// The orderly [`stop`](Self::stop) could take twice the grace, longer than many outage windows.
    pub async fn crash(&mut self) {
        self.signal_group(Signal::SIGKILL);
        // `kill` sends SIGKILL to the child itself (in case it left its group) and waits, so no zombie is left.
        let _ = self.child.kill().await;
        self.ended = true;
    }

    /// Stops the child in the spec's order, each step bounded by `grace`: close its stdin; after the grace,
    /// SIGTERM to its process group; after the grace again, SIGKILL to the group. Whatever is left of the group
    /// then (a helper the child started) gets SIGKILL too. `step` hears of each step as it is taken.
    pub async fn stop(&mut self, stdin: Stdin, grace: Duration, mut step: impl FnMut(StopStep)) -> Stopped {
        let (mut status, mut on_its_own) = (self.child.try_wait().ok().flatten(), false);
        if let Stdin::Close(stdin) = stdin {
            drop(stdin);
            if status.is_none() {
                step(StopStep::StdinClosed);
                status = tokio::time::timeout(grace, self.child.wait()).await.ok().and_then(Result::ok);
            }
            on_its_own = status.is_some();
        }
        if status.is_none() {
            self.signal_group(Signal::SIGTERM);
            step(StopStep::Sigterm);
            status = tokio::time::timeout(grace, self.child.wait()).await.ok().and_then(Result::ok);
        }
        if status.is_none() {
            self.signal_group(Signal::SIGKILL);
            step(StopStep::Sigkill);
            let _ = self.child.kill().await;
            status = self.child.try_wait().ok().flatten();
        }
        // The leader is gone; a helper it started in its group must not outlive the lab.
        let leftovers = self.signal_group(Signal::SIGKILL);
        self.ended = true;
        Stopped { status, on_its_own, leftovers }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Not stopped in order (a panic, an aborted task): the whole group goes, not just the leader
        // (`kill_on_drop`). A reaped leader's group may hold helpers still; its id is not reused while they live.
        if !self.ended {
            self.signal_group(Signal::SIGKILL);
        }
    }
}

/// An exit status in words (`exit code 1`, `signal 9 (SIGKILL)`), with its code and signal.
pub fn describe(status: Option<ExitStatus>) -> (String, Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt as _;
    let Some(status) = status else { return ("an unknown status".into(), None, None) };
    let signal = status.signal();
    let words = match (status.code(), signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(n)) => match Signal::try_from(n) {
            Ok(name) => format!("signal {n} ({name})"),
            Err(_) => format!("signal {n}"),
        },
        (None, None) => "an unknown status".into(),
    };
    (words, status.code(), signal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultlab_wire::Line;
    use futures::StreamExt as _;

    fn sh(script: &str) -> ChildCommand {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        ChildCommand::new(command)
    }

    #[tokio::test]
    async fn lines_go_in_and_come_back_and_closing_stdin_ends_a_willing_child() {
        let Spawned { mut process, mut stdin, mut stdout } = sh("exec cat").spawn(1024).unwrap();
        stdin.send_all([&b"{\"a\":1}"[..], b"{\"b\":2}"]).await.unwrap();
        assert_eq!(stdout.next().await.unwrap().unwrap(), Line::Bytes("{\"a\":1}".into()));
        assert_eq!(stdout.next().await.unwrap().unwrap(), Line::Bytes("{\"b\":2}".into()));
        let mut steps = Vec::new();
        let stopped = process.stop(Stdin::Close(Some(stdin)), DEFAULT_GRACE, |s| steps.push(s)).await;
        assert!(stopped.on_its_own);
        assert_eq!(steps, [StopStep::StdinClosed]);
        assert_eq!(describe(stopped.status).0, "exit code 0");
    }

    #[tokio::test]
    async fn a_child_that_ignores_eof_and_sigterm_is_killed_with_its_helpers() {
        // The helper `sleep` is in the child's group; the shell ignores SIGTERM and never reads stdin.
        let Spawned { mut process, stdin, mut stdout } =
            sh("trap '' TERM; sleep 30 & echo $!; while :; do sleep 0.01; done").spawn(1024).unwrap();
        let Some(Ok(Line::Bytes(helper))) = stdout.next().await else { panic!("the helper's pid") };
        let helper = std::str::from_utf8(&helper).unwrap().to_owned();
        let mut steps = Vec::new();
        let stopped = process.stop(Stdin::Close(Some(stdin)), Duration::from_millis(50), |s| steps.push(s)).await;
        assert_eq!(steps, [StopStep::StdinClosed, StopStep::Sigterm, StopStep::Sigkill]);
        assert!(!stopped.on_its_own);
        assert_eq!(describe(stopped.status).0, "signal 9 (SIGKILL)");
        // Nothing of the group is left: its helper got SIGKILL as well. Its pidfd turns readable when it exits
        // (SIGKILL takes effect when the kernel next schedules it), bounded by 2 s.
        // The helper may already be gone (and reaped by init): that counts as exited.
        let pid: i32 = helper.trim().parse().unwrap();
        assert!(crate::wait::exits_within(pid, Duration::from_secs(2)), "the helper {helper} still runs");
    }

    #[tokio::test]
    async fn a_stuck_stdin_starts_the_stop_with_sigterm_and_a_crash_kills_at_once() {
        let Spawned { mut process, stdin: _stdin, .. } = sh("exec sleep 30").spawn(1024).unwrap();
        let mut steps = Vec::new();
        let stopped = process.stop(Stdin::Stuck, DEFAULT_GRACE, |s| steps.push(s)).await;
        assert_eq!(steps, [StopStep::Sigterm]);
        assert_eq!(describe(stopped.status).0, "signal 15 (SIGTERM)");

        let mut command = sh("exec sleep 30");
        let Spawned { mut process, .. } = command.spawn(1024).unwrap();
        process.crash().await;
        assert_eq!(describe(process.wait().await.ok()).0, "signal 9 (SIGKILL)");
        // The same command starts a fresh child (a restart after an outage).
        let Spawned { process: again, .. } = command.spawn(1024).unwrap();
        assert_ne!(again.pid(), None);
    }
}
