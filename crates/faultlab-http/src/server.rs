//! The one HTTP/1.1 accept loop every front uses (`serve`, the proxy, the bridge, the control API), so each gets
//! the same bounds against slow or abandoned clients:
//!
//! - a client must send a request's head within [`Limits::header_read_timeout`] (also the most a keep-alive
//!   connection may sit idle between requests), or its connection is closed;
//! - a request body that stops arriving for [`Limits::body_idle_timeout`] fails the request (408);
//! - at most [`Limits::max_connections`] connections are open. When a new one arrives at the cap (or `accept`
//!   runs out of descriptors), the connection idle the longest (no request being worked on: sending its head or
//!   its body, or parked between requests) is closed to make room; a connection whose request is being answered
//!   is never closed for this. With none idle, the newcomer is closed at once;
//! - on shutdown the listener closes, idle connections end, and open responses get
//!   [`Limits::shutdown_grace`] to finish before their connections are closed.

use axum::body::Body;
use bytes::Bytes;
use faultlab_wire::sync::lock;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// Default time a client has to send a request's head (10 s).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a request body may go without a byte arriving (10 s).
pub const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default grace on shutdown for open responses (2 s).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Most connections at once when the descriptor limit allows it.
pub const MAX_CONNECTIONS: usize = 1024;

/// The bounds one listener enforces.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub body_idle_timeout: Duration,
    pub max_connections: usize,
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_idle_timeout: BODY_IDLE_TIMEOUT,
            max_connections: fd_aware_cap(),
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }
}

/// [`MAX_CONNECTIONS`], or fewer when the soft descriptor limit is low: half of what is left after 32 for the
/// process's own files, since a proxied connection also holds one to its upstream.
pub fn fd_aware_cap() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX);
    let usable = usize::try_from(soft.saturating_sub(32) / 2).unwrap_or(usize::MAX);
    usable.clamp(8, MAX_CONNECTIONS)
}

/// The body error a request sees when its client stops sending mid-body.
#[derive(Debug, thiserror::Error)]
#[error("the request body stalled: nothing arrived for {0:?}")]
pub struct BodyStalled(pub Duration);

/// Serves `app` on `listener` until `shutdown` is cancelled, then drains as [`Limits`] says and returns.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let registry = Arc::new(Registry::default());
    let graceful = CancellationToken::new();
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if registry.len() >= limits.max_connections && !registry.evict_idlest() {
                        // Every connection is being answered: the newcomer cannot be served now.
                        drop(stream);
                        continue;
                    }
                    // Small SSE writes must not wait for delayed ACKs (Nagle): 40 ms a response otherwise.
                    let _ = stream.set_nodelay(true);
                    let connection = registry.open();
                    tasks.spawn(serve_connection(stream, app.clone(), limits, connection, graceful.clone()));
                }
                // Out of descriptors: make room by closing the idlest connection, or wait for one to end.
                Err(e) if matches!(e.raw_os_error(), Some(23 | 24)) => {
                    if !registry.evict_idlest() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                // A connection reset before it was accepted, and the like: nothing to serve.
                Err(_) => {}
            },
        }
    }
    drop(listener);
    graceful.cancel();
    let drained =
        tokio::time::timeout(limits.shutdown_grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        // The grace is over: close what is still open (its clients see the connection end).
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    Ok(())
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    app: axum::Router,
    limits: Limits,
    connection: Arc<Connection>,
    graceful: CancellationToken,
) {
    let cut = connection.cut.clone();
    let _open = Open(connection.clone());
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let app = app.clone();
        let exchange = Arc::new(InFlight { connection: connection.clone(), busy: AtomicBool::new(false) });
        let (parts, incoming) = request.into_parts();
        if incoming.is_end_stream() {
            exchange.mark_busy();
        }
        let body =
            IdleBody { inner: incoming, idle: limits.body_idle_timeout, sleep: None, exchange: exchange.clone() };
        let request = http::Request::from_parts(parts, Body::new(body));
        async move {
            let response = match app.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            // The answer is being given: the connection is busy until its body has gone (or been dropped).
            exchange.mark_busy();
            Ok::<_, Infallible>(response.map(|body| Body::new(Tracked { inner: body, _exchange: exchange })))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let served = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(served);
    tokio::select! {
        _ = served.as_mut() => return,
        () = cut.cancelled() => return,
        () = graceful.cancelled() => {}
    }
    served.as_mut().graceful_shutdown();
    tokio::select! {
        _ = served => {}
        () = cut.cancelled() => {}
    }
}

/// The open connections, for the cap and for choosing which to close.
#[derive(Default)]
struct Registry {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Connection>>>,
}

struct Connection {
    id: u64,
    registry: std::sync::Weak<Registry>,
    /// Requests being answered (their bodies fully received, their responses not yet over).
    busy: AtomicUsize,
    idle_since: Mutex<Instant>,
    cut: CancellationToken,
}

impl Registry {
    fn len(&self) -> usize {
        lock(&self.open).len()
    }

    fn open(self: &Arc<Self>) -> Arc<Connection> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            id,
            registry: Arc::downgrade(self),
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            cut: CancellationToken::new(),
        });
        lock(&self.open).insert(id, connection.clone());
        connection
    }

    /// Closes the connection idle the longest; false when every connection is busy.
    fn evict_idlest(&self) -> bool {
        let mut open = lock(&self.open);
        let idlest = open
            .values()
            .filter(|c| c.busy.load(Ordering::SeqCst) == 0)
            .min_by_key(|c| *lock(&c.idle_since))
            .map(|c| c.id);
        match idlest.and_then(|id| open.remove(&id)) {
            Some(connection) => {
                connection.cut.cancel();
                true
            }
            None => false,
        }
    }
}

