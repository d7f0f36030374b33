//! The wire layer: what crosses a stdio pipe or an HTTP body, kept exactly as it was sent.
//!
//! Everything above this crate (the fault engine, the server's wire middleware, the proxy, the observing client)
//! works on [`Frame`]s: the original bytes of one message plus, when they parse, an order-preserving
//! `serde_json::Value` for inspection. Forwarding always uses the bytes, so a message nobody changes passes
//! untouched, unknown fields and key order included.
//!
//! - [`frame`]: one JSON-RPC message, classified (request, notification, response, error, not JSON-RPC).
//! - [`line`]: newline-delimited framing for stdio, with a line-size limit.
//! - [`list`]: the lists a server offers that can change (tools, resources, prompts): methods, notifications.
//! - [`sse`]: Server-Sent Events blocks for Streamable HTTP, split without re-encoding.
//! - [`config`]: the one reader of the JSON/YAML config files (depth-checked, errors naming the file).
//! - [`sync`]: the one lock policy (std `Mutex` through [`sync::lock`], which recovers from poisoning).
//! - [`canonical`]: JSON text with sorted keys, for telling equal calls apart from different ones; type names.
//! - [`markup`]: text escaped for the reports' HTML and JUnit XML (one escaper, XML 1.0's forbidden characters
//!   replaced there).
//! - [`template`]: `{{name}}` placeholders filled with saved values (the control agents' plans, model scripts).
//!
//! The child process speaking lines that used to live here is `faultlab_proc::child`, with the rest of the
//! lab's process handling.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

pub mod canonical;
pub mod config;
pub mod frame;
pub mod line;
pub mod list;
pub mod markup;
pub mod nesting;
pub mod sse;
pub mod sync;
pub mod template;

pub use canonical::{canonical, json_kind};
pub use frame::{Frame, Kind, MessageId};
pub use line::{Line, LineCodec, MAX_LINE_BYTES};
pub use list::ListName;
pub use sse::{SseDecoder, SseError, SseEvent};

/// Test support shared by the codecs' unit tests.
#[cfg(test)]
pub(crate) mod test_codec {
    use bytes::BytesMut;
    use tokio_util::codec::Decoder;

    /// All that `decoder` makes of `chunks` arriving one after another, then of the end of the input.
    pub fn decode_chunks<D: Decoder>(decoder: &mut D, chunks: &[&[u8]]) -> Vec<D::Item>
    where
        D::Error: std::fmt::Debug,
    {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(item) = decoder.decode(&mut buf).unwrap() {
                out.push(item);
            }
        }
        while let Some(item) = decoder.decode_eof(&mut buf).unwrap() {
            out.push(item);
        }
        out
    }
}
