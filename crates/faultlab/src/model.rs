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
    let script = Script::load(&args.script).map_err(Failure::usage)?;
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
        };
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signal(signals, shutdown.clone(), args.shutdown_grace + CLOSE_MARGIN));
        faultlab_model::serve(listener, options, shutdown)
            .await
            .context("the model endpoint failed")
            .map_err(Failure::runtime)
    })
}
