//! Newline-delimited framing (the MCP stdio transport): one message per line, `\n` terminated.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// Default limit for one line, in bytes (16 MiB, the same as rmcp's stdio transport), so a peer cannot make us
/// buffer without bound.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One decoded line: its bytes without the `\n` (a `\r` before it is kept, so forwarding reproduces the input),
/// or the fact that a line was longer than the limit and was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Bytes(Bytes),
    /// A line over the limit; its bytes were discarded up to the next newline.
    TooLong,
}

/// Splits a byte stream into lines with a size limit. An over-long line does not end the stream: it is reported
/// as [`Line::TooLong`] and the codec resynchronises at the next newline.
#[derive(Debug)]
pub struct LineCodec {
    inner: AnyDelimiterCodec,
}

impl LineCodec {
    pub fn new(max_line_bytes: usize) -> Self {
        Self { inner: AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), max_line_bytes) }
    }
}

impl Default for LineCodec {
    fn default() -> Self {
        Self::new(MAX_LINE_BYTES)
    }
}

impl Decoder for LineCodec {
    type Item = Line;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Line>, std::io::Error> {
        match self.inner.decode(src) {
            Ok(line) => Ok(line.map(Line::Bytes)),
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Ok(Some(Line::TooLong)),
            Err(AnyDelimiterCodecError::Io(e)) => Err(e),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Line>, std::io::Error> {
        match self.inner.decode_eof(src) {
            // A last line without its newline still counts: a peer may exit right after writing it.
            Ok(line) => Ok(line.filter(|l| !l.is_empty()).map(Line::Bytes)),
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Ok(Some(Line::TooLong)),
            Err(AnyDelimiterCodecError::Io(e)) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(codec: &mut LineCodec, input: &[u8]) -> Vec<Line> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(line) = codec.decode(&mut buf).unwrap() {
            out.push(line);
        }
        if let Some(line) = codec.decode_eof(&mut buf).unwrap() {
            out.push(line);
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_carriage_returns() {
        let lines = decode_all(&mut LineCodec::default(), b"{\"a\":1}\n{\"b\":2}\r\nlast");
        assert_eq!(
            lines,
            vec![
                Line::Bytes(Bytes::from_static(b"{\"a\":1}")),
                Line::Bytes(Bytes::from_static(b"{\"b\":2}\r")),
                Line::Bytes(Bytes::from_static(b"last")),
            ]
        );
    }

    #[test]
    fn an_overlong_line_is_reported_and_the_next_one_still_arrives() {
        let lines = decode_all(&mut LineCodec::new(8), b"0123456789abcdef\nok\n");
        assert_eq!(lines, vec![Line::TooLong, Line::Bytes(Bytes::from_static(b"ok"))]);
    }

    proptest! {
        #[test]
        fn never_panics_and_never_exceeds_the_limit(input in proptest::collection::vec(any::<u8>(), 0..512), max in 1usize..64) {
            for line in decode_all(&mut LineCodec::new(max), &input) {
                if let Line::Bytes(b) = line {
                    prop_assert!(b.len() <= max);
                    prop_assert!(!b.contains(&b'\n'));
                }
            }
        }
    }
}
