//! The rmcp server's side of the stdio wire: what `faultlab serve` puts behind the lab's stdio front.
//!
//! ```text
//!  client ─stdin─▶ [stdio front + relay: engine] ─pipe─▶ [inbound guard] ─pipe─▶ rmcp server
//!  client ◀─stdout─ [writer ◀ outlet ◀ engine]  ◀─pipe─ [outbound guard] ◀─pipe─ rmcp server
//! ```
//!
//! The stdio front and the relay (`faultlab_proxy::front::stdio::serve_in_process`) own the client's pipes, the
//! fault engine the tools arm, the frame-size limit and the single writer. This module is what sits between
//! them and rmcp: it answers itself what rmcp would drop or answer without an id (a second `initialize`, a request
//! with an id that is not valid JSON-RPC), and cuts long strings in error replies (rmcp echoes input).

use bytes::Bytes;
use faultlab_engine::Recorder;
use faultlab_engine::recorder::{Direction, Event};
use faultlab_wire::frame::Kind;
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec, MessageId};
use futures::StreamExt;
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::task::AbortOnDropHandle;

/// Size of the in-memory pipe between this layer and rmcp, in bytes.
const PIPE_BYTES: usize = 256 * 1024;
/// The most of one string an error reply quotes back (of the client's input, which rmcp's errors echo), in bytes:
/// an oversized argument must not come back doubled by escaping.
pub const QUOTE_BYTES: usize = 2 * 1024;
/// JSON-RPC "Invalid Request": a frame over the size limit, or a second `initialize`.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "Internal error": a reply the server could not send.
const INTERNAL_ERROR: i64 = -32603;
/// How much longer than the frame-size limit rmcp's own line may be before its quotes are cut: JSON escaping of
/// an escaped input grows a control byte 6-fold (`\u0001`).
const ESCAPE_GROWTH: usize = 6;

/// Runs `service` on rmcp, speaking lines on `pipe` (the in-process upstream's end) until the relay closes it.
/// `recorder` gets a `dropped` event for a reply too long even to cut; the relay enforces `max_line_bytes` on
/// what this writes.
pub async fn serve_lines<S: ServerHandler>(service: S, pipe: DuplexStream, recorder: Recorder, max_line_bytes: usize) {
    let (server_io, wire_io) = tokio::io::duplex(PIPE_BYTES);
    // Aborted when this ends or is dropped (the relay drops it when the client's connection ends).
    let _server = AbortOnDropHandle::new(tokio::spawn(async move {
        // An error here means the client never completed a lifecycle message (e.g. it closed at once).
        // rmcp drops a line over its own limit (16 MiB by default) without a reply: its limit is the relay's, which
        // answers a longer line itself, plus the line's end.
        let (read, write) = tokio::io::split(server_io);
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
            .with_max_line_length(max_line_bytes.saturating_add(2));
        if let Ok(running) = service.serve(transport).await {
            let _ = running.waiting().await;
        }
    }));
    let (from_server, to_server) = tokio::io::split(wire_io);
    let (input, output) = tokio::io::split(pipe);
    // Both guards write to the relay; one task does, so lines never interleave.
    let (lines, queue) = mpsc::unbounded_channel::<Bytes>();
    let inbound = AbortOnDropHandle::new(tokio::spawn(guard_inbound(input, to_server, lines.clone(), max_line_bytes)));
    let writer = AbortOnDropHandle::new(tokio::spawn(write_lines(output, queue)));
    // rmcp has closed its side (after the client's EOF, or on its own): what is queued is written, then the
    // pipe's end tells the relay the server has ended.
    guard_outbound(from_server, lines, recorder, max_line_bytes).await;
    drop(inbound);
    let _ = writer.await;
}

async fn write_lines<W: AsyncWrite + Unpin>(mut output: W, mut queue: mpsc::UnboundedReceiver<Bytes>) {
    while let Some(line) = queue.recv().await {
        if output.write_all(&line).await.is_err() {
            return;
        }
    }
    let _ = output.shutdown().await;
}

/// Client to server: every line goes to rmcp unchanged, except what rmcp would drop or answer without its id.
async fn guard_inbound<R, W>(input: R, mut to_server: W, replies: mpsc::UnboundedSender<Bytes>, max: usize)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = FramedRead::new(input, LineCodec::new(max));
    // The version the first `initialize` asked for; a second `initialize` is refused and keeps it.
    let mut initialized: Option<String> = None;
    let send_error = |id: &MessageId, code, message: &str, data| {
        let _ = replies.send(error_line(id, code, message, data));
    };
    while let Some(Ok(line)) = lines.next().await {
        // The relay in front enforces the limit; a line over it cannot arrive here.
        let Line::Bytes(bytes) = line else { continue };
        let frame = Frame::parse(bytes.clone());
        // rmcp drops some such requests without a word, and answers others without their id.
        if let Some((id, reason)) = unreadable_request(&frame) {
            send_error(&id, INVALID_REQUEST, &format!("invalid request: {reason}"), Value::Null);
            continue;
        }
        if let (Some("initialize"), Some(id)) = (frame.method(), frame.id()) {
            if let Some(version) = &initialized {
                let message =
                    format!("already initialized: a session is initialized once (protocol version {version} stays)");
                send_error(id, INVALID_REQUEST, &message, json!({"protocolVersion": version}));
                continue;
            }
            let asked = frame.value().and_then(|v| v.pointer("/params/protocolVersion")).and_then(Value::as_str);
            initialized = Some(asked.unwrap_or("unknown").to_owned());
        }
        if to_server.write_all(&faultlab_wire::line::encode(&bytes)).await.is_err() {
            break;
        }
    }
    // Client EOF: rmcp sees EOF too and ends the session, which ends the outbound guard.
    let _ = to_server.shutdown().await;
}

