//! The built-in target: the faulty server itself, in this process, on a loopback port of its own.

use faultlab_auth::{Auth, AuthConfig};
use faultlab_engine::Recorder;
use faultlab_http::Wrap;
use faultlab_server::FaultServer;
use faultlab_server::http::guard::AllowedHosts;
use faultlab_server::http::{self, HttpOptions};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A running in-process server; it stops when this is dropped.
pub struct Builtin {
    pub url: String,
    shutdown: CancellationToken,
}

impl Builtin {
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(None).await
    }

    /// With `auth`, the server is behind the lab's authorization server (as `serve --transport http --auth`).
    pub async fn start_with(auth: Option<AuthConfig>) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let allowed = AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let mut options = HttpOptions::new("/mcp".into(), allowed.clone());
        if let Some(config) = auth {
            let auth = Auth::new(config, &format!("http://{addr}"), "/mcp", allowed).map_err(std::io::Error::other)?;
            options.wrap = Some(Wrap(Arc::new(move |app| auth.clone().wrap(app))));
        }
        let shutdown = CancellationToken::new();
        // Diagnostics of the built-in server are not the run's output; the run reports what the client saw.
        tokio::spawn(http::serve(listener, options, FaultServer::http, Recorder::discard(), shutdown.clone()));
        Ok(Self { url: format!("http://{addr}/mcp"), shutdown })
    }
}

impl Drop for Builtin {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
