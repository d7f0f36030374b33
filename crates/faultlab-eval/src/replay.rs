//! Replay: a recorded run's server replies, served again to the same or another agent.
//!
//! The replay server stands where the server stood, in front of a fresh server: every request still reaches that
//! server (so writes really happen again and the end state can be graded), but a reply the recording holds for the
//! same call — same method, same tool and arguments (key order ignored), same occurrence — is replaced by the
//! recorded one, with this request's id. Calls the recording lacks (the agent diverged) get the fresh server's
//! reply and are logged as `live`. The proxy in front applies the run's rules with the run's seed again, so faults
//! fire as they did for the same sequence of calls.

use faultlab_engine::recording::{CallKey, Recording};
use faultlab_wire::child::{self, ChildCommand, Spawned, Stdin};
use faultlab_wire::line::{self, Line};
use faultlab_wire::{Frame, LineCodec, MAX_LINE_BYTES};
use futures::StreamExt as _;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio_util::codec::FramedRead;

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
/// `log` receives one [`Served`] line per reply. Returns when the agent has closed its input and the server has
/// ended: it gets [`child::DEFAULT_GRACE`] to exit after its stdin closes, then is stopped in the spec's order.
pub async fn serve<R, W>(
    cassette: Recording,
    server: tokio::process::Command,
    input: R,
    output: W,
    mut log: Option<std::fs::File>,
) -> Result<(), ReplayError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    use std::io::Write as _;
    let Spawned { process: mut child, stdin: mut child_in, stdout: mut lines } =
        ChildCommand::new(server).spawn(MAX_LINE_BYTES).map_err(ReplayError::Spawn)?;
    let pending: Arc<Mutex<HashMap<String, CallKey>>> = Arc::default();

    let requests = {
        let pending = pending.clone();
        async move {
            let mut lines = FramedRead::new(input, LineCodec::new(MAX_LINE_BYTES));
            while let Some(Ok(line)) = lines.next().await {
                // An over-long line cannot be relayed whole; the server never sees it, as with the proxy.
                let Line::Bytes(line) = line else { continue };
                let frame = Frame::parse(line.clone());
                if let (Some(id), Some(key)) = (frame.id(), frame.value().and_then(CallKey::of_request)) {
                    pending.lock().expect("not poisoned").insert(id.to_value().to_string(), key);
                }
                child_in.send(&line).await?;
            }
            Ok::<_, std::io::Error>(child_in)
        }
    };
    // The agent is gone: closing the server's input ends it, as a client's EOF would; one that stays is stopped.
    let requests = async {
        let (closing, sent) = match requests.await {
            Ok(child_in) => (Stdin::Close(Some(child_in)), Ok(())),
            Err(e) => (Stdin::Close(None), Err(e)),
        };
        child.stop(closing, child::DEFAULT_GRACE, |_| {}).await;
        sent
    };
    let replies = async move {
        let mut cassette = cassette;
        let mut output = output;
        while let Some(Ok(line)) = lines.next().await {
            // An over-long reply cannot be relayed whole; the agent's request then goes unanswered.
            let Line::Bytes(line) = line else { continue };
            let frame = Frame::parse(line.clone());
            let key = match (frame.is_reply(), frame.id()) {
                (true, Some(id)) => pending.lock().expect("not poisoned").remove(&id.to_value().to_string()),
                _ => None,
            };
            let Some(key) = key else {
                output.write_all(&line::encode(&line)).await?;
                output.flush().await?;
                continue;
            };
            let (text, from) = match cassette.take(&key) {
                Some(mut recorded) => {
                    recorded["id"] = frame.id().map(|id| id.to_value()).unwrap_or(Value::Null);
                    (recorded.to_string().into(), "recorded")
                }
                None => (line, "live"),
            };
            output.write_all(&line::encode(&text)).await?;
            output.flush().await?;
            if let Some(log) = log.as_mut() {
                let _ = writeln!(log, "{}", serde_json::json!({"key": key.to_string(), "from": from}));
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let (sent, answered) = tokio::join!(requests, replies);
    sent?;
    answered?;
    Ok(())
}
