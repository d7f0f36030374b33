//! An HTTP upstream anywhere: plain `http://` as before, or `https://` with rustls (the system's trusted roots,
//! plus a private CA from `--upstream-ca`), with request headers of the user's own (`--upstream-header`) and
//! headers whose values come from the environment (`--upstream-header-env`), so a credential need not sit on the
//! command line.
//!
//! A credential goes to the upstream and nowhere else: header values are never printed, and the values that are
//! secrets (every `--upstream-header-env` value, and any header whose name says it is one) are scrubbed from the
//! messages the proxy writes about the upstream and from the trajectory ([`Secrets`]).

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What `faultlab proxy` was told about its HTTP upstream, before anything is resolved.
#[derive(Debug, Default, Clone)]
pub struct RemoteOptions {
    /// `--upstream-ca FILE`: PEM certificates trusted on top of the system's roots.
    pub ca: Option<PathBuf>,
    /// `--upstream-header 'Name: value'`, in order.
    pub headers: Vec<String>,
    /// `--upstream-header-env 'Name: text with ${VARIABLE}'`, in order.
    pub header_env: Vec<String>,
}

/// Why the upstream cannot be used as given. Never holds a header's value.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("--upstream {0:?} is not a URL: {1}")]
    NotUrl(String, String),
    #[error("--upstream {0}: the scheme must be http:// or https://")]
    Scheme(String),
    #[error("--upstream {0}: put credentials in --upstream-header-env, not in the URL")]
    Credentials(String),
    #[error("{flag} expects 'Name: value', e.g. 'X-Team: lab'")]
    HeaderSyntax { flag: &'static str },
    #[error("{flag} {name:?}: not a valid HTTP header name")]
    HeaderName { flag: &'static str, name: String },
    #[error("{flag} {name}: the value is not a valid HTTP header value (a control character or non-ASCII byte?)")]
    HeaderValue { flag: &'static str, name: String },
    #[error("{flag} {name}: the proxy sets this header itself")]
    Reserved { flag: &'static str, name: String },
    #[error("--upstream-header-env {name}: names no ${{VARIABLE}}; use --upstream-header for a literal value")]
    NoVariable { name: String },
    #[error("--upstream-header-env {name}: an unterminated ${{ or a variable name that is not [A-Za-z_][A-Za-z0-9_]*")]
    BadVariable { name: String },
    #[error("--upstream-header-env {name}: the environment variable {variable} is not set")]
    MissingVariable { name: String, variable: String },
    #[error("--upstream-header-env {name}: the environment variable {variable} is empty")]
    EmptyVariable { name: String, variable: String },
    #[error(
        "{name} would travel in clear to {host} over http://; use an https:// upstream (plain http carries \
         credentials to loopback hosts only)"
    )]
    CleartextCredentials { name: String, host: String },
    #[error("--upstream-ca applies to https:// upstreams only")]
    CaWithoutTls,
    #[error("--upstream-ca {path}: cannot read it: {source}")]
    CaRead { path: String, source: std::io::Error },
    #[error("--upstream-ca {path}: {message}")]
    CaInvalid { path: String, message: String },
    #[error(
        "no trusted root certificates found on this system (install the ca-certificates package, set \
         SSL_CERT_FILE, or pass --upstream-ca FILE)"
    )]
    NoRoots,
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// Headers the proxy manages itself (framing, the connection, MCP's session and version headers): a user value
/// would break the exchange, so it is refused.
const RESERVED: [&str; 14] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
];

/// Lower-case fragments of header names that carry credentials (`Authorization`, `Proxy-Authorization`,
/// `Cookie`, `X-Api-Key`, `Private-Token`, `X-Auth-Token`, `Api-Secret`...).
const SECRET_NAME_PARTS: [&str; 6] = ["auth", "cookie", "key", "token", "secret", "password"];

/// Whether a header's value is a credential by its name.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
}

/// Credential values to keep out of everything the proxy writes. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Arc<[String]>);

