//! A server child process on stdin/stdout.

use super::{Incoming, IncomingTx};
use faultlab_wire::child::{self, ChildCommand, ChildProcess, LineWriter, Spawned, Stdin};
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, MAX_LINE_BYTES};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::process::Command;
use tokio::sync::Mutex;

pub struct StdioTransport {
    stdin: Mutex<Option<LineWriter>>,
    child: Mutex<ChildProcess>,
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
        cmd.args(args).envs(env).stderr(Stdio::null());
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let Spawned { process, stdin, stdout: mut lines } = ChildCommand::new(cmd).spawn(MAX_LINE_BYTES)?;
        tokio::spawn(async move {
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
        Ok(Self { stdin: Mutex::new(Some(stdin)), child: Mutex::new(process) })
    }

    pub async fn send(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut guard = self.stdin.lock().await;
        let stdin = guard.as_mut().ok_or_else(|| std::io::Error::other("stdin is closed"))?;
        stdin.send(bytes).await
    }

    /// Shuts the server down as the spec says: close its stdin, wait, SIGTERM to its process group, wait, SIGKILL.
    pub async fn close(&self) {
        let stdin = self.stdin.lock().await.take();
        self.child.lock().await.stop(Stdin::Close(stdin), child::DEFAULT_GRACE, |_| {}).await;
    }
}
