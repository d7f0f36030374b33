//! `faultlab proxy`: load the rules, then relay stdio to a child upstream, or Streamable HTTP to an HTTP upstream.

use crate::cli::ProxyArgs;
use crate::exit::Failure;
use crate::pipes;
use crate::signals::Signals;
use anyhow::{Context as _, anyhow};
use faultlab_engine::Recorder;
use faultlab_engine::recording::Recording;
use faultlab_engine::rules::AuthRule;
use faultlab_engine::trajectory::Trajectory;
use faultlab_http::guard::{self, AllowedHosts};
use faultlab_proxy::control::ControlOptions;
use faultlab_proxy::front::http::{self as front, Backend, HttpProxyOptions};
use faultlab_proxy::front::stdio;
use faultlab_proxy::recording::{self, Over, Replay};
use faultlab_proxy::relay::{ProxyEnd, ProxyError, ProxyOptions};
use faultlab_proxy::remote::{Remote, RemoteOptions};
use faultlab_proxy::rules::{RuleSet, RulesFile, SharedRules};
use faultlab_proxy::trajectory::TrajectoryWriter;
use faultlab_proxy::upstream::bridged::{Bridged, MakeCommand, SessionBounds};
use faultlab_proxy::upstream::{child::Child, http::Endpoint};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

mod unix;

