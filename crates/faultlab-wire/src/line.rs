//! Newline-delimited framing (the MCP stdio transport): one message per line, `\n` terminated.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// Default limit for one line (one frame), in bytes: 65 MiB. It carries the catalogue's largest fault, an
/// `oversized_response` of 64 MiB of padding, plus 1 MiB for the rest of the reply, so the lab never loses its
/// own faults in its own pipes; it still bounds what a peer can make us buffer. `--max-frame-bytes` changes it.
pub const MAX_LINE_BYTES: usize = 65 * 1024 * 1024;

/// How much of an over-long line is kept to tell what it was (its id), in bytes (4 KiB): a JSON-RPC message's
/// `id` comes early, before `params`/`result`.
pub const OVERLONG_PREFIX_BYTES: usize = 4 * 1024;

/// One decoded line: its bytes without the `\n` (a `\r` before it is kept, so forwarding reproduces the input),
/// or the fact that a line was longer than the limit and was skipped (its start is
/// [`LineCodec::overlong_prefix`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Bytes(Bytes),
    /// A line over the limit; its bytes were discarded up to the next newline.
    TooLong,
}

/// Splits a byte stream into lines with a size limit. An over-long line does not end the stream: it is reported
/// as [`Line::TooLong`] (its first [`OVERLONG_PREFIX_BYTES`] kept) and the codec resynchronises at the next
/// newline. Memory stays bounded by the limit (plus one read) whatever the peer sends.
#[derive(Debug)]
pub struct LineCodec {
    max: usize,
    /// How far the buffer has been searched for a newline, so a long line is not rescanned on every read.
    searched: usize,
    /// Inside an over-long line: bytes are dropped until its newline.
    discarding: bool,
    /// The start of the last over-long line.
    prefix: Bytes,
    /// How many bytes of the last over-long line were read (and dropped).
    overlong: usize,
}

impl LineCodec {
    pub fn new(max_line_bytes: usize) -> Self {
        Self { max: max_line_bytes, searched: 0, discarding: false, prefix: Bytes::new(), overlong: 0 }
    }

    /// The limit, in bytes.
    pub fn max_line_bytes(&self) -> usize {
        self.max
    }

    /// The first bytes (at most [`OVERLONG_PREFIX_BYTES`]) of the last line reported as [`Line::TooLong`].
    pub fn overlong_prefix(&self) -> &Bytes {
        &self.prefix
    }

    /// How many bytes the last line reported as [`Line::TooLong`] had, without its newline.
    pub fn overlong_len(&self) -> usize {
        self.overlong
    }
}

/// Appends one message to `out` as a line: its bytes, then `\n`. The one line encoder of the lab: every stdio
/// writer (the proxy, the bridge, the reference client, replay, the server's pipe to rmcp, the engine's `render`)
/// frames through it.
pub fn encode_into(out: &mut BytesMut, message: &[u8]) {
    out.reserve(message.len() + 1);
    out.extend_from_slice(message);
    out.put_u8(b'\n');
}

/// One message as a line: its bytes, then `\n`.
pub fn encode(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 1);
    encode_into(&mut out, message);
    out.freeze()
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
        if self.discarding {
            match src.iter().position(|&b| b == b'\n') {
                Some(at) => {
                    self.overlong += at;
                    src.advance(at + 1);
                    self.discarding = false;
                    return Ok(Some(Line::TooLong));
                }
                None => {
                    self.overlong += src.len();
                    src.clear();
                    return Ok(None);
                }
            }
        }
        // A newline at index `max` still ends a line of `max` bytes.
        let end = src.len().min(self.max.saturating_add(1));
        let from = self.searched.min(end);
        if let Some(at) = src[from..end].iter().position(|&b| b == b'\n') {
            let mut line = src.split_to(from + at + 1);
            line.truncate(from + at);
            self.searched = 0;
            return Ok(Some(Line::Bytes(line.freeze())));
        }
        if src.len() > self.max {
            self.prefix = Bytes::copy_from_slice(&src[..OVERLONG_PREFIX_BYTES.min(src.len())]);
            src.advance(self.max);
            self.overlong = self.max;
            self.searched = 0;
            self.discarding = true;
            return self.decode(src);
        }
        self.searched = end;
        Ok(None)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Line>, std::io::Error> {
        if let Some(line) = self.decode(src)? {
            return Ok(Some(line));
        }
        self.searched = 0;
        if std::mem::take(&mut self.discarding) {
            self.overlong += src.len();
            src.clear();
            return Ok(Some(Line::TooLong));
        }
        // A last line without its newline still counts: a peer may exit right after writing it.
        Ok((!src.is_empty()).then(|| Line::Bytes(src.split().freeze())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(codec: &mut LineCodec, input: &[u8]) -> Vec<Line> {
        crate::test_codec::decode_chunks(codec, &[input])
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

    #[test]
    fn an_overlong_line_keeps_its_start_even_when_it_arrives_in_pieces() {
        let mut codec = LineCodec::new(16);
        let mut buf = BytesMut::from(&b"{\"id\":7,\"result\":"[..]);
        assert_eq!(codec.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(b"\"xxxxxxxxxxxxxxxxxxxxxxxx");
        assert_eq!(codec.decode(&mut buf).unwrap(), None, "still inside the long line");
        buf.extend_from_slice(b"xxxx\"}\nnext\n");
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(Line::TooLong));
        assert!(codec.overlong_prefix().starts_with(b"{\"id\":7,"));
        assert_eq!(codec.overlong_len(), 48, "17 + 25 + 6 bytes before the newline");
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(Line::Bytes(Bytes::from_static(b"next"))));
    }

    #[test]
    fn an_encoded_line_decodes_to_the_same_bytes() {
        let mut buf = BytesMut::new();
        encode_into(&mut buf, b"{\"a\":1}\r");
        buf.extend_from_slice(&encode(b"{}"));
        assert_eq!(&buf[..], b"{\"a\":1}\r\n{}\n");
        let lines = decode_all(&mut LineCodec::default(), &buf);
        assert_eq!(
            lines,
            vec![Line::Bytes(Bytes::from_static(b"{\"a\":1}\r")), Line::Bytes(Bytes::from_static(b"{}"))]
        );
    }

    #[test]
    fn a_line_of_exactly_the_limit_passes() {
        let lines = decode_all(&mut LineCodec::new(4), b"abcd\nabcde\n");
        assert_eq!(lines, vec![Line::Bytes(Bytes::from_static(b"abcd")), Line::TooLong]);
    }

    proptest! {
        // Each case decodes its input twice, byte run by byte run: 64 cases keep it well under a second.
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn fed_in_any_pieces_it_splits_like_the_whole_input(
            input in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'a'), Just(b'b')], 0..256),
            cut in 1usize..17,
            max in 1usize..24,
        ) {
            let whole = decode_all(&mut LineCodec::new(max), &input);
            let mut codec = LineCodec::new(max);
            let (mut buf, mut pieces) = (BytesMut::new(), Vec::new());
            for chunk in input.chunks(cut) {
                buf.extend_from_slice(chunk);
                while let Some(line) = codec.decode(&mut buf).unwrap() {
                    pieces.push(line);
                }
            }
            if let Some(line) = codec.decode_eof(&mut buf).unwrap() {
                pieces.push(line);
            }
            prop_assert_eq!(pieces, whole);
        }
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
