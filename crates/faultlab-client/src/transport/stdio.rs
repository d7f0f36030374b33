//! A server child process on stdin/stdout.

use super::{Incoming, IncomingTx};
use faultlab_proc::child::{self, ChildCommand, ChildProcess, LineWriter, Spawned, Stdin};
use faultlab_wire::line::Line;
use faultlab_wire::sync::lock;
use faultlab_wire::{Frame, MAX_LINE_BYTES};
use futures::StreamExt;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;
use tokio::sync::{Mutex as AsyncMutex, oneshot};

/// How many of the server's last stderr lines a set-up error shows, and how much of each line (bytes).
const STDERR_LINES: usize = 10;
const STDERR_LINE_BYTES: usize = 500;
/// How long a server whose stdout closed gets to exit and finish its stderr before it is described anyway.
const EXIT_WAIT: Duration = Duration::from_secs(2);

pub struct StdioTransport {
    stdin: AsyncMutex<Option<LineWriter>>,
    child: AsyncMutex<ChildProcess>,
    /// Some frame (even garbage) has come from the server.
    answered: Arc<AtomicBool>,
    /// The last lines of the server's stderr (kept, not shown, unless the server fails to start).
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Fires when the server's stderr has ended.
    stderr_done: AsyncMutex<Option<oneshot::Receiver<()>>>,
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
        cmd.args(args).envs(env).stderr(Stdio::piped());
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let Spawned { mut process, stdin, stdout: mut lines } = ChildCommand::new(cmd).spawn(MAX_LINE_BYTES)?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let (done_tx, done_rx) = oneshot::channel();
        match process.take_stderr() {
            Some(pipe) => {
                let tail = stderr.clone();
                tokio::spawn(async move {
                    // Read to the end whatever the server writes, so that it never blocks on a full pipe.
                    let mut reader = BufReader::new(pipe);
                    let mut line = Vec::new();
                    while reader.read_until(b'\n', &mut line).await.is_ok_and(|n| n > 0) {
                        let text = String::from_utf8_lossy(&line[..line.len().min(STDERR_LINE_BYTES)]);
                        let mut tail = lock(&tail);
                        if tail.len() == STDERR_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(text.trim_end().to_owned());
                        line.clear();
                    }
                    let _ = done_tx.send(());
                });
            }
            None => drop(done_tx),
        }
        let answered = Arc::new(AtomicBool::new(false));
        let seen = answered.clone();
        tokio::spawn(async move {
            while let Some(Ok(line)) = lines.next().await {
                seen.store(true, Ordering::SeqCst);
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
        Ok(Self {
            stdin: AsyncMutex::new(Some(stdin)),
            child: AsyncMutex::new(process),
            answered,
            stderr,
            stderr_done: AsyncMutex::new(Some(done_rx)),
        })
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

    /// Once the server's stdout has closed: if it never sent a frame and ended in failure (a non-zero exit code,
    /// a signal), why, with its stderr's last lines: it could not start. `None` once it has answered something,
    /// when it exited 0 (a proxy's `disconnect` fault ends it so), or while it is still running after
    /// [`EXIT_WAIT`]: then what happened is the client's to live with.
    pub async fn died_unanswered(&self) -> Option<String> {
        if self.answered.load(Ordering::SeqCst) {
            return None;
        }
        let status = tokio::time::timeout(EXIT_WAIT, self.child.lock().await.wait()).await.ok()?.ok()?;
        if status.success() || self.answered.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(done) = self.stderr_done.lock().await.take() {
            // A helper of the server may hold its stderr open: the lines read so far are shown then.
            let _ = tokio::time::timeout(EXIT_WAIT, done).await;
        }
        let (words, _, _) = child::describe(Some(status));
        let tail: Vec<String> = lock(&self.stderr).iter().cloned().collect();
        Some(if tail.is_empty() {
            format!("the server exited with {words} before answering anything (its stderr was empty)")
        } else {
            format!(
                "the server exited with {words} before answering anything; its stderr ended with:\n{}",
                tail.join("\n")
            )
        })
    }
}