pub fn run(mut args: ProxyArgs) -> Result<(), Failure> {
    if let Some(program) = args.upstream_command.take() {
        // The same upstream as `-- PROGRAM ARGS`, spelt for hosts that swallow `--`.
        args.command = std::iter::once(program).chain(std::mem::take(&mut args.upstream_arg)).collect();
    }
    let mut file = match &args.rules {
        Some(path) => RulesFile::load(path).map_err(Failure::usage)?,
        None => RulesFile::default(),
    };
    for (i, spec) in args.faults.iter().enumerate() {
        file.rules.push(RulesFile::parse_spec(spec, i + 1).map_err(Failure::usage)?);
    }
    if args.seed.is_some() {
        file.seed = args.seed;
    }
    if args.auth.auth && args.listen.is_none() {
        return Err(Failure::usage(anyhow!("--auth requires --listen (the HTTP front is the protected resource)")));
    }
    let auth_rule = auth_of_rules(&mut file, &args)?;
    if args.listen.is_some() && args.max_frame_bytes.is_some() {
        return Err(Failure::usage(anyhow!("--max-frame-bytes applies to the stdio fronts only (without --listen)")));
    }
    // Only the stdio front with a child upstream can restart its upstream (`server_outage` with `restart`).
    let restarts = args.listen.is_none() && args.upstream.is_none() && !args.command.is_empty();
    // Read before anything starts: a recording that cannot serve is bad input.
    let recording = match &args.replay {
        Some(path) => Some(read_recording(path).map_err(Failure::usage)?),
        None => None,
    };
    let rules = RuleSet::for_front(file, restarts).map_err(Failure::usage)?.shared();
    // Before the trajectory file is created: a wrong header or CA file is a usage error with nothing written.
    let remote = args.upstream.as_deref().map(|url| remote(&args, url)).transpose()?;
    let recorder = match &args.record {
        Some(path) => Recorder::file(path)
            .with_context(|| format!("cannot open the trajectory file {}", path.display()))
            .map_err(Failure::usage)?,
        None => Recorder::stderr(),
    };
    let run_recorder = recorder.clone();
    let mut trajectory = TrajectoryWriter::new(recorder);
    if let Some(remote) = &remote {
        trajectory = trajectory.redacting(remote.secrets().scrub());
    }
    let trajectory = Arc::new(if args.record_bodies { trajectory.with_bodies() } else { trajectory });
    let control = match &args.control {
        Some(addr) => Some(listen_address("--control", addr).map_err(Failure::usage)?),
        None => None,
    };
    let token = crate::control_token::resolve(&args, |name| std::env::var(name).ok()).map_err(Failure::usage)?;
    // A stdio front is one stream of messages: one thread serves it best (see `pipes::runtime`).
    let unix = args.listen_unix.is_some() || args.listen_fd.is_some();
    let runtime = if args.listen.is_none() && !unix {
        pipes::runtime()
    } else {
        tokio::runtime::Runtime::new().context("cannot start the async runtime")
    }
    .map_err(Failure::runtime)?;
    if let Some(addr) = control {
        let rules = rules.clone();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} for the control API; choose another --control"))
                .map_err(Failure::runtime)?;
            let bound = listener.local_addr().map_err(|e| Failure::runtime(anyhow::Error::from(e)))?;
            errln!("faultlab: control API at http://{bound}/rules");
            let allowed = AllowedHosts::for_bind(bound.ip());
            let options = ControlOptions { token: token.clone(), limits: args.http_limits.limits(args.shutdown_grace) };
            tokio::spawn(faultlab_proxy::control::serve(listener, rules, allowed, options, CancellationToken::new()));
            Ok::<_, Failure>(())
        })?;
    }
    if unix {
        let scrub = remote.as_ref().map(|remote| remote.secrets().scrub());
        let record = faultlab_proxy::front::unix::Record { recorder: run_recorder, bodies: args.record_bodies, scrub };
        return unix::serve(runtime, &args, rules, record, recording, remote);
    }
    if let Some(recording) = recording {
        let options = ProxyOptions { shutdown_grace: args.shutdown_grace, max_frame_bytes: max_frame_bytes(&args) };
        match (&args.listen, args.command.split_first()) {
            (None, None) => {
                return until_signal(runtime, |stop| {
                    stdio::run(options, Replay(recording), rules, trajectory, pipes::stdin(), pipes::stdout(), stop)
                });
            }
            (None, Some((program, rest))) => {
                let mut command = tokio::process::Command::new(program);
                command.args(rest);
                let over = Over { recording, live: Child(command), log: replay_log(&args)? };
                return until_signal(runtime, |stop| {
                    stdio::run(options, over, rules, trajectory, pipes::stdin(), pipes::stdout(), stop)
                });
            }
            (Some(_), Some(_)) => {
                return Err(Failure::usage(anyhow!(
                    "--replay over a server (-- CMD) needs the stdio front: drop --listen, or drop the command"
                )));
            }
            (Some(listen), None) => {
                let addr = listen_address("--listen", listen).map_err(Failure::usage)?;
                let upstream = Backend::Recording(recording::Replayer::new(recording));
                return runtime.block_on(serve_http(
                    addr,
                    "/mcp".into(),
                    upstream,
                    rules,
                    trajectory,
                    &args,
                    auth_rule,
                ));
            }
        }
    }
    match (&args.listen, remote, args.command.split_first()) {
        (None, None, Some((program, rest))) => {
            let mut command = tokio::process::Command::new(program);
            command.args(rest);
            let options = ProxyOptions { shutdown_grace: args.shutdown_grace, max_frame_bytes: max_frame_bytes(&args) };
            until_signal(runtime, |stop| {
                stdio::run(options, Child(command), rules, trajectory, pipes::stdin(), pipes::stdout(), stop)
            })
        }
        (None, Some(remote), None) => {
            let options = ProxyOptions { shutdown_grace: args.shutdown_grace, max_frame_bytes: max_frame_bytes(&args) };
            until_signal(runtime, |stop| {
                stdio::run(options, Endpoint(remote), rules, trajectory, pipes::stdin(), pipes::stdout(), stop)
            })
        }
        (Some(listen), Some(remote), None) => {
            let addr = listen_address("--listen", listen).map_err(Failure::usage)?;
            let path = remote.url().path().to_owned();
            let upstream = Backend::remote(remote).map_err(Failure::runtime)?;
            runtime.block_on(serve_http(addr, path, upstream, rules, trajectory, &args, auth_rule))
        }
        (Some(listen), None, Some((program, rest))) => {
            let addr = listen_address("--listen", listen).map_err(Failure::usage)?;
            let (program, rest) = (program.clone(), rest.to_vec());
            let make: MakeCommand = Box::new(move || {
                let mut command = tokio::process::Command::new(&program);
                command.args(&rest);
                command
            });
            runtime.block_on(async {
                let (grace, bounds) = (args.shutdown_grace, SessionBounds::default());
                let bridged = Bridged::spawn(make, trajectory.clone(), args.request_timeout, grace, bounds)
                    .with_context(|| format!("cannot start the upstream server {:?}", args.command[0]))
                    .map_err(Failure::runtime)?;
                let upstream = Backend::Child(bridged.clone());
                let served = serve_http(addr, "/mcp".into(), upstream, rules, trajectory, &args, auth_rule).await;
                // The front has stopped: every child (each session's, the shared one) is stopped in order, not
                // killed with the runtime.
                bridged.stop().await;
                served
            })
        }
        _ => Err(Failure::usage(anyhow!(
            "name the upstream: -- CMD ARGS or --upstream-command CMD --upstream-arg ARG… (stdio), --upstream URL \
             (HTTP) or --replay TRAJECTORY (a recording)"
        ))),
    }
}

