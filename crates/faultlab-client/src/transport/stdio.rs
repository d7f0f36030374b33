//! A server child process on stdin/stdout.

use super::{Incoming, IncomingTx};
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::Mutex;
use tokio_util::codec::FramedRead;

/// How long a server gets to exit after its stdin closes, then after SIGTERM, before SIGKILL (the spec's order).
const EXIT_GRACE: Duration = Duration::from_millis(500);

pub struct StdioTransport {
    stdin: Mutex<Option<ChildStdin>>,
    child: Mutex<Child>,
}

impl StdioTransport {
    pub fn spawn(
        command: &str,
        args: &[String],
        cwd: Option<&PathBuf>,
        env: &BTreeMap<String, String>,
        incoming: IncomingTx,
    ) -> std::io::Result<Self> {
        let mut cmd = Command::new(command);
        cmd.args(args).envs(env).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("child has no stdout"))?;
        tokio::spawn(async move {
            let mut lines = FramedRead::new(stdout, LineCodec::new(MAX_LINE_BYTES));
            while let Some(Ok(line)) = lines.next().await {
                let frame = match line {
                    Line::Bytes(bytes) => Frame::parse(bytes),
                    // Reported as an unparsable frame: its bytes were over the limit and are gone.
                    Line::TooLong => Frame::parse(&b"<line over the size limit>"[..]),
                };
                if incoming.send(Incoming::Frame(frame)).is_err() {
                    return;
                }
            }
            let _ = incoming.send(Incoming::Lost { id: None, detail: "the server closed stdout".into() });
        });
        Ok(Self { stdin: Mutex::new(stdin), child: Mutex::new(child) })
    }

    pub async fn send(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut guard = self.stdin.lock().await;
        let stdin = guard.as_mut().ok_or_else(|| std::io::Error::other("stdin is closed"))?;
        let mut line = Vec::with_capacity(bytes.len() + 1);
        line.extend_from_slice(bytes);
        line.push(b'\n');
        stdin.write_all(&line).await?;
        stdin.flush().await
    }

    /// Shuts the server down as the spec says: close its stdin, wait, SIGTERM, wait, SIGKILL.
    pub async fn close(&self) {
        drop(self.stdin.lock().await.take());
        let mut child = self.child.lock().await;
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            return;
        }
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            // Failing to signal only means the child is already gone.
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
        }
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err() {
            let _ = child.kill().await;
        }
    }
}
