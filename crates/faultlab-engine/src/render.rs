//! Turning [`WireAction`]s into bytes for a transport: newline-delimited lines (stdio) or SSE events (HTTP).
//!
//! Rendering is pure; the transport performs the [`Step`]s in order (writing, flushing after each write,
//! sleeping on pauses, closing).

use crate::catalogue::out_of_order::Release;
use crate::catalogue::{Media, WireAction, WireFraming};
use bytes::{Bytes, BytesMut};
use faultlab_wire::{SseEvent, line};
use std::time::Duration;

/// The UTF-8 byte-order mark.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Pause between the pieces of a split write (5 ms), so they reach the peer as separate reads rather than being
/// coalesced by the kernel or HTTP stack.
pub const SPLIT_PAUSE: Duration = Duration::from_millis(5);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Write and flush these bytes.
    Write(Bytes),
    /// Hold the rest of this reply back; other messages keep flowing meanwhile (a latency fault).
    Pause(Duration),
    /// Pause between two pieces of one frame, holding the stream so nothing else is written in between (a split
    /// write must not interleave with other frames, or both would be corrupt).
    Gap(Duration),
    /// Close the connection or abort the stream; stop performing steps.
    Close,
    /// Replace the HTTP response with this status (only meaningful before any body byte is sent).
    Status { status: u16, retry_after_sec: Option<u32>, body: Bytes, media: Media },
    /// Hold the rest of this reply until the release fires or `max` passes; other messages keep flowing.
    Await { release: Release, max: Duration },
    /// Fire this release: everything before it has been written.
    Release(Release),
}

/// Steps for a newline-delimited stream (stdio).
pub fn line(action: &WireAction) -> Vec<Step> {
    match action {
        WireAction::Send(bytes) => vec![Step::Write(line::encode(bytes))],
        WireAction::SendFramed { bytes, framing } => match *framing {
            WireFraming::Crlf => vec![Step::Write(concat(&[bytes, b"\r\n"]))],
            WireFraming::Bom => vec![Step::Write(concat(&[BOM, bytes, b"\n"]))],
            WireFraming::Split { parts } => split(line::encode(bytes), parts),
        },
        WireAction::Pause(d) => vec![Step::Pause(*d)],
        WireAction::Close => vec![Step::Close],
        // stdio has no status line: the JSON-RPC error stands in for the whole HTTP answer.
        WireAction::HttpStatus { body, .. } => vec![Step::Write(line::encode(body))],
        WireAction::AwaitRelease { release, max } => vec![Step::Await { release: release.clone(), max: *max }],
        WireAction::Release(release) => vec![Step::Release(release.clone())],
    }
}

/// Steps for an SSE stream. `event_id` is the `id:` of the event being replaced, kept on the first event written
/// for it so a resuming client's bookkeeping stays intact.
pub fn sse(action: &WireAction, event_id: Option<&str>) -> Vec<Step> {
    let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
    match action {
        WireAction::Send(bytes) => vec![Step::Write(SseEvent::encode(Some("message"), &text(bytes), event_id, "\n"))],
        WireAction::SendFramed { bytes, framing } => match *framing {
            WireFraming::Crlf => vec![Step::Write(SseEvent::encode(Some("message"), &text(bytes), event_id, "\r\n"))],
            WireFraming::Bom => {
                let data = format!("\u{feff}{}", text(bytes));
                vec![Step::Write(SseEvent::encode(Some("message"), &data, event_id, "\n"))]
            }
            WireFraming::Split { parts } => {
                split(SseEvent::encode(Some("message"), &text(bytes), event_id, "\n"), parts)
            }
        },
        WireAction::Pause(d) => vec![Step::Pause(*d)],
        WireAction::Close => vec![Step::Close],
        WireAction::HttpStatus { status, retry_after_sec, body, media } => {
            vec![Step::Status { status: *status, retry_after_sec: *retry_after_sec, body: body.clone(), media: *media }]
        }
        WireAction::AwaitRelease { release, max } => vec![Step::Await { release: release.clone(), max: *max }],
        WireAction::Release(release) => vec![Step::Release(release.clone())],
    }
}

fn concat(parts: &[&[u8]]) -> Bytes {
    let mut out = BytesMut::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        out.extend_from_slice(p);
    }
    out.freeze()
}

/// `bytes` cut into `parts` pieces of about equal size (fewer if there are fewer bytes), with pauses between.
fn split(bytes: Bytes, parts: u8) -> Vec<Step> {
    let parts = usize::from(parts.max(1)).min(bytes.len().max(1));
    // Sizes differ by at most one byte: the first `len % parts` pieces get the extra byte.
    let (base, extra) = (bytes.len() / parts, bytes.len() % parts);
    let mut steps = Vec::with_capacity(parts * 2);
    let mut rest = bytes;
    for i in 0..parts {
        let piece = rest.split_to(base + usize::from(i < extra));
        if i > 0 {
            steps.push(Step::Gap(SPLIT_PAUSE));
        }
        steps.push(Step::Write(piece));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn written(steps: &[Step]) -> Vec<u8> {
        steps
            .iter()
            .filter_map(|s| match s {
                Step::Write(b) => Some(b.to_vec()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    #[test]
    fn line_framings() {
        let b = Bytes::from_static(b"{}");
        assert_eq!(written(&line(&WireAction::Send(b.clone()))), b"{}\n");
        let crlf = WireAction::SendFramed { bytes: b.clone(), framing: WireFraming::Crlf };
        assert_eq!(written(&line(&crlf)), b"{}\r\n");
        let bom = WireAction::SendFramed { bytes: b.clone(), framing: WireFraming::Bom };
        assert_eq!(written(&line(&bom)), b"\xEF\xBB\xBF{}\n");
    }

    #[test]
    fn sse_keeps_the_event_id() {
        let steps = sse(&WireAction::Send(Bytes::from_static(b"{}")), Some("0/3"));
        assert_eq!(written(&steps), b"event: message\nid: 0/3\ndata: {}\n\n");
    }

    proptest! {
        #[test]
        fn a_split_write_has_the_asked_pieces_and_the_same_bytes(len in 1usize..200, parts in 2u8..64) {
            let bytes = Bytes::from(vec![b'a'; len]);
            let steps = line(&WireAction::SendFramed { bytes: bytes.clone(), framing: WireFraming::Split { parts } });
            let writes = steps.iter().filter(|s| matches!(s, Step::Write(_))).count();
            prop_assert_eq!(writes, usize::from(parts).min(len + 1));
            let mut expected = bytes.to_vec();
            expected.push(b'\n');
            prop_assert_eq!(written(&steps), expected);
        }
    }
}