/// The file `--replay-log` names, opened for appending.
fn replay_log(args: &ProxyArgs) -> Result<Option<std::fs::File>, Failure> {
    let Some(path) = &args.replay_log else { return Ok(None) };
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
    let file = file.with_context(|| format!("cannot open the --replay-log file {}", path.display()));
    file.map(Some).map_err(Failure::usage)
}

/// Reads a recording (a trajectory recorded with `--record-bodies`) to answer from (`--replay`). A trajectory without a single reply body is refused: it cannot answer anything.
pub fn read_recording(path: &Path) -> anyhow::Result<Recording> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read the recording {}", path.display()))?;
    let trajectory = Trajectory::read(std::io::BufReader::new(file)).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let recording = Recording::from_trajectory(&trajectory);
    if recording.is_empty() {
        return Err(anyhow!(
            "{} holds no reply bodies: record with `faultlab proxy --record FILE --record-bodies` (faultlab eval always does)",
            path.display()
        ));
    }
    Ok(recording)
}

fn max_frame_bytes(args: &ProxyArgs) -> usize {
    args.max_frame_bytes.map_or(faultlab_wire::MAX_LINE_BYTES, |b| usize::try_from(b).unwrap_or(usize::MAX))
}

/// Runs a stdio-front proxy until it ends or a signal asks it to stop (then it shuts the upstream down in order).
fn until_signal<F, Fut>(runtime: tokio::runtime::Runtime, run: F) -> Result<(), Failure>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: std::future::Future<Output = Result<ProxyEnd, ProxyError>>,
{
    let stop = CancellationToken::new();
    let served = runtime.block_on(async {
        cancel_on_signal(stop.clone());
        let ended = run(stop).await.map_err(|e| match e {
            // The only I/O error the relay returns is the writer's: the client closed its end of stdout.
            ProxyError::Io(e) => Failure::runtime(anyhow!("cannot write to the client on stdout: {e}")),
            other => Failure::runtime(other),
        })?;
        match ended {
            ProxyEnd::UpstreamExited { status } => {
                Err(Failure::runtime(anyhow!("the upstream exited on its own ({status}); see the trajectory")))
            }
            ProxyEnd::Finished | ProxyEnd::Disconnected => Ok(()),
        }
    });
    // A blocking stdin read may still be pending; the process is about to exit, so do not wait for it.
    std::mem::forget(runtime);
    served
}

fn listen_address(flag: &str, listen: &str) -> anyhow::Result<SocketAddr> {
    let (host, port) =
        listen.rsplit_once(':').ok_or_else(|| anyhow!("{flag} {listen:?} must be HOST:PORT, e.g. 127.0.0.1:0"))?;
    let port: u16 = port.parse().map_err(|_| anyhow!("{flag} {listen:?}: the port must be 0 to 65535"))?;
    let ip = guard::bind_address(host).map_err(|e| anyhow!("{flag} {listen}: {e}"))?;
    Ok(SocketAddr::new(ip, port))
}