/// Leaves the registry when the connection's task ends, however it ends.
struct Open(Arc<Connection>);

impl Drop for Open {
    fn drop(&mut self) {
        if let Some(registry) = self.0.registry.upgrade() {
            lock(&registry.open).remove(&self.0.id);
        }
    }
}

/// One request on a connection: busy from the end of its body to the end of its response.
struct InFlight {
    connection: Arc<Connection>,
    busy: AtomicBool,
}

impl InFlight {
    fn mark_busy(&self) {
        if !self.busy.swap(true, Ordering::SeqCst) {
            self.connection.busy.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.busy.load(Ordering::SeqCst) {
            *lock(&self.connection.idle_since) = Instant::now();
            self.connection.busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A request body that fails once nothing has arrived for `idle`.
struct IdleBody {
    inner: Incoming,
    idle: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    exchange: Arc<InFlight>,
}

impl HttpBody for IdleBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.sleep = None;
                if frame.is_none() || this.inner.is_end_stream() {
                    this.exchange.mark_busy();
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let idle = this.idle;
                let sleep = this.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyStalled(idle))))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request counted as busy until it is over.
struct Tracked {
    inner: Body,
    _exchange: Arc<InFlight>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::{mpsc, watch};

    const PATIENCE: Duration = Duration::from_secs(5);

    async fn read_all(stream: &mut TcpStream) -> String {
        let mut answer = Vec::new();
        tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer)).await.unwrap().unwrap_or_default();
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn at_the_cap_a_connection_being_answered_is_kept_and_an_idle_one_makes_room() {
        // One route: it says it has started, then answers once released.
        let (entered_tx, mut entered) = mpsc::unbounded_channel::<()>();
        let (release, released) = watch::channel(false);
        let app = axum::Router::new().fallback(move || {
            let (entered_tx, mut released) = (entered_tx.clone(), released.clone());
            async move {
                let _ = entered_tx.send(());
                let _ = released.wait_for(|r| *r).await;
                "done"
            }
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = Limits { max_connections: 2, ..Limits::default() };
        let shutdown = CancellationToken::new();
        tokio::spawn(serve(listener, app, limits, shutdown.clone()));

        let mut busy = TcpStream::connect(addr).await.unwrap();
        busy.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        tokio::time::timeout(PATIENCE, entered.recv()).await.unwrap();
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        // The cap is full (one being answered, one idle): a newcomer closes the idle one, never the busy one.
        let mut newcomer = TcpStream::connect(addr).await.unwrap();
        assert_eq!(read_all(&mut idle).await, "", "the idle connection was closed without an answer");
        newcomer.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        tokio::time::timeout(PATIENCE, entered.recv()).await.unwrap();
        release.send_replace(true);
        let (first, second) = tokio::join!(read_all(&mut busy), read_all(&mut newcomer));
        assert!(first.starts_with("HTTP/1.1 200"), "{first}");
        assert!(second.starts_with("HTTP/1.1 200"), "{second}");
        shutdown.cancel();
    }
}
