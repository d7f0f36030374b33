//! The queue in front of one connection's writer (a stdio pipe, or one HTTP response stream).
//!
//! Whatever writes to a connection takes [`Batch`]es from one channel and performs each batch in order, so the
//! frames of a batch are never interleaved with others. [`Outlet::send`] splits a reply's steps at each
//! [`Step::Pause`] and hands the part after the pause to a timer task: a latency fault holds back its own reply
//! and nothing else (no head-of-line blocking).

use crate::recorder::{Event, Recorder, TransportEventKind};
use crate::render::Step;
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Steps a writer performs back to back.
pub type Batch = Vec<Step>;

/// The sending side of a connection's writer queue. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Outlet {
    tx: mpsc::UnboundedSender<Batch>,
}

impl Outlet {
    /// A new queue; the writer owns the receiver.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Batch>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    /// Queues `steps`; anything after a pause is queued when the pause has elapsed. Returns false when the
    /// writer is gone (the connection has closed), in which case there is nobody to write to.
    pub fn send(&self, steps: Vec<Step>) -> bool {
        let Some(pause_at) = steps.iter().position(|s| matches!(s, Step::Pause(_) | Step::Await { .. })) else {
            return steps.is_empty() || self.tx.send(steps).is_ok();
        };
        let mut now = steps;
        let later = now.split_off(pause_at);
        if !now.is_empty() && self.tx.send(now).is_err() {
            return false;
        }
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let mut batch = Vec::new();
            for step in later {
                match step {
                    Step::Pause(d) => {
                        if !batch.is_empty() && tx.send(std::mem::take(&mut batch)).is_err() {
                            return;
                        }
                        crate::clock::precise_sleep(d).await;
                    }
                    Step::Await { release, max } => {
                        if !batch.is_empty() && tx.send(std::mem::take(&mut batch)).is_err() {
                            return;
                        }
                        release.wait(max).await;
                    }
                    other => batch.push(other),
                }
            }
            if !batch.is_empty() {
                let _ = tx.send(batch);
            }
        });
        true
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves when the writer is gone (the client went away).
    pub async fn closed(&self) {
        self.tx.closed().await
    }
}

/// How a byte-stream writer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterEnd {
    /// The source finished and everything queued was written.
    Finished,
    /// A `Close` step closed the stream (a disconnect fault).
    Closed,
}

/// The single writer of a byte stream (a stdio pipe): performs queued batches in order until `done` fires (then
/// writes what is already queued and stops) or a `Close` step closes the stream. Replies still held by a latency
/// pause when `done` fires are dropped: their reader has gone. `written` is told about every frame written.
///
/// Frames already queued together are written with one write and one flush (pipelined traffic would otherwise
/// cost a system call per frame); a pause, a release or a close first writes everything before it.
pub async fn write_stream<W: AsyncWrite + Unpin>(
    output: W,
    mut queue: mpsc::UnboundedReceiver<Batch>,
    mut done: mpsc::UnboundedReceiver<()>,
    recorder: &Recorder,
    written: impl Fn(&Bytes),
) -> std::io::Result<WriterEnd> {
    let mut writer = Coalescing { output, pending: BytesMut::new(), recorder, written };
    loop {
        let batch = tokio::select! {
            biased;
            batch = queue.recv() => batch,
            _ = done.recv() => {
                while let Ok(batch) = queue.try_recv() {
                    if writer.batch(batch).await? == WriterEnd::Closed {
                        return Ok(WriterEnd::Closed);
                    }
                }
                writer.flush().await?;
                let _ = writer.output.shutdown().await;
                return Ok(WriterEnd::Finished);
            }
        };
        let Some(batch) = batch else {
            writer.flush().await?;
            return Ok(WriterEnd::Finished);
        };
        if writer.batch(batch).await? == WriterEnd::Closed {
            return Ok(WriterEnd::Closed);
        }
        while let Ok(batch) = queue.try_recv() {
            if writer.batch(batch).await? == WriterEnd::Closed {
                return Ok(WriterEnd::Closed);
            }
        }
        writer.flush().await?;
    }
}

/// Most bytes gathered before they are written, even if more frames are ready (256 KiB).
const MAX_COALESCED_BYTES: usize = 256 * 1024;

struct Coalescing<'a, W, F> {
    output: W,
    pending: BytesMut,
    recorder: &'a Recorder,
    written: F,
}

impl<W: AsyncWrite + Unpin, F: Fn(&Bytes)> Coalescing<'_, W, F> {
    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            self.output.write_all(&self.pending).await?;
            self.output.flush().await?;
            self.pending.clear();
        }
        Ok(())
    }

    async fn batch(&mut self, batch: Batch) -> std::io::Result<WriterEnd> {
        for step in batch {
            match step {
                // A status has no meaning on a byte stream; its JSON-RPC body stands in for it.
                Step::Write(bytes) | Step::Status { body: bytes, .. } => {
                    self.pending.extend_from_slice(&bytes);
                    (self.written)(&bytes);
                    if self.pending.len() >= MAX_COALESCED_BYTES {
                        self.flush().await?;
                    }
                }
                Step::Gap(d) | Step::Pause(d) => {
                    self.flush().await?;
                    tokio::time::sleep(d).await;
                }
                // Split off by `Outlet::send`; never queued, so nothing to wait for here.
                Step::Await { .. } => {}
                Step::Release(release) => {
                    self.flush().await?;
                    release.fire();
                }
                Step::Close => {
                    self.flush().await?;
                    self.recorder.record(Event::Transport {
                        outcome: TransportEventKind::ClosureRequested,
                        request_id: None,
                        detail: Some("closing the stream".into()),
                    });
                    let outcome = match self.output.shutdown().await {
                        Ok(()) => TransportEventKind::Closed,
                        Err(_) => TransportEventKind::CloseFailed,
                    };
                    self.recorder.record(Event::Transport { outcome, request_id: None, detail: None });
                    return Ok(WriterEnd::Closed);
                }
            }
        }
        Ok(WriterEnd::Finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::time::Duration;

    fn write(s: &'static str) -> Step {
        Step::Write(Bytes::from_static(s.as_bytes()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_reply_does_not_hold_up_later_ones() {
        let (outlet, mut rx) = Outlet::new();
        let start = tokio::time::Instant::now();
        outlet.send(vec![Step::Pause(Duration::from_millis(200)), write("slow")]);
        outlet.send(vec![write("fast")]);
        assert_eq!(rx.recv().await.unwrap(), vec![write("fast")]);
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert_eq!(rx.recv().await.unwrap(), vec![write("slow")]);
        assert_eq!(start.elapsed(), Duration::from_millis(200));
    }
}
