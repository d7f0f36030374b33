//! `--auth` on `serve --transport http` and on the HTTP proxy: the options checked before anything listens, then
//! the authorization put in front of the front's router once the listener's address is known.

use crate::Failure;
use crate::cli::AuthArgs;
use faultlab_auth::{Auth, AuthConfig, AuthFault, RefusalHook, Refused};
use faultlab_engine::recorder::Refusal;
use faultlab_engine::rules::AuthRule;
use faultlab_http::Wrap;
use faultlab_http::guard::AllowedHosts;
use faultlab_proxy::trajectory::TrajectoryWriter;
use faultlab_wire::Frame;
use std::sync::Arc;

/// The auth set-up `args` ask for (`None` without `--auth`), with the fault of a rules file's `auth` (the proxy
/// checked it is not given with `--auth-fault` too); a bad `--auth-fault` is a usage error (exit 2).
pub fn config(args: &AuthArgs, rule: Option<AuthRule>) -> Result<Option<AuthConfig>, Failure> {
    if !args.auth {
        return Ok(None);
    }
    let (fault, matcher) = match rule {
        Some(AuthRule { fault, matcher }) => (Some(fault), matcher),
        None => (args.auth_fault.as_deref().map(AuthFault::parse).transpose().map_err(Failure::usage)?, None),
    };
    let events: faultlab_auth::EventSink = Arc::new(|event| errln!("{event}"));
    Ok(Some(AuthConfig {
        token_ttl: args.auth_token_ttl.unwrap_or(faultlab_auth::TOKEN_TTL),
        fault,
        matcher,
        events: Some(events),
        // The HTTP proxy connects its trajectory (`record_refusals`); `serve` records none.
        refusals: None,
    }))
}

/// The wrap for a listener at `origin` (`http://127.0.0.1:PORT`) serving MCP at `path`, and a line saying where
/// its metadata is.
pub fn wrap(config: AuthConfig, origin: &str, path: &str, allowed: AllowedHosts) -> Result<Wrap, Failure> {
    let matched = if config.matcher.is_some() { " at the requests the rules file's auth.match names" } else { "" };
    let fault = config.fault.as_ref().map(|f| format!(", auth fault {}{matched}", f.name())).unwrap_or_default();
    let auth = Auth::new(config, origin, path, allowed).map_err(Failure::usage)?;
    errln!("faultlab: OAuth required; protected resource metadata at {}{fault}", auth.resource_metadata_url());
    Ok(Wrap(Arc::new(move |app| auth.clone().wrap(app))))
}

/// Each request the authorization refuses, recorded in the HTTP proxy's trajectory as a `refused` call (its
/// JSON-RPC method, id and tool from the body; a body that is not JSON-RPC as what it is): the grader and the
/// trace clinic see it as a failed call.
pub fn record_refusals(trajectory: Arc<TrajectoryWriter>) -> RefusalHook {
    Arc::new(move |refused: Refused<'_>| {
        let (frame, unread) = match refused.body {
            Ok(bytes) => (Frame::parse(bytes.to_vec()), None),
            Err(why) => (Frame::parse(Vec::new()), Some(why.to_owned())),
        };
        let refusal = Refusal {
            status: refused.status,
            error: refused.error.map(str::to_owned),
            fault: refused.fault.map(str::to_owned),
            http_method: refused.method.to_owned(),
            unread,
        };
        trajectory.refused(&frame, refusal);
    })
}
