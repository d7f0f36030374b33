//! The authorization server and protected resource on the wire (the wrapped router driven request by request;
//! the real listener is tested through the binary in `faultlab`'s `auth` tests), and each auth fault.

mod faults;
mod flow;

use base64::Engine as _;
use faultlab_auth::{Auth, AuthConfig, AuthFault};
use faultlab_http::guard::AllowedHosts;
use http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use sha2::Digest as _;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use tower::ServiceExt as _;

pub const ORIGIN: &str = "http://127.0.0.1:4000";
pub const RESOURCE: &str = "http://127.0.0.1:4000/mcp";
pub const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A lab with `fault`: the auth in front of an endpoint that answers 200 saying whether it saw an
/// `Authorization` header.
pub struct Lab {
    pub auth: Arc<Auth>,
    app: axum::Router,
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Lab {
    pub fn new(fault: Option<&str>) -> Self {
        Self::with(AuthConfig { fault: fault.map(|f| AuthFault::parse(f).unwrap()), ..AuthConfig::default() })
    }

    pub fn with(config: AuthConfig) -> Self {
        let allowed = AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let auth = Auth::new(config, ORIGIN, "/mcp", allowed).unwrap();
        let inner = axum::Router::new().fallback(|request: axum::extract::Request| async move {
            if request.uri().path() != "/mcp" {
                return (StatusCode::NOT_FOUND, "Not found".to_string());
            }
            let seen = request.headers().contains_key(header::AUTHORIZATION);
            // The body as it arrived, to show that one the authorization read (for `auth.match`) passes unchanged.
            let body = request.into_body().collect().await.unwrap().to_bytes();
            let body = String::from_utf8_lossy(&body).into_owned();
            (StatusCode::OK, json!({"mcp": true, "authorization_seen": seen, "body": body}).to_string())
        });
        Self { app: auth.clone().wrap(inner), auth }
    }

    pub async fn send(&self, request: Request<axum::body::Body>) -> Answer {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Answer { status, headers, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null), text }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(base(path).method("GET").body(axum::body::Body::empty()).unwrap()).await
    }

    pub async fn form(&self, path: &str, pairs: &[(&str, &str)]) -> Answer {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
        let request = base(path)
            .method("POST")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(axum::body::Body::from(body))
            .unwrap();
        self.send(request).await
    }

    pub async fn register(&self, body: Value) -> Answer {
        let request = base("/oauth/register")
            .method("POST")
            .header(header::CONTENT_TYPE, "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        self.send(request).await
    }

    /// A POST to the MCP endpoint with `token` (if any).
    pub async fn mcp(&self, token: Option<&str>) -> Answer {
        let mut request = base("/mcp").method("POST").header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.send(request.body(axum::body::Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)).unwrap()).await
    }

    /// A `tools/call` of `tool` on `path` with `token` (if any).
    pub async fn call(&self, token: Option<&str>, tool: &str, path: &str) -> Answer {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {"path": path}}});
        let mut request = base("/mcp").method("POST").header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.send(request.body(axum::body::Body::from(body.to_string())).unwrap()).await
    }

    pub fn events(&self, name: &str) -> Vec<Value> {
        self.auth.events().into_iter().filter(|e| e["auth"] == name).collect()
    }
}

pub fn base(path: &str) -> http::request::Builder {
    Request::builder().uri(path).header(header::HOST, "127.0.0.1:4000")
}

/// A PKCE pair: a 43-character verifier and its S256 challenge.
pub fn pkce(seed: &str) -> (String, String) {
    let verifier = format!("{seed:-<43}");
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The query of a redirect's `Location`, as a map.
pub fn redirect_query(answer: &Answer) -> HashMap<String, String> {
    assert_eq!(answer.status, StatusCode::FOUND, "{}", answer.text);
    let location = answer.headers[header::LOCATION].to_str().unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    let url = url::Url::parse(location).unwrap();
    url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}