/// Shorter pieces are not scrubbed: they are no credential, and replacing them would garble the text around.
const MIN_SECRET_BYTES: usize = 4;

impl Secrets {
    /// A header value, and each of its words after the first (`Bearer abc` also hides `abc` written alone, but
    /// not the word `Bearer`).
    fn of(values: &[String]) -> Self {
        let mut pieces: Vec<String> = Vec::new();
        for value in values {
            pieces.push(value.clone());
            pieces.extend(value.split_whitespace().skip(1).map(str::to_owned));
        }
        pieces.retain(|p| p.len() >= MIN_SECRET_BYTES);
        // Longest first, so a value is replaced whole before any of its words.
        pieces.sort_by_key(|p| std::cmp::Reverse(p.len()));
        pieces.dedup();
        Self(pieces.into())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The trajectory's scrub hook for these secrets.
    pub fn scrub(&self) -> faultlab_engine::trajectory::Scrub {
        let secrets = self.clone();
        std::sync::Arc::new(move |value| secrets.redact_value(value))
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in self.0.iter() {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[redacted]");
            }
        }
        text
    }

    /// Every string in `value` (keys too) redacted in place.
    pub fn redact_value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => *s = self.redact(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                for (key, mut v) in std::mem::take(map) {
                    self.redact_value(&mut v);
                    map.insert(self.redact(&key), v);
                }
            }
            _ => {}
        }
    }
}

/// An HTTP upstream, resolved: where it is, what goes with every request, and how TLS trusts it.
#[derive(Clone)]
pub struct Remote {
    url: reqwest::Url,
    /// The user's headers (values marked sensitive, so hyper never prints them), added to every request.
    headers: HeaderMap,
    /// `Some` for https:// only: plain http keeps the bare connector.
    tls: Option<Arc<rustls::ClientConfig>>,
    secrets: Secrets,
}

impl Remote {
    /// A plain-HTTP or https:// upstream with no headers of its own and the system's roots.
    pub fn new(url: &str) -> Result<Self, RemoteError> {
        RemoteOptions::default().resolve(url, |name| std::env::var(name).ok())
    }

    pub fn url(&self) -> &reqwest::Url {
        &self.url
    }

    /// The upstream as messages name it: scheme, host, port and path; the query (which may carry a key) is left
    /// out.
    pub fn shown(&self) -> String {
        let mut shown = self.url.clone();
        shown.set_query(None);
        shown.set_fragment(None);
        shown.to_string()
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The headers added to every request; a user's header replaces the client's of the same name.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The header names the proxy adds, for its start-up line (values are never shown).
    pub fn header_names(&self) -> Vec<String> {
        self.headers.keys().map(|k| k.as_str().to_owned()).collect()
    }

    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Puts the user's headers on a request going upstream, replacing any of the same name.
    pub fn apply_headers(&self, headers: &mut HeaderMap) {
        for (name, value) in &self.headers {
            headers.insert(name, value.clone());
        }
    }

    /// hyper's pooled client for the HTTP front: the bare connector for http://, rustls over it for https://.
    pub fn hyper_client(&self) -> HyperClient {
        let mut connector = HttpConnector::new();
        // Small SSE writes must not wait for delayed ACKs (Nagle): 40 ms a response otherwise.
        connector.set_nodelay(true);
        let builder = Client::builder(TokioExecutor::new());
        match &self.tls {
            None => HyperClient::Plain(builder.build(connector)),
            Some(config) => {
                // The TLS layer checks the scheme; the TCP connector must accept https:// URIs to hand them on.
                connector.enforce_http(false);
                let https = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(config.as_ref().clone())
                    .https_only()
                    .enable_http1()
                    .wrap_connector(connector);
                HyperClient::Tls(builder.build(https))
            }
        }
    }

    /// reqwest's client for the stdio front. Redirects are not followed and `HTTP(S)_PROXY` is not used: the
    /// upstream is the server named, reached the same way by both fronts.
    pub fn reqwest_client(&self) -> Result<reqwest::Client, RemoteError> {
        let builder = match &self.tls {
            None => faultlab_client::tls::client_builder(),
            Some(config) => faultlab_client::tls::client_builder_with(config.as_ref().clone()),
        };
        builder
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| RemoteError::Client(e.to_string()))
    }

