//! The accept loop's bounds, on real sockets.
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
    // A cap of 3 keeps one slot from being answered (the reserve): two may be answered at once.
    let (addr, mut entered, release) = holding_server(Limits { max_connections: 3, ..Limits::default() }).await;

    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    tokio::time::timeout(PATIENCE, entered.recv()).await.unwrap();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let mut later = TcpStream::connect(addr).await.unwrap();
    later.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    // The cap is full (one being answered, two idle): a newcomer closes the idlest, never the busy one. (From
    // another address: one address is answered on at most half the slots, here one.)
    let mut newcomer = connect_from("127.0.0.2", addr).await;
    assert_eq!(read_all(&mut idle).await, "", "the idle connection was closed without an answer");
    newcomer.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    tokio::time::timeout(PATIENCE, entered.recv()).await.unwrap();
    release.send_replace(true);
    let (first, second) = tokio::join!(read_all(&mut busy), read_all(&mut newcomer));
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
}

/// A server whose one route says it has started, then waits until `release` turns true.
async fn holding_server(limits: Limits) -> (std::net::SocketAddr, mpsc::UnboundedReceiver<()>, watch::Sender<bool>) {
    let (entered_tx, entered) = mpsc::unbounded_channel::<()>();
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
    tokio::spawn(serve(listener, app, limits, CancellationToken::new()));
    (addr, entered, release)
}

/// A connection from `source` (a loopback address).
async fn connect_from(source: &str, addr: std::net::SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    socket.connect(addr).await.unwrap()
}

/// A connection from `source` (a loopback address) that sends one request.
async fn ask(source: &str, addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = connect_from(source, addr).await;
    stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    stream
}

fn refused_with_retry_after(answer: &str) -> bool {
    answer.starts_with("HTTP/1.1 503") && answer.to_ascii_lowercase().contains("\r\nretry-after: 1\r\n")
}

#[tokio::test]
async fn with_every_slot_but_the_reserve_being_answered_a_newcomer_gets_503_with_retry_after() {
    let (addr, mut entered, release) = holding_server(Limits { max_connections: 4, ..Limits::default() }).await;
    let mut held = Vec::new();
    // From three addresses (one address may have only half of the slots answered).
    for source in ["127.0.0.1", "127.0.0.3", "127.0.0.4"] {
        held.push(ask(source, addr).await);
        tokio::time::timeout(PATIENCE, entered.recv()).await.expect("a request being answered").unwrap();
    }
    // Three of the four slots are being answered: the last is kept so that a newcomer is answered, not shut out.
    for source in ["127.0.0.2", "127.0.0.5"] {
        let answer = read_all(&mut ask(source, addr).await).await;
        assert!(refused_with_retry_after(&answer), "{answer:?}");
    }
    release.send_replace(true);
    for mut stream in held {
        assert!(read_all(&mut stream).await.starts_with("HTTP/1.1 200"));
    }
    release.send_replace(false);
    let mut fresh = ask("127.0.0.1", addr).await;
    tokio::time::timeout(PATIENCE, entered.recv()).await.expect("answered again once slots are free").unwrap();
    release.send_replace(true);
    assert!(read_all(&mut fresh).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn one_peer_address_cannot_take_every_slot() {
    // Cap 8: 7 may be answered at once, at most 3 (half, rounded down) for one source address.
    let (addr, mut entered, release) = holding_server(Limits { max_connections: 8, ..Limits::default() }).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(ask("127.0.0.1", addr).await);
        tokio::time::timeout(PATIENCE, entered.recv()).await.expect("a request being answered").unwrap();
    }
    let answer = read_all(&mut ask("127.0.0.1", addr).await).await;
    assert!(refused_with_retry_after(&answer), "the hogging address is refused: {answer:?}");
    held.push(ask("127.0.0.2", addr).await);
    tokio::time::timeout(PATIENCE, entered.recv()).await.expect("another address is still answered").unwrap();
    release.send_replace(true);
    for mut stream in held {
        assert!(read_all(&mut stream).await.starts_with("HTTP/1.1 200"));
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_trickled_a_byte_every_3_s_is_cut_at_the_whole_body_deadline() {
    let app = axum::Router::new().fallback(|request: axum::extract::Request| async move {
        let (parts, body) = request.into_parts();
        match crate::read_body(&parts.headers, body, 1 << 20).await {
            Ok(bytes) => axum::response::IntoResponse::into_response(format!("read {}", bytes.len())),
            Err(refused) => refused,
        }
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The default bounds: 10 s without a byte fails a body, and so does its whole-body deadline.
    tokio::spawn(serve(listener, app, Limits::default(), CancellationToken::new()));
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    writer.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n").await.unwrap();
    let started = Instant::now();
    let trickle = tokio::spawn(async move {
        // One byte every 3 s: never idle for the 10 s the idle timeout waits.
        for _ in 0..10_000 {
            tokio::time::sleep(Duration::from_secs(3)).await;
            if writer.write_all(b"x").await.is_err() {
                return;
            }
        }
    });
    let mut answer = Vec::new();
    let _ = reader.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("30s"), "the message names the deadline: {answer}");
    let cut_after = started.elapsed();
    assert!(cut_after <= Duration::from_secs(33), "cut at the 30 s deadline, not later: {cut_after:?}");
    trickle.abort();
}
