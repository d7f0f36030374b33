//! The sandbox's loopback relay: how an agent sealed in a network namespace of its own reaches an HTTP MCP server.
//!
//! A private network namespace has its own port space and nothing else, so the run's HTTP proxy (outside, on the
//! machine's loopback) is out of reach. `faultlab sandbox --relay-port PORT --relay-socket PATH` binds
//! `127.0.0.1:PORT` inside the namespace, the same port number as the proxy's own listener, so every URL the proxy
//! names (its endpoint, its OAuth metadata and endpoints, all on its own origin) means the same inside; each TCP
//! connection accepted there is carried, bytes unchanged, over a new connection to the Unix socket `PATH` (a file
//! in the agent's scratch folder, which crosses namespaces), where `faultlab eval` forwards it to the proxy.
//!
//! Bounded: at most [`Limits::max_connections`] at once (one past it is closed at once, unanswered), each closed
//! when neither direction has carried a byte for [`Limits::idle`]. The relay is a process of the sandbox's PID
//! namespace: it ends with the agent's PID 1, as every other process there.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The relay's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections relayed at once (64: an MCP client holds one or two, its OAuth requests a few more).
    pub max_connections: usize,
    /// A connection on which neither direction carried a byte this long is closed (5 minutes: longer than any
    /// task's wait on a held reply is useful, and the proxy bounds its own idle connections).
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_connections: 64, idle: Duration::from_secs(300) }
    }
}

/// How often a blocked read wakes to see whether the connection as a whole went idle (1 s).
const TICK: Duration = Duration::from_secs(1);
/// Bytes read at once (16 KiB).
const CHUNK: usize = 16 * 1024;

/// Accepts on `listener` until it fails, relaying each connection to the Unix socket at `socket`. Blocks.
pub fn serve(listener: TcpListener, socket: &Path, limits: Limits) -> std::io::Error {
    let active = Arc::new(AtomicUsize::new(0));
    let socket: Arc<PathBuf> = Arc::new(socket.to_owned());
    loop {
        let (client, _) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::ConnectionAborted) => continue,
            Err(e) => return e,
        };
        // Counted before the check: two accepts in a row cannot both pass one free place.
        if active.fetch_add(1, Ordering::SeqCst) >= limits.max_connections {
            active.fetch_sub(1, Ordering::SeqCst);
            drop(client);
            continue;
        }
        let (active, socket) = (active.clone(), socket.clone());
        let spawned = std::thread::Builder::new().name("relay".into()).spawn(move || {
            let _slot = Slot(active);
            if let Ok(upstream) = UnixStream::connect(socket.as_path()) {
                relay(client, upstream, limits.idle);
            }
        });
        // A thread that could not start dropped its closure, and with it the slot and the client.
        drop(spawned);
    }
}

/// Gives a connection's place back when its relay ends, however it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Copies both ways until both are done (each side's end of stream passed on as a half-close), an error, or
/// `idle` without a byte either way.
fn relay(client: TcpStream, upstream: UnixStream, idle: Duration) {
    let started = Instant::now();
    // Milliseconds since `started` of the last byte carried, either way.
    let last = Arc::new(AtomicU64::new(0));
    let (Ok(client_in), Ok(upstream_in)) = (client.try_clone(), upstream.try_clone()) else { return };
    let (up_last, up_started) = (last.clone(), started);
    let up = std::thread::Builder::new().name("relay-up".into()).spawn(move || {
        let mut from = Side::Tcp(client_in);
        let mut to = Side::Unix(upstream_in);
        copy(&mut from, &mut to, &up_last, up_started, idle);
    });
    let mut from = Side::Unix(upstream);
    let mut to = Side::Tcp(client);
    copy(&mut from, &mut to, &last, started, idle);
    if let Ok(up) = up {
        let _ = up.join();
    }
}

enum Side {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Side {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Side::Tcp(s) => s.read(buf),
            Side::Unix(s) => s.read(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Side::Tcp(s) => s.write_all(buf),
            Side::Unix(s) => s.write_all(buf),
        }
    }
    fn set_timeouts(&self, timeout: Duration) {
        let _ = match self {
            Side::Tcp(s) => s.set_read_timeout(Some(timeout)).and(s.set_write_timeout(Some(timeout))),
            Side::Unix(s) => s.set_read_timeout(Some(timeout)).and(s.set_write_timeout(Some(timeout))),
        };
    }
    fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Side::Tcp(s) => s.shutdown(how),
            Side::Unix(s) => s.shutdown(how),
        };
    }
}

