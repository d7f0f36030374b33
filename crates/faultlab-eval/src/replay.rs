//! Replay: a recorded run's server replies, served again to the same or another agent.
//!
//! The replay server stands where the server stood, in front of a fresh server: every request still reaches that
//! server (so writes really happen again and the end state can be graded), but a reply the recording holds for the
//! same call — same method, same tool and arguments (key order ignored), same occurrence — is replaced by the
//! recorded one, with this request's id. Calls the recording lacks (the agent diverged) get the fresh server's
//! reply and are logged as `live`. The proxy in front applies the run's rules with the run's seed again, so faults
//! fire as they did for the same sequence of calls.

use faultlab_engine::recording::{CallKey, Recording};
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES};
use futures::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec};

/// One line of the replay log: which call was answered from the recording and which live.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Served {
    pub key: String,
    /// `recorded` or `live`.
    pub from: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot start the server behind the replay: {0}")]
    Spawn(std::io::Error),
    #[error("replay i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Relays between the agent (`input`/`output`) and a fresh server (`server`), swapping in recorded replies.
/// `log` receives one [`Served`] line per reply. Returns when the agent closes its input and the server has ended.
pub async fn serve<R, W>(
    cassette: Recording,
    mut server: tokio::process::Command,
    input: R,
    output: W,
    mut log: Option<std::fs::File>,
) -> Result<(), ReplayError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(ReplayError::Spawn)?;
    let mut child_in = child.stdin.take().expect("piped");
    let child_out = child.stdout.take().expect("piped");
    let pending: Arc<Mutex<HashMap<String, CallKey>>> = Arc::default();

    let requests = {
        let pending = pending.clone();
        async move {
            let mut lines = FramedRead::new(input, LineCodec::new(MAX_LINE_BYTES));
            while let Some(Ok(line)) = lines.next().await {
                // An over-long line cannot be relayed whole; the server never sees it, as with the proxy.
                let faultlab_wire::Line::Bytes(line) = line else { continue };
                let frame = Frame::parse(line.clone());
                if let (Some(id), Some(key)) = (frame.id(), frame.value().and_then(CallKey::of_request)) {
                    pending.lock().expect("not poisoned").insert(id.to_value().to_string(), key);
                }
                child_in.write_all(&line).await?;
                child_in.write_all(b"\n").await?;
                child_in.flush().await?;
            }
            // The agent is gone: closing the server's input ends it, as a client's EOF would.
            drop(child_in);
            Ok::<_, std::io::Error>(())
        }
    };
    let replies = async move {
        let mut cassette = cassette;
        let mut lines = FramedRead::new(child_out, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
        let mut out = FramedWrite::new(output, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
        while let Some(Ok(line)) = lines.next().await {
            let frame = Frame::parse(line.clone().into_bytes());
            let key = match (frame.is_reply(), frame.id()) {
                (true, Some(id)) => pending.lock().expect("not poisoned").remove(&id.to_value().to_string()),
                _ => None,
            };
            let Some(key) = key else {
                out.send(line).await.map_err(std::io::Error::other)?;
                continue;
            };
            let (text, from) = match cassette.take(&key) {
                Some(mut recorded) => {
                    recorded["id"] = frame.id().map(|id| id.to_value()).unwrap_or(Value::Null);
                    (recorded.to_string(), "recorded")
                }
                None => (line, "live"),
            };
            out.send(text).await.map_err(std::io::Error::other)?;
            if let Some(log) = log.as_mut() {
                let _ = writeln!(log, "{}", serde_json::json!({"key": key.to_string(), "from": from}));
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let (sent, answered) = tokio::join!(requests, replies);
    let _ = child.wait().await;
    sent?;
    answered?;
    Ok(())
}