/// `--upstream` with its CA and headers, the header values taken from the environment (exit code 2 when any of
/// it is wrong).
fn remote(args: &ProxyArgs, url: &str) -> Result<Remote, Failure> {
    let options = RemoteOptions {
        ca: args.upstream_ca.clone(),
        headers: args.upstream_header.clone(),
        header_env: args.upstream_header_env.clone(),
    };
    options.resolve(url, |name| std::env::var(name).ok()).map_err(|e| Failure::usage(anyhow::Error::from(e)))
}

/// The rules file's `auth` (taken out of it: it is not a rule), which only the HTTP front's `--auth` plays, and
/// instead of `--auth-fault`: either mistake is a usage error naming the file and the key.
fn auth_of_rules(file: &mut RulesFile, args: &ProxyArgs) -> Result<Option<AuthRule>, Failure> {
    let Some(rule) = file.auth.take() else { return Ok(None) };
    let path = args.rules.as_deref().map_or_else(|| "the rules file".into(), |p| p.display().to_string());
    if !args.auth.auth {
        return Err(Failure::usage(anyhow!(
            "rules file {path}: `auth` ({}) is played by the proxy's authorization server: add --listen ADDR --auth",
            rule.fault.name()
        )));
    }
    if args.auth.auth_fault.is_some() {
        return Err(Failure::usage(anyhow!(
            "rules file {path} has `auth` and --auth-fault is given too: a run has one auth fault; keep one of them"
        )));
    }
    Ok(Some(rule))
}

async fn serve_http(
    addr: SocketAddr,
    path: String,
    upstream: Backend,
    rules: SharedRules,
    trajectory: Arc<TrajectoryWriter>,
    args: &ProxyArgs,
    auth_rule: Option<AuthRule>,
) -> Result<(), Failure> {
    let auth = crate::auth::config(&args.auth, auth_rule)?.map(|mut config| {
        config.refusals = Some(crate::auth::record_refusals(trajectory.clone()));
        config
    });
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}; is the port in use? choose another in --listen"))
        .map_err(Failure::runtime)?;
    let bound = listener.local_addr().map_err(|e| Failure::runtime(anyhow::Error::from(e)))?;
    let target = match &upstream {
        Backend::Url { target, .. } => target.describe(),
        Backend::Child(_) => "the stdio upstream".into(),
        Backend::Recording(_) => "the recording".into(),
    };
    let signals = Signals::install();
    errln!("faultlab: proxy listening at http://{bound}{path} for {target}");
    let wrap = match auth {
        Some(config) => {
            Some(crate::auth::wrap(config, &format!("http://{bound}"), &path, AllowedHosts::for_bind(bound.ip()))?)
        }
        None => None,
    };
    let options = HttpProxyOptions {
        allowed_hosts: AllowedHosts::for_bind(bound.ip()),
        path,
        limits: args.http_limits.limits(args.shutdown_grace),
        wrap,
    };
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let child = match &upstream {
        Backend::Child(bridge) => Some(bridge.clone()),
        _ => None,
    };
    let upstream_ended = async move {
        match child {
            Some(bridge) => bridge.ended().await,
            None => std::future::pending().await,
        }
    };
    // A stdio child that exits leaves nothing to forward to: the front stops, and the proxy exits 1 as the stdio
    // front does.
    let died = tokio::spawn(async move {
        tokio::select! {
            signal = signals.recv() => {
                errln!("faultlab: received {signal}; shutting down");
                stop.cancel();
                false
            }
            () = upstream_ended => {
                stop.cancel();
                true
            }
        }
    });
    front::serve(listener, options, upstream, rules, trajectory, shutdown.clone())
        .await
        .context("the HTTP proxy failed")
        .map_err(Failure::runtime)?;
    if shutdown.is_cancelled() && died.await.unwrap_or(false) {
        return Err(Failure::runtime(anyhow!("the upstream exited on its own; every request after it would fail")));
    }
    Ok(())
}

/// Cancels `stop` at the first SIGINT or SIGTERM, saying so on stderr (the proxy then ends in order).
fn cancel_on_signal(stop: CancellationToken) {
    let signals = Signals::install();
    tokio::spawn(async move {
        let signal = signals.recv().await;
        errln!("faultlab: received {signal}; shutting down");
        stop.cancel();
    });
}