/// One direction. Its end of stream becomes a half-close of `to`; an error, or the whole connection idle, closes
/// both sides both ways (which also ends the other direction's read).
fn copy(from: &mut Side, to: &mut Side, last: &AtomicU64, started: Instant, idle: Duration) {
    from.set_timeouts(TICK.min(idle));
    to.set_timeouts(idle);
    let mut buf = vec![0u8; CHUNK];
    let now = || started.elapsed().as_millis() as u64;
    loop {
        match from.read(&mut buf) {
            Ok(0) => {
                to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                last.store(now(), Ordering::Relaxed);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                last.store(now(), Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                // The other direction may be busy (a long reply to a request this side sent): idle only when
                // neither carried a byte for `idle`.
                if now().saturating_sub(last.load(Ordering::Relaxed)) >= idle.as_millis() as u64 {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    from.shutdown(Shutdown::Both);
    to.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// A relay on a loopback port to a Unix socket in a tempdir, and the socket's listener.
    fn relay(limits: Limits) -> (u16, UnixListener, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("relay.sock");
        let unix = UnixListener::bind(&path).unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        std::thread::spawn(move || serve(tcp, &path, limits));
        (port, unix, dir)
    }

    #[test]
    fn every_byte_crosses_unchanged_both_ways_and_a_half_close_is_passed_on() {
        let (port, unix, _dir) = relay(Limits::default());
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut server, _) = unix.accept().unwrap();
        // Every byte value, and more than one read's worth.
        let sent: Vec<u8> = (0..3 * CHUNK + 7).map(|i| (i % 256) as u8).collect();
        client.write_all(&sent).unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        server.read_to_end(&mut got).unwrap();
        assert_eq!(got, sent, "client to server");
        server.write_all(b"HTTP/1.1 200 OK\r\n\r\n\x00\xff").unwrap();
        server.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        client.read_to_end(&mut back).unwrap();
        assert_eq!(back, b"HTTP/1.1 200 OK\r\n\r\n\x00\xff", "server to client");
    }

    #[test]
    fn a_connection_past_the_limit_is_closed_unanswered_and_its_place_comes_back() {
        let (port, unix, _dir) = relay(Limits { max_connections: 1, ..Limits::default() });
        let first = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (upstream, _) = unix.accept().unwrap();
        let mut second = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut byte = [0u8; 1];
        // The relay closes it: end of stream (or a reset), never a byte.
        assert!(matches!(second.read(&mut byte), Ok(0) | Err(_)));
        unix.set_nonblocking(true).unwrap();
        assert!(unix.accept().is_err(), "no upstream connection for the refused one");
        unix.set_nonblocking(false).unwrap();
        // The first ends: its place is free again (once its relay has seen the end: a refused connection reads
        // end of stream at once, an accepted one waits for the server).
        drop(first);
        drop(upstream);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut third = TcpStream::connect(("127.0.0.1", port)).unwrap();
            third.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
            match third.read(&mut byte) {
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    third.write_all(b"x").unwrap();
                    let (mut server, _) = unix.accept().unwrap();
                    server.read_exact(&mut byte).unwrap();
                    assert_eq!(&byte, b"x");
                    return;
                }
                _ => assert!(Instant::now() < deadline, "the first connection's place never came back"),
            }
        }
    }

    #[test]
    fn a_connection_idle_both_ways_is_closed_and_a_busy_one_is_not() {
        let idle = Duration::from_secs(1);
        let (port, unix, _dir) = relay(Limits { idle, ..Limits::default() });
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut server, _) = unix.accept().unwrap();
        // The server keeps talking while the client is silent for longer than `idle`: the connection stays. The
        // pauses are the traffic under test (a byte every idle/5, 1.6 s in all), not a wait for an event: the relay
        // measures idleness with OS socket timeouts on threads, which no paused clock reaches.
        for _ in 0..8 {
            server.write_all(b".").unwrap();
            let mut byte = [0u8; 1];
            client.read_exact(&mut byte).unwrap();
            std::thread::sleep(idle / 5);
        }
        // Then both are silent: the relay closes both sides.
        let mut rest = Vec::new();
        client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert!(client.read_to_end(&mut rest).is_ok(), "the client side is closed (end of stream)");
        server.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(server.read(&mut byte).unwrap(), 0, "the server side is closed too");
    }
}
