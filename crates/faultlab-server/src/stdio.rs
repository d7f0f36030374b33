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

use bytes::BytesMut;
use faultlab_engine::Engine;
use faultlab_engine::outlet::{self, Outlet, WriterEnd};
use faultlab_engine::recorder::Event;
use faultlab_engine::render;
use faultlab_wire::line::Line;
use faultlab_wire::{Frame, LineCodec};
use futures::StreamExt;
use rmcp::{ServerHandler, ServiceExt};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

/// Size of the in-memory pipe between the wire layer and rmcp, in bytes.
const PIPE_BYTES: usize = 256 * 1024;

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
    while let Some(Ok(line)) = lines.next().await {
        let bytes = match line {
            Line::Bytes(bytes) => bytes,
            Line::TooLong => {
                engine.recorder().record(Event::FrameRejected {
                    reason: format!("inbound line longer than {max_line_bytes} bytes"),
                });
                continue;
            }
        };
        let frame = Frame::parse(bytes.clone());
        if let Some((_, actions)) = engine.inbound(&frame) {
            outlet.send(actions.iter().flat_map(render::line).collect());
        }
        let mut framed = BytesMut::with_capacity(bytes.len() + 1);
        framed.extend_from_slice(&bytes);
        framed.extend_from_slice(b"\n");
        if to_server.write_all(&framed).await.is_err() {
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
    let mut lines = FramedRead::new(from_server, LineCodec::new(max_line_bytes));
    while let Some(Ok(Line::Bytes(bytes))) = lines.next().await {
        let actions = engine.outbound(&Frame::parse(bytes));
        outlet.send(actions.iter().flat_map(render::line).collect());
    }
    let _ = end.send(());
}
