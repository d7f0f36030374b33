//! `faultlab serve`: validate the options, then run the stdio or HTTP server until the client or a signal ends it.

use crate::cli::{ServeArgs, Transport};
use crate::exit::Failure;
use crate::signals::Signals;
use anyhow::Context as _;
use faultlab_engine::{Engine, Recorder};
use faultlab_proxy::front::stdio::serve_in_process;
use faultlab_proxy::upstream::in_process::InProcess;
use faultlab_server::http::guard::{self, AllowedHosts};
use faultlab_server::http::{self as front, HttpOptions};
use faultlab_server::probe::{ProbeConfig, ProbeServer};
use faultlab_server::{FaultServer, Scope, TransportKind, stdio};
use faultlab_wire::MAX_LINE_BYTES;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const DEFAULT_HOST: &str = "127.0.0.1";
pub const DEFAULT_PORT: u16 = 3000;
pub const DEFAULT_PATH: &str = "/mcp";
/// After the grace, how long closing sessions may take before the process exits anyway (1 s).
pub(crate) const CLOSE_MARGIN: Duration = Duration::from_secs(1);

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let probe = ProbeConfig::from_vars(|name| std::env::var(name).ok()).map_err(Failure::usage)?;
    match args.transport {
        Transport::Stdio => {
            if args.auth.auth {
                return Err(Failure::usage(anyhow::anyhow!("--auth requires --transport http")));
            }
            if args.host.is_some() || args.port.is_some() || args.path.is_some() || args.session_idle_timeout.is_some()
            {
                return Err(Failure::usage(anyhow::anyhow!(
                    "--host, --port, --path and --session-idle-timeout require --transport http"
                )));
            }
            let runtime = crate::pipes::runtime().map_err(Failure::runtime)?;
            let max = args.max_frame_bytes.map_or(MAX_LINE_BYTES, |b| usize::try_from(b).unwrap_or(usize::MAX));
            let served = runtime.block_on(serve_stdio(probe, max));
            // Reading stdin blocks a runtime thread that nothing can interrupt; dropping the runtime would wait for
            // it (until the client closes stdin). The process is about to exit, so leave it be.
            std::mem::forget(runtime);
            served.map_err(Failure::runtime)
        }
        Transport::Http => {
            if args.max_frame_bytes.is_some() {
                return Err(Failure::usage(anyhow::anyhow!("--max-frame-bytes applies to --transport stdio only")));
            }
            let ip = guard::bind_address(args.host.as_deref().unwrap_or(DEFAULT_HOST))
                .map_err(|e| Failure::usage(anyhow::anyhow!("--host {e}")))?;
            let path = guard::endpoint_path(args.path.as_deref().unwrap_or(DEFAULT_PATH)).map_err(Failure::usage)?;
            let addr = SocketAddr::new(ip, args.port.unwrap_or(DEFAULT_PORT));
            runtime()?.block_on(serve_http(addr, path, probe, &args))
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)
}

async fn serve_stdio(probe: Option<ProbeConfig>, max_frame_bytes: usize) -> anyhow::Result<()> {
    let scope = Scope {
        engine: Arc::new(
            Engine::new(Recorder::stderr().scoped("stdio")).listing_task_support(faultlab_server::tools::task_support),
        ),
        transport: TransportKind::Stdio,
        session: None,
    };
    let engine = scope.engine.clone();
    match probe {
        Some(config) => serve_on_stdio(ProbeServer::new(config, Some(scope)), engine, max_frame_bytes).await,
        None => serve_on_stdio(FaultServer::stdio(scope), engine, max_frame_bytes).await,
    }
}

/// Serves `service` to the client on stdin/stdout: the lab's stdio front, with no rules, in front of the server in
/// process; the faults are those its tools arm on `engine`.
pub async fn serve_on_stdio<S: faultlab_server::ServerHandler>(
    service: S,
    engine: Arc<Engine>,
    max_frame_bytes: usize,
) -> anyhow::Result<()> {
    let recorder = engine.recorder().clone();
    let server = InProcess::spawn(move |pipe| stdio::serve_lines(service, pipe, recorder, max_frame_bytes));
    let (stdin, stdout) = (crate::pipes::stdin(), crate::pipes::stdout());
    let served = serve_in_process(engine, server, stdin, stdout, max_frame_bytes).await;
    // The only I/O error the relay returns is its writer's: the client closed its end of stdout.
    served.context("cannot write to the client on stdout")?;
    Ok(())
}

async fn serve_http(
    addr: SocketAddr,
    path: String,
    probe: Option<ProbeConfig>,
    args: &ServeArgs,
) -> Result<(), Failure> {
    let auth = crate::auth::config(&args.auth, None)?;
    let (listener, bound) = listen(addr).await?;
    let signals = Signals::install();
    errln!("faultlab: listening at {}{path}", origin(bound));
    let wrap = match auth {
        Some(config) => Some(crate::auth::wrap(config, &origin(bound), &path, AllowedHosts::for_bind(bound.ip()))?),
        None => None,
    };
    let mut options = HttpOptions::new(path, AllowedHosts::for_bind(bound.ip()));
    options.wrap = wrap;
    options.limits = args.http_limits.limits(args.shutdown_grace);
    if let Some(idle) = args.session_idle_timeout {
        options.session_idle = idle;
    }
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(signals, shutdown.clone(), args.shutdown_grace + CLOSE_MARGIN));
    let recorder = Recorder::stderr();
    let served = match probe {
        Some(config) => {
            let probe = ProbeServer::new(config, None);
            front::serve(listener, options, move |_| probe.sibling(), recorder, shutdown.clone()).await
        }
        None => front::serve(listener, options, FaultServer::http, recorder, shutdown.clone()).await,
    };
    served.context("the HTTP server failed").map_err(Failure::runtime)
}

/// A listener on `addr` (`--port 0`: a free port) and the address it got.
pub(crate) async fn listen(addr: SocketAddr) -> Result<(tokio::net::TcpListener, SocketAddr), Failure> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}; is the port in use? choose another with --port"))
        .map_err(Failure::runtime)?;
    let bound = listener.local_addr().map_err(|e| Failure::runtime(anyhow::Error::from(e)))?;
    Ok((listener, bound))
}

/// `http://host:port` for a bound address (an IPv6 host in brackets).
pub(crate) fn origin(bound: SocketAddr) -> String {
    match bound.ip() {
        IpAddr::V4(v4) => format!("http://{v4}:{}", bound.port()),
        IpAddr::V6(v6) => format!("http://[{v6}]:{}", bound.port()),
    }
}

/// Cancels `shutdown` on SIGINT or SIGTERM (the server then drains for its grace and closes what is left); exits
/// the process if it has still not stopped after `backstop`.
pub(crate) async fn stop_on_signal(signals: Signals, shutdown: CancellationToken, backstop: Duration) {
    let signal = signals.recv().await;
    errln!("faultlab: received {signal}; shutting down");
    shutdown.cancel();
    tokio::time::sleep(backstop).await;
    errln!("faultlab: still closing after {:.1} s; exiting", backstop.as_secs_f64());
    std::process::exit(0);
}