    /// Why the upstream did not answer, for the client and the trajectory: `detail` (an error and its causes) with
    /// the secrets scrubbed and, for a certificate the proxy does not trust, what to do about it.
    pub fn explain(&self, detail: &str) -> String {
        let detail = self.secrets.redact(detail);
        let host = self.url.host_str().unwrap_or_default();
        let hint = if ["UnknownIssuer", "UnknownCa", "BadSignature"].iter().any(|cause| detail.contains(cause)) {
            " (the upstream's certificate is not signed by an authority the proxy trusts: pass its CA with \
             --upstream-ca FILE)"
                .to_owned()
        } else if detail.contains("NotValidForName") {
            format!(" (the upstream's certificate is not issued for {host})")
        } else if detail.contains("Expired") {
            " (the upstream's certificate has expired)".to_owned()
        } else {
            String::new()
        };
        format!("{detail}{hint}")
    }
}

/// The HTTP front's client: one type for both schemes, so the forwarding path is the same.
pub enum HyperClient {
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>),
}

impl HyperClient {
    pub async fn request(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, hyper_util::client::legacy::Error> {
        match self {
            Self::Plain(client) => client.request(request).await,
            Self::Tls(client) => client.request(request).await,
        }
    }
}

impl RemoteOptions {
    /// Checks the URL, reads the CA file, takes header values from `var` (the process environment).
    pub fn resolve(&self, url: &str, var: impl Fn(&str) -> Option<String>) -> Result<Remote, RemoteError> {
        let url = upstream_url(url)?;
        let tls = url.scheme() == "https";
        if self.ca.is_some() && !tls {
            return Err(RemoteError::CaWithoutTls);
        }
        let mut headers = HeaderMap::new();
        let mut secret_values = Vec::new();
        for spec in &self.headers {
            let (name, value) = split_header("--upstream-header", spec)?;
            let value = header_value("--upstream-header", &name, value)?;
            if is_secret_header(name.as_str()) {
                secret_values.push(value.to_str().unwrap_or_default().to_owned());
            }
            headers.insert(name, value);
        }
        for spec in &self.header_env {
            let (name, template) = split_header("--upstream-header-env", spec)?;
            let (expanded, variables) = expand(name.as_str(), template, &var)?;
            let value = header_value("--upstream-header-env", &name, &expanded)?;
            // What came from the environment is a secret whatever the header's name.
            secret_values.extend(variables);
            secret_values.push(expanded);
            headers.insert(name, value);
        }
        let host = url.host_str().unwrap_or_default().to_owned();
        if !tls && !is_loopback(&url) {
            let from_env = |name: &HeaderName| {
                self.header_env.iter().any(|spec| split_header("", spec).is_ok_and(|(n, _)| n == name))
            };
            if let Some(name) = headers.keys().find(|name| is_secret_header(name.as_str()) || from_env(name)) {
                return Err(RemoteError::CleartextCredentials { name: name.as_str().to_owned(), host });
            }
        }
        let tls = if tls { Some(Arc::new(tls_config(self.ca.as_deref())?)) } else { None };
        Ok(Remote { url, headers, tls, secrets: Secrets::of(&secret_values) })
    }
}

/// `--upstream`: http:// or https://, any host, no credentials in the URL.
fn upstream_url(text: &str) -> Result<reqwest::Url, RemoteError> {
    let url = reqwest::Url::parse(text).map_err(|e| RemoteError::NotUrl(text.to_owned(), e.to_string()))?;
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    shown.set_query(None);
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(RemoteError::Scheme(shown.to_string()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(RemoteError::Credentials(shown.to_string()));
    }
    Ok(url)
}

/// The same loopback names the fronts accept for what they listen on.
fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(|host| faultlab_http::guard::bind_address(host).is_ok())
}

/// `Name: value` → a checked name and the raw value (trimmed).
fn split_header<'a>(flag: &'static str, spec: &'a str) -> Result<(HeaderName, &'a str), RemoteError> {
    let (name, value) = spec.split_once(':').ok_or(RemoteError::HeaderSyntax { flag })?;
    let name = name.trim();
    let header = HeaderName::try_from(name).map_err(|_| RemoteError::HeaderName { flag, name: name.to_owned() })?;
    if RESERVED.contains(&header.as_str()) {
        return Err(RemoteError::Reserved { flag, name: header.as_str().to_owned() });
    }
    Ok((header, value.trim()))
}

