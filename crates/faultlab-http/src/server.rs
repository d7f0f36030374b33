//! The one HTTP/1.1 accept loop every front uses (`serve`, the proxy, the bridge, the control API), so each gets
//! the same bounds against slow or abandoned clients:
//!
//! - a client must send a request's head within [`Limits::header_read_timeout`] (also the most a keep-alive
//!   connection may sit idle between requests), or its connection is closed;
//! - a request body that stops arriving for [`Limits::body_idle_timeout`], or is not whole within
//!   [`Limits::body_deadline`] of its head (a body trickled a byte at a time), fails the request (408);
//! - at most [`Limits::max_connections`] connections are open. When a new one arrives at the cap (or `accept`
//!   runs out of descriptors), the connection idle the longest (no request being worked on: sending its head or
//!   its body, or parked between requests) is closed to make room; a connection whose request is being answered
//!   is never closed for this;
//! - requests are answered on at most the cap less a reserve of an eighth (at least one) at once, so that slots
//!   are always left for new connections to be heard; one source address gets at most half of those. A request
//!   beyond either gets 503 with `Retry-After` (never a connection closed without a word). Loopback clients
//!   mostly share 127.0.0.1, so "one address" is every such client together: the per-address share keeps one
//!   address (127.0.0.1, `::1`, 127.0.0.2…) from taking the slots of the others, and the reserve and the 503 are
//!   what keep a hog on the same address from shutting others out silently;
//! - on shutdown the listener closes, idle connections end, and open responses get
//!   [`Limits::shutdown_grace`] to finish before their connections are closed.

use crate::slots::{Admitted, BUSY_AT_ONCE, Slots, busy};
use axum::body::Body;
use bytes::Bytes;
use faultlab_wire::sync::lock;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future as _;
use std::net::IpAddr;
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
/// Default time a whole request body may take from the request's head, however steadily it arrives (30 s: a
/// 4 MiB body at 140 KB/s; loopback clients send it in milliseconds).
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);
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
    /// The most a request body may take from its head, even if it never stalls for `body_idle_timeout`.
    pub body_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_idle_timeout: BODY_IDLE_TIMEOUT,
            max_connections: fd_aware_cap(),
            shutdown_grace: SHUTDOWN_GRACE,
            body_deadline: BODY_DEADLINE,
        }
    }
}

impl Limits {
    /// Requests answered at once: the cap less a reserve of an eighth of it (at least one slot), kept so that a
    /// new connection can always be heard and, if need be, told to come back later.
    pub fn answering(&self) -> usize {
        let reserve = (self.max_connections / 8).max(1);
        self.max_connections.saturating_sub(reserve).max(1)
    }

    /// Requests answered at once for one source address: half of [`Limits::answering`] (at least one).
    pub fn answering_per_peer(&self) -> usize {
        (self.answering() / 2).max(1)
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

/// The body error a request sees when its whole body has not arrived within [`Limits::body_deadline`].
#[derive(Debug, thiserror::Error)]
#[error("the request body was not complete within {0:?} of the request's head (the body deadline)")]
pub struct BodyDeadline(pub Duration);

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
                Ok((stream, peer)) => {
                    if registry.len() >= limits.max_connections && !registry.evict_idlest() {
                        // Every connection is being answered (the reserve makes this rare): say so and close.
                        let _ = stream.try_write(BUSY_AT_ONCE);
                        drop(stream);
                        continue;
                    }
                    // Small SSE writes must not wait for delayed ACKs (Nagle): 40 ms a response otherwise.
                    let _ = stream.set_nodelay(true);
                    let connection = registry.open(peer.ip());
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
        let admitted =
            connection.registry.upgrade().and_then(|registry| registry.slots.admit(connection.peer, &limits));
        let exchange =
            Arc::new(InFlight { connection: connection.clone(), busy: AtomicBool::new(false), _admitted: admitted });
        let refused = exchange._admitted.is_none();
        let (parts, incoming) = request.into_parts();
        if incoming.is_end_stream() {
            exchange.mark_busy();
        }
        let body = IdleBody {
            inner: incoming,
            idle: limits.body_idle_timeout,
            sleep: None,
            whole: limits.body_deadline,
            deadline: Box::pin(tokio::time::sleep(limits.body_deadline)),
            exchange: exchange.clone(),
        };
        let request = http::Request::from_parts(parts, Body::new(body));
        async move {
            if refused {
                return Ok::<_, Infallible>(busy());
            }
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
    slots: Arc<Slots>,
}

struct Connection {
    id: u64,
    /// The client's address, for the share of answering slots one address may take.
    peer: IpAddr,
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

    fn open(self: &Arc<Self>, peer: IpAddr) -> Arc<Connection> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            id,
            peer,
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
    /// Its answering slot; `None` when it was refused one (it is answered 503).
    _admitted: Option<Admitted>,
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

/// A request body that fails once nothing has arrived for `idle`, or once it has taken `whole` in all.
struct IdleBody {
    inner: Incoming,
    idle: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    whole: Duration,
    deadline: Pin<Box<Sleep>>,
    exchange: Arc<InFlight>,
}

impl HttpBody for IdleBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        // Checked first: a body that keeps trickling in is always ready with its next byte.
        if !this.inner.is_end_stream() && this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(BodyDeadline(this.whole)))));
        }
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
#[path = "server_tests.rs"]
mod tests;
