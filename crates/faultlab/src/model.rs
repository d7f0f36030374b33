//! `faultlab model`: load the script and the rules, open the recording, then serve the scripted model endpoint
//! until a signal ends it.

use crate::cli::ModelArgs;
use crate::exit::Failure;
use crate::serve::{CLOSE_MARGIN, listen, origin, stop_on_signal};
use anyhow::Context as _;
use faultlab_http::guard::{self, AllowedHosts};
use faultlab_model::script::Script;
use faultlab_proxy::rules::RulesFile;
use std::net::SocketAddr;
use tokio_util::sync::CancellationToken;

pub fn run(args: ModelArgs) -> Result<(), Failure> {
    // A recording (.jsonl) replays a real model's answers; a script answers from its steps.
    let (script, replay) = match &args.script {
        Some(path) if path.extension().is_some_and(|e| e == "jsonl") => {
            let replay = faultlab_model::recorded::Replay::load(path)
                .map_err(|e| anyhow::anyhow!("--script {e}"))
                .map_err(Failure::usage)?;
            (placeholder(), Some(replay))
        }
        Some(path) => (Script::load(path).map_err(Failure::usage)?, None),
        None => (placeholder(), None),
    };
    let upstream = match &args.record_from {
        Some(url) => Some(upstream(url).map_err(Failure::usage)?),
        None => None,
    };
    let file = match &args.rules {
        Some(path) => RulesFile::load(path).map_err(Failure::usage)?,
        None => RulesFile::default(),
    };
    let rules = faultlab_model::rules(file)
        .with_context(|| format!("rules file {}", args.rules.as_deref().unwrap_or("".as_ref()).display()))
        .map_err(Failure::usage)?;
    let ip = guard::bind_address(&args.host).map_err(Failure::usage)?;
    let record = match &args.record {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("--record {}: cannot create the recording", path.display()))
                .map_err(Failure::usage)?;
            Some(Box::new(std::io::LineWriter::new(file)) as Box<dyn std::io::Write + Send>)
        }
        None => None,
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime").map_err(Failure::runtime)?;
    runtime.block_on(async {
        let (listener, bound) = listen(SocketAddr::new(ip, args.port)).await?;
        let signals = crate::signals::Signals::install();
        errln!("faultlab: model listening at {}/v1", origin(bound));
        let options = faultlab_model::Options {
            script,
            rules,
            record,
            allowed: AllowedHosts::for_bind(bound.ip()),
            limits: args.http_limits.limits(args.shutdown_grace),
            max_request_bytes: args.max_request_bytes,
            request_budget: faultlab_model::REQUEST_MEMORY_BUDGET,
            upstream,
            replay,
        };
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signal(signals, shutdown.clone(), args.shutdown_grace + CLOSE_MARGIN));
        faultlab_model::serve(listener, options, shutdown)
            .await
            .context("the model endpoint failed")
            .map_err(Failure::runtime)
    })
}

/// The script when the answers come from a real model or a recording (its steps are never used).
fn placeholder() -> Script {
    Script::parse("answer: recorded\n", false).expect("the placeholder script is valid")
}

/// The real endpoint of `--record-from`, its keys from the environment (never printed).
fn upstream(url: &str) -> anyhow::Result<faultlab_model::recorded::Upstream> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        anyhow::bail!("--record-from {url}: an http:// or https:// base URL is required");
    }
    let key = |name: &str| std::env::var(name).ok().filter(|k| !k.is_empty());
    let keys = faultlab_model::recorded::Keys {
        openai: key("OPENAI_API_KEY"),
        anthropic: key("ANTHROPIC_API_KEY"),
        gemini: key("GEMINI_API_KEY").or_else(|| key("GOOGLE_API_KEY")),
    };
    let client =
        faultlab_client::tls::client_builder().build().context("--record-from: cannot build the HTTP client")?;
    Ok(faultlab_model::recorded::Upstream { base: url.to_owned(), keys, client })
}