fn header_value(flag: &'static str, name: &HeaderName, value: &str) -> Result<HeaderValue, RemoteError> {
    let mut value =
        HeaderValue::try_from(value).map_err(|_| RemoteError::HeaderValue { flag, name: name.as_str().to_owned() })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Replaces each `${VARIABLE}` in `template` by its value; the values are returned too (they are secrets).
fn expand(
    name: &str,
    template: &str,
    var: &impl Fn(&str) -> Option<String>,
) -> Result<(String, Vec<String>), RemoteError> {
    let mut out = String::new();
    let mut values = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| RemoteError::BadVariable { name: name.to_owned() })?;
        let variable = &after[..end];
        let valid = variable.chars().next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
            && variable.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
        if !valid {
            return Err(RemoteError::BadVariable { name: name.to_owned() });
        }
        let value = var(variable)
            .ok_or_else(|| RemoteError::MissingVariable { name: name.to_owned(), variable: variable.to_owned() })?;
        if value.is_empty() {
            return Err(RemoteError::EmptyVariable { name: name.to_owned(), variable: variable.to_owned() });
        }
        out.push_str(&value);
        values.push(value);
        rest = &after[end + 1..];
    }
    if values.is_empty() {
        return Err(RemoteError::NoVariable { name: name.to_owned() });
    }
    out.push_str(rest);
    Ok((out, values))
}