/// Server to client: rmcp's lines, with the quotes in error replies cut; a line too long even for that becomes an
/// error for its id and a `dropped` event.
async fn guard_outbound<R: AsyncRead + Unpin>(
    from_server: R,
    out: mpsc::UnboundedSender<Bytes>,
    recorder: Recorder,
    max: usize,
) {
    // rmcp's line may be longer than the limit before its quotes are cut (escaping can grow a quoted input up to
    // 6-fold: `\u0001`), so it is read with room for that; the relay applies the limit to what is sent.
    let room = max.saturating_mul(ESCAPE_GROWTH);
    let mut lines = FramedRead::new(from_server, LineCodec::new(room));
    while let Some(Ok(line)) = lines.next().await {
        let frame = match line {
            Line::Bytes(bytes) => limit_quotes(Frame::parse(bytes)),
            Line::TooLong => {
                let codec = lines.decoder();
                let (id, bytes) = (MessageId::from_prefix(codec.overlong_prefix()), codec.overlong_len());
                let reason = format!(
                    "a reply of over {bytes} bytes, over the frame-size limit of {max} bytes (--max-frame-bytes)"
                );
                recorder.record(Event::Dropped {
                    direction: Direction::ServerToClient,
                    id: id.as_ref().map(MessageId::to_value),
                    bytes,
                    answered: id.is_some(),
                    reason: reason.clone(),
                });
                if let Some(id) = id {
                    let _ = out.send(error_line(&id, INTERNAL_ERROR, &reason, json!({"bytes": bytes})));
                }
                continue;
            }
        };
        if out.send(faultlab_wire::line::encode(frame.bytes())).is_err() {
            break;
        }
    }
}

/// A request with an id that is not valid JSON-RPC 2.0, and what is wrong with it; `None` for everything else
/// (valid requests, notifications, replies, and frames whose id cannot be echoed: those rmcp answers without id).
fn unreadable_request(frame: &Frame) -> Option<(MessageId, &'static str)> {
    let message = frame.value()?.as_object()?;
    let method = message.get("method")?;
    let raw_id = message.get("id")?;
    let id = MessageId::from_value(raw_id)?;
    let reason = if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        "`jsonrpc` must be \"2.0\""
    } else if !method.is_string() {
        "`method` must be a string"
    } else if !matches!(message.get("params"), None | Some(Value::Object(_) | Value::Null)) {
        "`params` must be an object"
    } else if !(raw_id.is_string() || raw_id.is_i64() || raw_id.is_u64()) {
        "`id` must be a string or an integer"
    } else {
        return None;
    };
    Some((id, reason))
}

/// A JSON-RPC error reply for `id`, as one line.
fn error_line(id: &MessageId, code: i64, message: &str, data: Value) -> Bytes {
    let mut error = json!({"code": code, "message": message});
    if !data.is_null() {
        error["data"] = data;
    }
    let reply = json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error});
    faultlab_wire::line::encode(Frame::from_value(reply).bytes())
}

/// An error reply (a JSON-RPC error, or a tool result with `isError: true`) quotes at most [`QUOTE_BYTES`] of any
/// one string: rmcp's errors echo the offending input (escaped, so it can double), and an oversized argument
/// must not make a reply too large to send. Other replies pass untouched.
fn limit_quotes(frame: Frame) -> Frame {
    if frame.bytes().len() <= QUOTE_BYTES {
        return frame;
    }
    let is_error = match frame.kind() {
        Kind::Error { .. } => true,
        Kind::Response { .. } => frame.value().and_then(|v| v.pointer("/result/isError")) == Some(&Value::Bool(true)),
        _ => false,
    };
    let Some(mut value) = frame.value().filter(|_| is_error).cloned() else { return frame };
    let part = if value.get("error").is_some() { "error" } else { "result" };
    if let Some(part) = value.get_mut(part) {
        truncate_strings(part);
    }
    Frame::from_value(value)
}

fn truncate_strings(value: &mut Value) {
    match value {
        Value::String(text) if text.len() > QUOTE_BYTES => {
            let mut cut = QUOTE_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let more = text.len() - cut;
            text.truncate(cut);
            text.push_str(&format!("… [truncated: {more} more bytes]"));
        }
        Value::Array(items) => items.iter_mut().for_each(truncate_strings),
        Value::Object(members) => members.values_mut().for_each(truncate_strings),
        _ => {}
    }
}
