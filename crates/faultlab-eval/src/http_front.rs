//! A task served over HTTP (`server: {transport: http}`): the run's proxy is a Streamable HTTP endpoint on the
//! machine's loopback (`faultlab proxy --listen 127.0.0.1:0`, with `--auth` when the task asks for it), and the
//! agent's `mcpServers` entry is its URL.
//!
//! A sealed agent has a network namespace of its own, where that port is nobody's: `faultlab sandbox` listens on
//! the same port number there ([`faultlab_proc::relay`]) and carries each connection over the run's Unix socket
//! (a file in the agent's scratch folder) to here, where [`relay`] forwards it, bytes unchanged, to the proxy. The
//! proxy's URLs (its endpoint, its OAuth metadata and endpoints, all on its own origin) mean the same on both
//! sides. With `--network host` the agent reaches the proxy directly and the socket is unused.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncBufReadExt as _;
use tokio::io::AsyncReadExt as _;
use tokio::io::AsyncWriteExt as _;

/// How long the proxy may take to listen (it starts the task's server first): 30 s, for a loaded machine.
const LISTEN_LIMIT: Duration = Duration::from_secs(30);
/// Connections forwarded at once (64, as the sandbox's relay: an MCP client and its OAuth requests need a few).
const MAX_CONNECTIONS: usize = 64;
/// The longest proxy log line read at once (64 KiB); a longer one is cut.
const LINE_LIMIT: usize = 64 * 1024;

/// The proxy's line saying where it listens: `faultlab: proxy listening at http://127.0.0.1:PORT/mcp for …`.
const LISTENING: &str = "proxy listening at ";

/// The proxy's endpoint, read from the line it writes on stderr once it listens.
pub fn endpoint(line: &str) -> Option<(String, std::net::SocketAddr)> {
    let rest = &line[line.find(LISTENING)? + LISTENING.len()..];
    let url = rest.split_whitespace().next()?;
    let authority = url.strip_prefix("http://")?;
    let host_port = authority.split('/').next()?;
    let addr: std::net::SocketAddr = host_port.parse().ok()?;
    addr.ip().is_loopback().then(|| (url.to_owned(), addr))
}

/// Reads the proxy's stderr into `log` line by line; returns its endpoint once the proxy says where it listens,
/// then goes on copying in the background (notifying `connected` at the first auth event: an agent that reaches
/// the proxy directly, with the host network, has connected then). `None` when the proxy ended or took more than
/// [`LISTEN_LIMIT`] to listen.
pub async fn follow_log(
    stderr: tokio::process::ChildStderr,
    log: std::fs::File,
    connected: Arc<tokio::sync::Notify>,
) -> (Option<(String, std::net::SocketAddr)>, tokio::task::JoinHandle<()>) {
    let (found_tx, found_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut log = tokio::fs::File::from_std(log);
        let mut reader = tokio::io::BufReader::new(stderr);
        let mut found = Some(found_tx);
        let mut seen_auth = false;
        let mut line = Vec::new();
        loop {
            line.clear();
            match (&mut reader).take(LINE_LIMIT as u64).read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let _ = log.write_all(&line).await;
            if !line.ends_with(b"\n") {
                let _ = log.write_all(b"\n").await;
            }
            let text = String::from_utf8_lossy(&line);
            if let Some(endpoint) = endpoint(&text)
                && let Some(tx) = found.take()
            {
                let _ = tx.send(endpoint);
            }
            if !seen_auth && text.starts_with('{') && text.contains("\"auth\"") {
                seen_auth = true;
                connected.notify_one();
            }
        }
        let _ = log.flush().await;
    });
    let found = tokio::time::timeout(LISTEN_LIMIT, found_rx).await.ok().and_then(Result::ok);
    (found, task)
}

/// Forwards every connection to `listener` (the run's Unix socket) to the proxy at `proxy`, bytes unchanged, at
/// most [`MAX_CONNECTIONS`] at once (one past it is closed unanswered); notifies `connected` at each. Runs until
/// aborted; aborting it ends every connection it forwards.
pub fn relay(
    listener: tokio::net::UnixListener,
    proxy: std::net::SocketAddr,
    connected: Arc<tokio::sync::Notify>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let places = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((mut agent, _)) = accepted else { continue };
                    let Ok(place) = places.clone().try_acquire_owned() else { continue };
                    connected.notify_one();
                    connections.spawn(async move {
                        let _place = place;
                        if let Ok(mut upstream) = tokio::net::TcpStream::connect(proxy).await {
                            let _ = tokio::io::copy_bidirectional(&mut agent, &mut upstream).await;
                        }
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    })
}

