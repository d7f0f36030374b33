//! The stdio wire layer.
//!
//! ```text
//!  client ──stdin──▶ [inbound pump] ──pipe──▶ rmcp server
//!  client ◀─stdout── [writer] ◀─ outlet ◀─ [outbound pump] ◀──pipe── rmcp server
//! ```
//!
//! rmcp speaks to an in-memory pipe. The pumps split both directions into lines and show each to the connection's
//! fault engine; lines pass on byte for byte unless a fault fired. The writer is the only task that touches stdout,
//! so a fault's frames are never interleaved with others.

use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use faultlab_engine::recorder::{Direction, Event};
use faultlab_engine::{Engine, WireAction, render};
use faultlab_wire::frame::Kind;
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec, MessageId};
use futures::StreamExt;
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

/// Size of the in-memory pipe between the wire layer and rmcp, in bytes.
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

/// How a stdio connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdioEnd {
    /// The client closed stdin (or the server finished).
    ClientClosed,
    /// A `disconnect` fault closed the connection.
    Disconnected,
}

/// Serves one MCP connection over `input`/`output` (the process's stdin/stdout, or pipes in tests) until the
/// client closes its side or a fault closes the connection.
pub async fn serve<S, R, W>(
    service: S,
    engine: Arc<Engine>,
    input: R,
    output: W,
    max_line_bytes: usize,
) -> std::io::Result<StdioEnd>
where
    S: ServerHandler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (server_io, wire_io) = tokio::io::duplex(PIPE_BYTES);
    let server = tokio::spawn(async move {
        // An error here means the client never completed a lifecycle message (e.g. it closed at once).
        if let Ok(running) = service.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let (from_server, to_server) = tokio::io::split(wire_io);
    let (outlet, queue) = Outlet::new();
    let (end_tx, end_rx) = mpsc::unbounded_channel::<()>();

    let inbound = tokio::spawn(pump_inbound(input, to_server, engine.clone(), outlet.clone(), max_line_bytes));
    let outbound = tokio::spawn(pump_outbound(from_server, engine.clone(), outlet, end_tx, max_line_bytes));
    let end = outlet::write_stream(output, queue, end_rx, engine.recorder(), |_| {}).await.map(|end| match end {
        WriterEnd::Finished => StdioEnd::ClientClosed,
        WriterEnd::Closed => StdioEnd::Disconnected,
    });

    inbound.abort();
    outbound.abort();
    server.abort();
    engine.clear();
    end
}

/// Client to server: every line goes to rmcp unchanged; the engine sees it first (a cancel may release a
/// late response).
async fn pump_inbound<R, W>(input: R, mut to_server: W, engine: Arc<Engine>, outlet: Outlet, max_line_bytes: usize)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = FramedRead::new(input, LineCodec::new(max_line_bytes));
    // The version the first `initialize` asked for; a second `initialize` is refused and keeps it.
    let mut initialized: Option<String> = None;
    while let Some(Ok(line)) = lines.next().await {
        let bytes = match line {
            Line::Bytes(bytes) => bytes,
            Line::TooLong => {
                let codec = lines.decoder();
                let id = MessageId::from_prefix(codec.overlong_prefix());
                let reason = format!(
                    "a request of {} bytes, over the frame-size limit of {max_line_bytes} bytes (--max-frame-bytes)",
                    codec.overlong_len()
                );
                too_long(&engine, &outlet, Direction::ClientToServer, id, codec.overlong_len(), reason);
                continue;
            }
        };
        let frame = Frame::parse(bytes.clone());
        // rmcp drops some such requests without a word, and answers others without their id.
        if let Some((id, reason)) = unreadable_request(&frame) {
            send_error(&outlet, &id, INVALID_REQUEST, &format!("invalid request: {reason}"), Value::Null);
            continue;
        }
        if let (Some("initialize"), Some(id)) = (frame.method(), frame.id()) {
            if let Some(version) = &initialized {
                let message =
                    format!("already initialized: a session is initialized once (protocol version {version} stays)");
                send_error(&outlet, id, INVALID_REQUEST, &message, json!({"protocolVersion": version}));
                continue;
            }
            let asked = frame.value().and_then(|v| v.pointer("/params/protocolVersion")).and_then(Value::as_str);
            initialized = Some(asked.unwrap_or("unknown").to_owned());
        }
        if let Some((_, actions)) = engine.inbound(&frame) {
            outlet.send(actions.iter().flat_map(render::line).collect());
        }
        if to_server.write_all(&faultlab_wire::line::encode(&bytes)).await.is_err() {
            break;
        }
    }
    // Client EOF: rmcp sees EOF too and ends the session, which ends the outbound pump.
    let _ = to_server.shutdown().await;
}

/// Server to client: every line the server writes goes through the engine, then to the writer queue.
async fn pump_outbound<R>(
    from_server: R,
    engine: Arc<Engine>,
    outlet: Outlet,
    end: mpsc::UnboundedSender<()>,
    max_line_bytes: usize,
) where
    R: AsyncRead + Unpin,
{
    // rmcp's line may be longer than the limit before its quotes are cut (escaping can grow a quoted input up to
    // 6-fold: `\u0001`), so it is read with room for that and the limit applies to what would be sent.
    let mut lines = FramedRead::new(from_server, LineCodec::new(max_line_bytes.saturating_mul(ESCAPE_GROWTH)));
    while let Some(Ok(line)) = lines.next().await {
        let frame = match line {
            Line::Bytes(bytes) => limit_quotes(Frame::parse(bytes)),
            Line::TooLong => {
                let codec = lines.decoder();
                let id = MessageId::from_prefix(codec.overlong_prefix());
                let reason = format!(
                    "a reply of over {} bytes, over the frame-size limit of {max_line_bytes} bytes (--max-frame-bytes)",
                    codec.overlong_len()
                );
                too_long(&engine, &outlet, Direction::ServerToClient, id, codec.overlong_len(), reason);
                continue;
            }
        };
        if frame.bytes().len() > max_line_bytes {
            let (id, bytes) = (frame.id().cloned(), frame.bytes().len());
            let reason = format!(
                "a reply of {bytes} bytes, over the frame-size limit of {max_line_bytes} bytes (--max-frame-bytes)"
            );
            too_long(&engine, &outlet, Direction::ServerToClient, id, bytes, reason);
            continue;
        }
        let actions = engine.outbound(&frame);
        outlet.send(actions.iter().flat_map(render::line).collect());
    }
    let _ = end.send(());
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

/// A line over the size limit: a `dropped` diagnostic, and an error for its id when the id could be read.
fn too_long(
    engine: &Engine,
    outlet: &Outlet,
    direction: Direction,
    id: Option<MessageId>,
    bytes: usize,
    reason: String,
) {
    engine.recorder().record(Event::Dropped {
        direction,
        id: id.as_ref().map(MessageId::to_value),
        bytes,
        answered: id.is_some(),
        reason: reason.clone(),
    });
    if let Some(id) = id {
        let code = if direction == Direction::ClientToServer { INVALID_REQUEST } else { INTERNAL_ERROR };
        send_error(outlet, &id, code, &reason, json!({"bytes": bytes}));
    }
}

fn send_error(outlet: &Outlet, id: &MessageId, code: i64, message: &str, data: Value) {
    let mut error = json!({"code": code, "message": message});
    if !data.is_null() {
        error["data"] = data;
    }
    let reply = json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error});
    outlet.send(render::line(&WireAction::Send(Frame::from_value(reply).bytes().clone())));
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