/// rustls trusting the system's roots and the certificates of `ca`.
fn tls_config(ca: Option<&Path>) -> Result<rustls::ClientConfig, RemoteError> {
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped: the ones that load are still trusted.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca {
        let shown = path.display().to_string();
        let pem = std::fs::read(path).map_err(|source| RemoteError::CaRead { path: shown.clone(), source })?;
        let invalid = |message: String| RemoteError::CaInvalid { path: shown.clone(), message };
        let mut found = 0;
        for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
            let cert = cert.map_err(|e| invalid(format!("certificate {} is not valid PEM: {e}", i + 1)))?;
            roots.add(cert).map_err(|e| invalid(format!("certificate {} cannot be trusted: {e}", i + 1)))?;
            found += 1;
        }
        if found == 0 {
            return Err(invalid("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()));
        }
    }
    if roots.is_empty() {
        return Err(RemoteError::NoRoots);
    }
    let config = rustls::ClientConfig::builder_with_provider(faultlab_client::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| RemoteError::Client(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    fn options(headers: &[&str], header_env: &[&str]) -> RemoteOptions {
        RemoteOptions {
            ca: None,
            headers: headers.iter().map(|s| (*s).to_owned()).collect(),
            header_env: header_env.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn header_env_expands_variables_and_marks_them_secret() {
        let remote = options(&["X-Team: lab"], &["Authorization: Bearer ${MCP_TOKEN}"])
            .resolve("http://127.0.0.1:9/mcp", env(&[("MCP_TOKEN", "tok-123456")]))
            .unwrap();
        assert_eq!(remote.headers()["authorization"], "Bearer tok-123456");
        assert_eq!(remote.headers()["x-team"], "lab");
        assert!(remote.headers()["authorization"].is_sensitive());
        let redacted = remote.secrets().redact("denied: Bearer tok-123456, or tok-123456; use Bearer auth");
        assert_eq!(redacted, "denied: [redacted], or [redacted]; use Bearer auth");
        // A plain header whose name says nothing of a secret is not scrubbed from text.
        assert_eq!(remote.secrets().redact("team lab"), "team lab");
    }

    #[test]
    fn a_missing_or_empty_variable_is_named_and_the_value_never_shown() {
        let missing = options(&[], &["Authorization: Bearer ${MCP_TOKEN}"]).resolve("http://127.0.0.1:9/", env(&[]));
        let message = missing.err().unwrap().to_string();
        assert!(message.contains("MCP_TOKEN is not set"), "{message}");
        let empty = options(&[], &["X-Api-Key: ${KEY}"]).resolve("http://127.0.0.1:9/", env(&[("KEY", "")]));
        assert!(empty.err().unwrap().to_string().contains("KEY is empty"));
        let literal = options(&[], &["X-Api-Key: abc"]).resolve("http://127.0.0.1:9/", env(&[]));
        assert!(literal.err().unwrap().to_string().contains("names no ${VARIABLE}"));
        let bad = options(&["Authorization: Bearer s3cret-\u{1}"], &[]).resolve("http://127.0.0.1:9/", env(&[]));
        let message = bad.err().unwrap().to_string();
        assert!(message.contains("authorization") && !message.contains("s3cret"), "{message}");
        let syntax = options(&["Bearer s3cret-value"], &[]).resolve("http://127.0.0.1:9/", env(&[]));
        let message = syntax.err().unwrap().to_string();
        assert!(message.contains("'Name: value'") && !message.contains("s3cret"), "{message}");
    }

    #[test]
    fn headers_the_proxy_manages_are_refused() {
        for spec in ["Host: x", "Mcp-Session-Id: 1", "Content-Length: 3"] {
            let refused = options(&[spec], &[]).resolve("http://127.0.0.1:9/", env(&[]));
            assert!(refused.err().unwrap().to_string().contains("sets this header itself"), "{spec}");
        }
    }

    #[test]
    fn urls_any_host_but_no_credentials_in_clear() {
        assert!(Remote::new("http://mcp.internal:8080/mcp").is_ok());
        assert!(Remote::new("ftp://mcp.example.com/").err().unwrap().to_string().contains("http:// or https://"));
        let userinfo = Remote::new("https://me:hunter22@mcp.example.com/mcp").err().unwrap().to_string();
        assert!(userinfo.contains("--upstream-header-env") && !userinfo.contains("hunter22"), "{userinfo}");
        let clear = options(&["Authorization: Bearer abcdef"], &[]).resolve("http://mcp.internal/mcp", env(&[]));
        assert!(clear.err().unwrap().to_string().contains("in clear"));
        assert!(options(&["X-Team: lab"], &[]).resolve("http://mcp.internal/mcp", env(&[])).is_ok());
        let ca = RemoteOptions { ca: Some("ca.pem".into()), ..RemoteOptions::default() };
        assert!(matches!(ca.resolve("http://127.0.0.1:9/", env(&[])), Err(RemoteError::CaWithoutTls)));
    }

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let ca = RemoteOptions { ca: Some(missing.clone()), ..RemoteOptions::default() };
        let message = ca.resolve("https://127.0.0.1:9/", env(&[])).err().unwrap().to_string();
        assert!(message.contains("missing.pem") && message.contains("cannot read"), "{message}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let ca = RemoteOptions { ca: Some(empty), ..RemoteOptions::default() };
        let message = ca.resolve("https://127.0.0.1:9/", env(&[])).err().unwrap().to_string();
        assert!(message.contains("empty.pem") && message.contains("no PEM certificate"), "{message}");
    }

    #[test]
    fn an_untrusted_certificate_is_explained_without_the_query() {
        let remote = Remote::new("https://127.0.0.1:9/mcp?key=abc").unwrap_or_else(|_| {
            // A machine without system roots still explains through a plain upstream.
            Remote::new("http://127.0.0.1:9/mcp?key=abc").unwrap()
        });
        let explained = remote.explain("invalid peer certificate: UnknownIssuer");
        assert!(explained.contains("--upstream-ca") && !explained.contains("key=abc"), "{explained}");
    }
}