/// The proxy's arguments for a task over HTTP, before the upstream: loopback, a port of the kernel's choice, and
/// the task's authorization.
pub fn proxy_front(task: &crate::task::Task) -> Vec<String> {
    let mut args: Vec<String> = vec!["proxy".into(), "--listen".into(), "127.0.0.1:0".into()];
    if task.server.requires_auth() {
        args.push("--auth".into());
        if let Some(fault) = task.server.auth.as_ref().and_then(crate::task::AuthSetting::fault) {
            args.extend(["--auth-fault".into(), fault]);
        }
    }
    args
}

/// The largest proxy log read for its auth events (16 MiB: some 100 000 events).
const AUTH_LOG_LIMIT: u64 = 16 * 1024 * 1024;

/// How many of each auth event (`{"auth": NAME, …}` lines) the proxy's log at `path` holds, read up to
/// [`AUTH_LOG_LIMIT`].
pub fn auth_events(path: &Path) -> std::collections::BTreeMap<String, u32> {
    let mut counts = std::collections::BTreeMap::new();
    let Ok(file) = crate::guard::open_regular(path) else { return counts };
    let mut bytes = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, AUTH_LOG_LIMIT), &mut bytes);
    for line in String::from_utf8_lossy(&bytes).lines().filter(|l| l.starts_with('{')) {
        let event = serde_json::from_str::<serde_json::Value>(line).ok();
        if let Some(name) = event.as_ref().and_then(|e| e.get("auth")).and_then(serde_json::Value::as_str) {
            *counts.entry(name.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

/// Binds the run's Unix socket for the relay.
pub fn bind(socket: &Path) -> std::io::Result<tokio::net::UnixListener> {
    tokio::net::UnixListener::bind(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_read_from_the_proxys_line_and_only_on_loopback() {
        let line = "faultlab: proxy listening at http://127.0.0.1:40123/mcp for the stdio upstream\n";
        let (url, addr) = endpoint(line).unwrap();
        assert_eq!(url, "http://127.0.0.1:40123/mcp");
        assert_eq!(addr.port(), 40123);
        assert!(endpoint("faultlab: proxy listening at http://10.0.0.1:80/mcp for x").is_none());
        assert!(endpoint("{\"auth\": \"token_missing\"}").is_none());
    }

    #[test]
    fn auth_events_are_counted_from_the_proxys_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("proxy.log");
        let text = "faultlab: proxy listening at http://127.0.0.1:1/mcp for x\n\
                    {\"method\":\"POST\",\"auth\":\"token_missing\"}\n\
                    {\"reason\":\"revoked\",\"auth\":\"token_refused\"}\n\
                    {\"reason\":\"revoked\",\"auth\":\"token_refused\"}\n{not json\n";
        std::fs::write(&log, text).unwrap();
        let counts = auth_events(&log);
        assert_eq!(counts.get("token_refused"), Some(&2));
        assert_eq!(counts.get("token_missing"), Some(&1));
        assert_eq!(counts.len(), 2);
        assert!(auth_events(&dir.path().join("absent.log")).is_empty());
    }

    #[tokio::test]
    async fn the_relay_carries_bytes_unchanged_and_notifies_each_connection() {
        use tokio::io::AsyncReadExt as _;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("run.sock");
        let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let connected = Arc::new(tokio::sync::Notify::new());
        let task = relay(bind(&socket).unwrap(), proxy.local_addr().unwrap(), connected.clone());
        let mut agent = tokio::net::UnixStream::connect(&socket).await.unwrap();
        let (mut upstream, _) = proxy.accept().await.unwrap();
        connected.notified().await;
        let bytes: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
        agent.write_all(&bytes).await.unwrap();
        agent.shutdown().await.unwrap();
        let mut got = Vec::new();
        upstream.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, bytes);
        upstream.write_all(b"\x00reply\xff").await.unwrap();
        drop(upstream);
        let mut back = Vec::new();
        agent.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"\x00reply\xff");
        task.abort();
    }
}
