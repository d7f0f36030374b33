//! Server-Sent Events as used by Streamable HTTP, split into events without re-encoding them.
//!
//! Each [`SseEvent`] carries its exact bytes (fields, comments and the blank line that ended it), so a stream
//! nobody changes is forwarded byte for byte, and the parsed fields are there to decide whether to change it.

use bytes::{Bytes, BytesMut};
use std::fmt::Write as _;
use tokio_util::codec::Decoder;

/// Default limit for one event, in bytes (16 MiB, matching the stdio line limit).
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One SSE event block (or a block of comments only, such as a keep-alive `:`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The block exactly as received, including its terminating blank line.
    pub raw: Bytes,
    pub event: Option<String>,
    /// `data` lines joined with `\n`; `None` when the block had no data line.
    pub data: Option<String>,
    pub id: Option<String>,
    pub retry: Option<u64>,
}

impl SseEvent {
    /// Encodes a `message` event carrying `data` (split over several `data:` lines if it contains newlines).
    pub fn message(data: &str) -> Bytes {
        Self::encode(Some("message"), data, None, "\n")
    }

    /// Encodes an event with the given line ending (`"\n"` normally; `"\r\n"` for the CRLF framing fault).
    pub fn encode(event: Option<&str>, data: &str, id: Option<&str>, eol: &str) -> Bytes {
        let mut out = String::with_capacity(data.len() + 32);
        if let Some(event) = event {
            let _ = write!(out, "event: {event}{eol}");
        }
        if let Some(id) = id {
            let _ = write!(out, "id: {id}{eol}");
        }
        for line in data.split('\n') {
            let _ = write!(out, "data: {line}{eol}");
        }
        out.push_str(eol);
        Bytes::from(out)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("an SSE event exceeded {limit} bytes")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Incremental SSE decoder (a `tokio_util` codec): feed it body chunks, get whole events.
#[derive(Debug)]
pub struct SseDecoder {
    max_event_bytes: usize,
    /// Bytes of the buffer already scanned for the end of the current event (avoids rescanning, so decoding is
    /// linear in the body size).
    scanned: usize,
    at_stream_start: bool,
}

impl SseDecoder {
    pub fn new(max_event_bytes: usize) -> Self {
        Self { max_event_bytes, scanned: 0, at_stream_start: true }
    }

    /// Finds the end of the first event block in `buf`: the index just past its blank line.
    /// `eof` says no more bytes will come, so a trailing `\r` is a complete line ending.
    fn find_block_end(&mut self, buf: &[u8], eof: bool) -> Option<usize> {
        // Walk line by line from the start of the block; `line_start` is where the current line began.
        let mut line_start = 0;
        let mut i = 0;
        while i < buf.len() {
            let eol_len = match buf[i] {
                b'\n' => 1,
                b'\r' if i + 1 < buf.len() => {
                    if buf[i + 1] == b'\n' {
                        2
                    } else {
                        1
                    }
                }
                // A `\r` as the last byte may be the first half of `\r\n`: wait for more input unless at EOF.
                b'\r' if eof => 1,
                b'\r' => {
                    self.scanned = line_start;
                    return None;
                }
                _ => {
                    i += 1;
                    continue;
                }
            };
            if i == line_start {
                return Some(i + eol_len);
            }
            i += eol_len;
            line_start = i;
        }
        self.scanned = line_start;
        None
    }

    fn parse_block(&mut self, raw: Bytes) -> SseEvent {
        let mut event = SseEvent { raw: raw.clone(), ..SseEvent::default() };
        let mut text = String::from_utf8_lossy(&raw).into_owned();
        if std::mem::take(&mut self.at_stream_start) && text.starts_with('\u{feff}') {
            text.drain(..'\u{feff}'.len_utf8());
        }
        let mut data: Option<String> = None;
        for line in text.split(['\n', '\r']).filter(|l| !l.is_empty()) {
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line, ""),
            };
            match field {
                "data" => match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                "event" => event.event = Some(value.to_owned()),
                "id" if !value.contains('\0') => event.id = Some(value.to_owned()),
                "retry" => event.retry = value.parse().ok(),
                _ => {}
            }
        }
        event.data = data;
        event
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    fn decode_inner(&mut self, src: &mut BytesMut, eof: bool) -> Result<Option<SseEvent>, SseError> {
        let end = self.find_block_end(src, eof);
        match end {
            Some(end) => {
                self.scanned = 0;
                let raw = src.split_to(end).freeze();
                Ok(Some(self.parse_block(raw)))
            }
            None if src.len() > self.max_event_bytes => Err(SseError::TooLarge { limit: self.max_event_bytes }),
            None if eof && !src.is_empty() => {
                // A stream that ends mid-event: the spec says an incomplete event is discarded, but we still hand
                // over its bytes so a proxy can forward exactly what it received.
                self.scanned = 0;
                let raw = src.split_to(src.len()).freeze();
                let mut event = self.parse_block(raw);
                event.data = None;
                Ok(Some(event))
            }
            None => Ok(None),
        }
    }
}

impl Decoder for SseDecoder {
    type Item = SseEvent;
    type Error = SseError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<SseEvent>, SseError> {
        self.decode_inner(src, false)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<SseEvent>, SseError> {
        self.decode_inner(src, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        crate::test_codec::decode_chunks(&mut SseDecoder::default(), chunks)
    }

    #[test]
    fn parses_fields_and_keeps_raw_bytes() {
        let body = b": keep-alive\n\nid: 0/1\nretry: 3000\ndata:\n\nevent: message\ndata: {\"id\":1}\n\n";
        let events = decode_chunks(&[body]);
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].data, None);
        assert_eq!(events[1].id.as_deref(), Some("0/1"));
        assert_eq!(events[1].retry, Some(3000));
        assert_eq!(events[1].data.as_deref(), Some(""));
        assert_eq!(events[2].data.as_deref(), Some("{\"id\":1}"));
        let joined: Vec<u8> = events.iter().flat_map(|e| e.raw.to_vec()).collect();
        assert_eq!(joined, body);
    }

    #[test]
    fn handles_crlf_split_across_chunks_and_multiline_data() {
        let events = decode_chunks(&[b"data: a\r", b"\ndata: b\r\n\r", b"\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data.as_deref(), Some("a\nb"));
    }

    #[test]
    fn encode_then_decode_round_trips() {
        let bytes = SseEvent::message("{\"jsonrpc\":\"2.0\"}");
        let events = decode_chunks(&[&bytes]);
        assert_eq!(events[0].event.as_deref(), Some("message"));
        assert_eq!(events[0].data.as_deref(), Some("{\"jsonrpc\":\"2.0\"}"));
    }

    #[test]
    fn a_leading_bom_is_ignored_for_fields() {
        let events = decode_chunks(&["\u{feff}data: x\n\n".as_bytes()]);
        assert_eq!(events[0].data.as_deref(), Some("x"));
    }

    #[test]
    fn an_event_over_the_limit_is_an_error() {
        let mut dec = SseDecoder::new(8);
        let mut buf = BytesMut::from(&b"data: 0123456789"[..]);
        assert!(matches!(dec.decode(&mut buf), Err(SseError::TooLarge { limit: 8 })));
    }

    proptest! {
        #[test]
        fn any_chunking_yields_the_same_bytes(input in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b'd'), any::<u8>()], 0..300), split in 0usize..300) {
            let split = split.min(input.len());
            let events = decode_chunks(&[&input[..split], &input[split..]]);
            let joined: Vec<u8> = events.iter().flat_map(|e| e.raw.to_vec()).collect();
            prop_assert_eq!(joined, input);
        }
    }
}
