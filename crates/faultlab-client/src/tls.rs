//! TLS for every HTTP client of the lab: rustls on its ring provider, handed to reqwest ready-made.
//!
//! reqwest is built with `rustls-no-provider` (its default provider, aws-lc-rs, compiles a large C library: minutes
//! of CPU on every clean build). Such a reqwest panics when it builds its own TLS config and no process-wide
//! provider is installed, so every client starts from [`client_builder`] or [`client_builder_with`], whatever the
//! process did before; `clippy.toml` refuses reqwest's own constructors.

use std::sync::Arc;

/// The crypto of every TLS connection the lab makes.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A reqwest builder for plain http:// URLs. Its TLS trusts no certificate: no trust store is read (a machine
/// without one still works) and an https:// URL fails its handshake, never reaching a server unverified.
pub fn client_builder() -> reqwest::ClientBuilder {
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring implements TLS 1.2 and 1.3")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    client_builder_with(config)
}

/// A reqwest builder whose TLS is `config` (its trust, its provider).
#[allow(clippy::disallowed_methods, reason = "the one place a reqwest client starts, with its TLS config")]
pub fn client_builder_with(config: rustls::ClientConfig) -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aws-lc-rs (any crate's default rustls provider) compiles a large C library: minutes of CPU on every clean
    /// build. The lock file is the whole graph of every build of the workspace.
    #[test]
    fn no_aws_lc_in_the_build_graph() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).unwrap();
        let aws: Vec<&str> = lock.lines().filter(|line| line.starts_with("name = \"aws-lc")).collect();
        assert!(aws.is_empty(), "Cargo.lock holds {aws:?}: a TLS crate has its aws-lc-rs feature on");
    }

    /// No process-wide provider is installed here (nor anywhere in the lab): the builders must not need one.
    #[test]
    fn clients_build_without_a_process_provider() {
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
        client_builder().build().unwrap();
    }
}
