//! The authorization server: RFC 8414 metadata, RFC 7591 dynamic registration, the authorization-code grant with
//! PKCE (S256 only) and a headless approval (`/oauth/authorize` redirects at once with the code, so a test client
//! completes without a browser), refresh grants and RFC 7009 revocation. Clients are public (`none`) or
//! confidential (`client_secret_post`, `client_secret_basic`).

use crate::faults::{AuthFault, Document};
use crate::resource::not_allowed;
use crate::secret::{self, Digest};
use crate::store::{Access, Client, Code, Refresh};
use crate::{Auth, READ_SCOPE, SCOPES, json_response, oauth_error};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use faultlab_wire::sync::lock;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

pub const AUTHORIZE_PATH: &str = "/oauth/authorize";
pub const TOKEN_PATH: &str = "/oauth/token";
pub const REGISTER_PATH: &str = "/oauth/register";
pub const REVOKE_PATH: &str = "/oauth/revoke";
const AS_METADATA_PATHS: [&str; 2] = ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"];

/// Largest body of a token, registration or revocation request (64 KiB: a registration with a few redirect URIs
/// is well under 4 KiB).
const MAX_BODY_BYTES: usize = 64 * 1024;
/// An authorization code lives 60 s (RFC 6749 §4.1.2 recommends at most 10 minutes; the headless flow exchanges
/// it at once).
const CODE_TTL: Duration = Duration::from_secs(60);
/// Redirect URIs a client may register, and the length of each.
const MAX_REDIRECT_URIS: usize = 8;
const MAX_URI_BYTES: usize = 2048;
/// Parameters in one form or query, and the length of each value.
const MAX_PARAMS: usize = 32;
const MAX_VALUE_BYTES: usize = 4096;

/// Answers the authorization server's paths (404 for other paths under `/oauth/` and `/.well-known/`).
pub async fn handle(auth: &Auth, path: &str, request: Request) -> Response {
    if AS_METADATA_PATHS.contains(&path) {
        return if request.method() == Method::GET { metadata(auth) } else { not_allowed() };
    }
    let method = request.method().clone();
    match (path, method) {
        (AUTHORIZE_PATH, Method::GET) => authorize(auth, request.uri().query().unwrap_or("")),
        (TOKEN_PATH | REGISTER_PATH | REVOKE_PATH, Method::POST) => {
            let (parts, body) = request.into_parts();
            let bytes = match faultlab_http::read_body(&parts.headers, body, MAX_BODY_BYTES).await {
                Ok(bytes) => bytes,
                Err(refused) => return refused,
            };
            match path {
                TOKEN_PATH => token(auth, &parts.headers, &bytes).await,
                REGISTER_PATH => register(auth, &bytes),
                _ => revoke(auth, &parts.headers, &bytes),
            }
        }
        (AUTHORIZE_PATH, _) => not_allowed(),
        (TOKEN_PATH | REGISTER_PATH | REVOKE_PATH, _) => {
            let mut response = (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").into_response();
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
            response
        }
        _ => (StatusCode::NOT_FOUND, "Not found").into_response(),
    }
}

fn metadata(auth: &Auth) -> Response {
    if let Some(AuthFault::MetadataMissing(f)) = auth.fault()
        && f.document == Document::AuthorizationServer
    {
        auth.event(
            "metadata_refused",
            json!({"document": "authorization_server", "status": 404, "fault": "metadata_missing"}),
        );
        return (StatusCode::NOT_FOUND, "Not found").into_response();
    }
    let origin = &auth.origin;
    let methods = ["none", "client_secret_post", "client_secret_basic"];
    auth.event("metadata_served", json!({"document": "authorization_server"}));
    json_response(
        StatusCode::OK,
        &json!({
            "issuer": issuer(auth),
            "authorization_endpoint": format!("{origin}{AUTHORIZE_PATH}"),
            "token_endpoint": format!("{origin}{TOKEN_PATH}"),
            "registration_endpoint": format!("{origin}{REGISTER_PATH}"),
            "revocation_endpoint": format!("{origin}{REVOKE_PATH}"),
            "scopes_supported": SCOPES,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": methods,
            "revocation_endpoint_auth_methods_supported": methods,
            "authorization_response_iss_parameter_supported": true,
            // Client ID metadata documents would make this server fetch a URL the client names: not offered
            // (the lab stays on loopback); clients fall back to dynamic registration, as the spec orders.
            "client_id_metadata_document_supported": false,
        }),
    )
}

/// The issuer the metadata and the authorization response name (another one under `issuer_mismatch`).
fn issuer(auth: &Auth) -> String {
    match auth.fault() {
        Some(AuthFault::IssuerMismatch(_)) => format!("{}/not-this-issuer", auth.origin),
        _ => auth.issuer().to_owned(),
    }
}

/// Form or query parameters; each at most once (RFC 6749 §3.1), at most [`MAX_PARAMS`], each value bounded.
fn params(text: &[u8]) -> Result<HashMap<String, String>, String> {
    let mut params = HashMap::new();
    for (key, value) in form_urlencoded::parse(text) {
        if params.len() == MAX_PARAMS {
            return Err(format!("more than {MAX_PARAMS} parameters"));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(format!("parameter {key} is longer than {MAX_VALUE_BYTES} bytes"));
        }
        if params.insert(key.to_string(), value.into_owned()).is_some() {
            return Err(format!("parameter {key} given more than once"));
        }
    }
    Ok(params)
}

/// Requested scopes: space-separated, each one the server knows; none asked means `mcp:read`.
fn scopes(asked: Option<&String>) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for scope in asked.map(|s| s.split(' ').filter(|s| !s.is_empty()).collect::<Vec<_>>()).unwrap_or_default() {
        if !SCOPES.contains(&scope) {
            return Err(format!("unknown scope {scope:?}; this server knows {}", SCOPES.join(", ")));
        }
        if !out.iter().any(|s| s == scope) {
            out.push(scope.into());
        }
    }
    if out.is_empty() {
        out.push(READ_SCOPE.into());
    }
    Ok(out)
}

fn authorize(auth: &Auth, query: &str) -> Response {
    let params = match params(query.as_bytes()) {
        Ok(p) => p,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e),
    };
    let get = |k: &str| params.get(k);
    let Some(client_id) = get("client_id") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "client_id is required");
    };
    let client = lock(&auth.store).clients.get(client_id).cloned();
    let Some(client) = client else {
        auth.event("authorization_refused", json!({"error": "invalid_client", "client_id": client_id}));
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_client", "unknown client_id: register first");
    };
    // Before the redirect URI is known to be the client's, errors are shown here, never redirected (RFC 6749
    // §4.1.2.1: an unchecked redirect would be an open redirector).
    let redirect_uri = match get("redirect_uri") {
        Some(uri) if client.redirect_uris.contains(uri) => uri.clone(),
        Some(_) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "redirect_uri is not registered for this client",
            );
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "redirect_uri is required"),
    };
    let state = get("state").cloned();
    let redirect = |pairs: &[(&str, &str)]| redirect_to(&redirect_uri, pairs, state.as_deref(), &issuer(auth));
    if get("response_type").map(String::as_str) != Some("code") {
        return redirect(&[
            ("error", "unsupported_response_type"),
            ("error_description", "response_type must be code"),
        ]);
    }
    let challenge = match (get("code_challenge"), get("code_challenge_method").map(String::as_str)) {
        (Some(c), Some("S256")) if c.len() == 43 => c.clone(),
        _ => {
            let description = "PKCE is required: code_challenge (43 characters) with code_challenge_method=S256";
            auth.event(
                "authorization_refused",
                json!({"error": "invalid_request", "client_id": client_id, "why": "pkce"}),
            );
            return redirect(&[("error", "invalid_request"), ("error_description", description)]);
        }
    };
    let resource_sent = get("resource").is_some();
    if let Some(resource) = get("resource")
        && *resource != auth.resource()
    {
        auth.event("authorization_refused", json!({"error": "invalid_target", "client_id": client_id}));
        return redirect(&[("error", "invalid_target"), ("error_description", "resource is not this server's")]);
    }
    let scopes = match scopes(get("scope")) {
        Ok(s) => s,
        Err(e) => return redirect(&[("error", "invalid_scope"), ("error_description", &e)]),
    };
    auth.event(
        "authorization_started",
        json!({"client_id": client_id, "scope": scopes.join(" "), "resource_sent": resource_sent}),
    );
    let now = Instant::now();
    let mut store = lock(&auth.store);
    if let Some(AuthFault::AccessDenied(f)) = auth.fault()
        && store.denied < f.times
    {
        store.denied += 1;
        drop(store);
        auth.event("authorization_denied", json!({"client_id": client_id, "fault": "access_denied"}));
        return redirect(&[("error", "access_denied"), ("error_description", "the user denied the request")]);
    }
    if store.room_for_code(now).is_err() {
        return oauth_error(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", "too many codes outstanding");
    }
    let code = match secret::fresh() {
        Ok(code) => code,
        Err(_) => return random_failed(),
    };
    let entry = Code {
        client_id: client_id.clone(),
        redirect_uri: redirect_uri.clone(),
        redirect_uri_sent: get("redirect_uri").is_some(),
        challenge,
        scopes,
        expires: now + CODE_TTL,
    };
    store.codes.insert(Digest::of(&code), entry);
    drop(store);
    redirect(&[("code", &code)])
}

/// `302` to `uri` with `pairs`, `state` and `iss` added to its query (RFC 9207 `iss`).
fn redirect_to(uri: &str, pairs: &[(&str, &str)], state: Option<&str>, iss: &str) -> Response {
    let Ok(mut url) = url::Url::parse(uri) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "redirect_uri is not a URL");
    };
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in pairs {
            query.append_pair(k, v);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        query.append_pair("iss", iss);
    }
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(location) = HeaderValue::from_str(url.as_str()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn random_failed() -> Response {
    oauth_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "the OS random source failed")
}

/// The client a token or revocation request authenticates as: `client_id` (form) or HTTP Basic, and its secret
/// checked in constant time when it has one.
fn client_of(auth: &Auth, headers: &http::HeaderMap, form: &HashMap<String, String>) -> Result<String, Response> {
    let invalid = |why: &str| {
        let mut response = oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", why);
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"faultlab\""));
        response
    };
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic ").or_else(|| v.strip_prefix("basic ")))
        .map(|b| secret::decode_basic(b).and_then(|s| s.split_once(':').map(|(a, b)| (a.to_owned(), b.to_owned()))));
    let (client_id, presented) = match basic {
        Some(Some((id, secret))) => (decode_component(&id), Some(decode_component(&secret))),
        Some(None) => return Err(invalid("the Basic credentials are not base64 of id:secret")),
        None => match form.get("client_id") {
            Some(id) => (id.clone(), form.get("client_secret").cloned()),
            None => return Err(invalid("client_id is required")),
        },
    };
    let client = lock(&auth.store).clients.get(&client_id).cloned();
    let Some(client) = client else { return Err(invalid("unknown client_id")) };
    if let Some(expected) = client.secret {
        let ok = presented.is_some_and(|p| Digest::of(&p).matches(&expected));
        if !ok {
            return Err(invalid("the client secret is missing or wrong"));
        }
    }
    Ok(client_id)
}

/// Basic credentials are form-encoded before base64 (RFC 6749 §2.3.1).
fn decode_component(text: &str) -> String {
    form_urlencoded::parse(format!("x={text}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

async fn token(auth: &Auth, headers: &http::HeaderMap, body: &[u8]) -> Response {
    let form = match params(body) {
        Ok(f) => f,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e),
    };
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let client_id = match client_of(auth, headers, &form) {
                Ok(id) => id,
                Err(refused) => return refused,
            };
            exchange_code(auth, &client_id, &form)
        }
        Some("refresh_token") => refresh(auth, headers, &form).await,
        Some(other) => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", &format!("grant_type {other:?}")),
        None => oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "grant_type is required"),
    }
}

fn check_resource(auth: &Auth, form: &HashMap<String, String>) -> Result<(), Response> {
    match form.get("resource") {
        Some(r) if *r != auth.resource() => {
            Err(oauth_error(StatusCode::BAD_REQUEST, "invalid_target", "resource is not this server's"))
        }
        _ => Ok(()),
    }
}

fn exchange_code(auth: &Auth, client_id: &str, form: &HashMap<String, String>) -> Response {
    let invalid_grant = |why: &str| {
        auth.event("code_refused", json!({"client_id": client_id, "why": why}));
        oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why)
    };
    if let Err(refused) = check_resource(auth, form) {
        return refused;
    }
    let (Some(code), Some(verifier)) = (form.get("code"), form.get("code_verifier")) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "code and code_verifier are required");
    };
    let now = Instant::now();
    // The code is used up whatever follows (RFC 6749 §4.1.2: at most once).
    let Some(entry) = lock(&auth.store).codes.remove(&Digest::of(code)) else {
        return invalid_grant("unknown or already used code");
    };
    if entry.expires <= now {
        return invalid_grant("the code expired");
    }
    if entry.client_id != client_id {
        return invalid_grant("the code was issued to another client");
    }
    match form.get("redirect_uri") {
        Some(uri) if *uri != entry.redirect_uri => {
            return invalid_grant("redirect_uri differs from the authorization request's");
        }
        None if entry.redirect_uri_sent => {
            return invalid_grant("redirect_uri is required (the authorization request had one)");
        }
        _ => {}
    }
    if !secret::pkce_s256_ok(verifier, &entry.challenge) {
        return invalid_grant("code_verifier does not match the code_challenge (S256)");
    }
    let mut store = lock(&auth.store);
    store.grants += 1;
    let grant = store.grants;
    issue(auth, store, grant, client_id, entry.scopes, "authorization_code", true)
}

/// Issues an access token (and a refresh token when `with_refresh`) for `grant` and answers the token response.
fn issue(
    auth: &Auth,
    mut store: std::sync::MutexGuard<'_, crate::store::Store>,
    grant: u64,
    client_id: &str,
    scopes: Vec<String>,
    how: &str,
    with_refresh: bool,
) -> Response {
    let now = Instant::now();
    if store.room_for_tokens(now).is_err() {
        return oauth_error(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", "too many tokens outstanding");
    }
    let (Ok(access), Ok(refresh)) = (secret::fresh(), secret::fresh()) else { return random_failed() };
    let skew = match auth.fault() {
        Some(AuthFault::ClockSkew(f)) => Duration::from_secs(u64::from(f.seconds)),
        _ => Duration::ZERO,
    };
    let ttl = auth.config.token_ttl;
    store.access.insert(
        Digest::of(&access),
        Access {
            grant,
            client_id: client_id.into(),
            scopes: scopes.clone(),
            resource: auth.resource(),
            expires: now + skew + ttl,
            not_before: now + skew,
            uses: 0,
            revoked: false,
        },
    );
    if with_refresh {
        let entry =
            Refresh { grant, client_id: client_id.into(), scopes: scopes.clone(), revoked: false, rotated_out: false };
        store.refresh.insert(Digest::of(&refresh), entry);
    }
    drop(store);
    let scope = scopes.join(" ");
    auth.event(
        "token_issued",
        json!({"grant": how, "client_id": client_id, "scope": scope, "refresh_token_issued": with_refresh}),
    );
    let mut body = json!({"access_token": access, "token_type": "Bearer", "expires_in": ttl.as_secs(), "scope": scope});
    if with_refresh {
        body["refresh_token"] = Value::String(refresh);
    }
    json_response(StatusCode::OK, &body)
}

async fn refresh(auth: &Auth, headers: &http::HeaderMap, form: &HashMap<String, String>) -> Response {
    // The faults that stand for a struggling authorization server act before anything is checked.
    let delay = {
        let mut store = lock(&auth.store);
        match auth.fault() {
            Some(AuthFault::RefreshUnavailable(f)) if store.refresh_faulted < f.times => {
                store.refresh_faulted += 1;
                drop(store);
                auth.event(
                    "refresh_refused",
                    json!({"status": f.status, "error": "temporarily_unavailable", "fault": "refresh_unavailable"}),
                );
                let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                let mut response =
                    oauth_error(status, "temporarily_unavailable", "the authorization server is busy; try again later");
                if let Some(seconds) = f.retry_after {
                    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
                }
                return response;
            }
            Some(AuthFault::RefreshSlow(f)) if store.refresh_faulted < f.times => {
                store.refresh_faulted += 1;
                Some(Duration::from_millis(f.delay_ms))
            }
            _ => None,
        }
    };
    if let Some(delay) = delay {
        auth.event("refresh_delayed", json!({"delay_ms": delay.as_millis() as u64, "fault": "refresh_slow"}));
        tokio::time::sleep(delay).await;
    }
    let client_id = match client_of(auth, headers, form) {
        Ok(id) => id,
        Err(refused) => return refused,
    };
    if let Err(refused) = check_resource(auth, form) {
        return refused;
    }
    let Some(presented) = form.get("refresh_token") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "refresh_token is required");
    };
    let digest = Digest::of(presented);
    let mut store = lock(&auth.store);
    let refused = |store: std::sync::MutexGuard<'_, _>, reason: &str, fault: Option<&str>| {
        drop(store);
        auth.event(
            "refresh_refused",
            json!({"error": "invalid_grant", "reason": reason, "client_id": client_id, "fault": fault}),
        );
        oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", &format!("the refresh token is {reason}"))
    };
    if let Some(AuthFault::RefreshInvalidGrant(f)) = auth.fault()
        && store.refresh_faulted < f.times
        && store.refresh.contains_key(&digest)
    {
        store.refresh_faulted += 1;
        store.refresh.remove(&digest);
        return refused(store, "no longer valid", Some("refresh_invalid_grant"));
    }
    let Some(entry) = store.refresh.get(&digest).cloned() else { return refused(store, "unknown", None) };
    if entry.revoked {
        return refused(store, "revoked", None);
    }
    if entry.rotated_out {
        return refused(store, "rotated", None);
    }
    if entry.client_id != client_id {
        return refused(store, "issued to another client", None);
    }
    let scopes = match form.get("scope") {
        None => entry.scopes.clone(),
        Some(asked) => match scopes(Some(asked)) {
            Ok(asked) if asked.iter().all(|s| entry.scopes.contains(s)) => asked,
            _ => {
                drop(store);
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_scope", "a refresh may only narrow the scope");
            }
        },
    };
    let rotate = matches!(auth.fault(), Some(AuthFault::RefreshRotation(_)));
    if rotate && let Some(old) = store.refresh.get_mut(&digest) {
        old.rotated_out = true;
    }
    issue(auth, store, entry.grant, &client_id, scopes, "refresh_token", rotate)
}

/// RFC 7009: the token (access or refresh) is revoked if it is the client's; the answer is 200 either way.
fn revoke(auth: &Auth, headers: &http::HeaderMap, body: &[u8]) -> Response {
    let form = match params(body) {
        Ok(f) => f,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e),
    };
    let client_id = match client_of(auth, headers, &form) {
        Ok(id) => id,
        Err(refused) => return refused,
    };
    let Some(token) = form.get("token") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "token is required");
    };
    let digest = Digest::of(token);
    let mut store = lock(&auth.store);
    let mut kind = None;
    if let Some(a) = store.access.get_mut(&digest).filter(|a| a.client_id == client_id) {
        a.revoked = true;
        kind = Some("access_token");
    }
    if let Some(r) = store.refresh.get_mut(&digest).filter(|r| r.client_id == client_id) {
        // Revoking a refresh token ends its whole grant (RFC 7009 §2.1 allows it; clients revoke on sign-out).
        let grant = r.grant;
        store.revoke_grant(grant);
        kind = Some("refresh_token");
    }
    drop(store);
    auth.event("token_revoked", json!({"client_id": client_id, "token_type": kind}));
    StatusCode::OK.into_response()
}

/// The parts of an RFC 7591 registration request this server acts on; the rest is ignored (§2: unknown metadata
/// is ignored, not refused).
#[derive(serde::Deserialize)]
struct Registration {
    redirect_uris: Option<Vec<String>>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    client_name: Option<String>,
    scope: Option<String>,
}

fn register(auth: &Auth, body: &[u8]) -> Response {
    let refuse = |error: &str, why: &str| {
        auth.event("registration_refused", json!({"error": error, "why": why}));
        oauth_error(StatusCode::BAD_REQUEST, error, why)
    };
    if matches!(auth.fault(), Some(AuthFault::RegistrationRefused(_))) {
        return refuse("invalid_client_metadata", "registration is closed (faultlab registration_refused)");
    }
    let registration: Registration = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return refuse("invalid_client_metadata", &format!("the body is not registration JSON: {e}")),
    };
    let uris = registration.redirect_uris.unwrap_or_default();
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
        return refuse("invalid_redirect_uri", &format!("give 1 to {MAX_REDIRECT_URIS} redirect_uris"));
    }
    for uri in &uris {
        let ok = uri.len() <= MAX_URI_BYTES && url::Url::parse(uri).is_ok_and(|u| u.fragment().is_none());
        if !ok {
            return refuse(
                "invalid_redirect_uri",
                "each redirect_uri must be an absolute URL without a fragment, at most 2048 bytes",
            );
        }
    }
    let method = registration.token_endpoint_auth_method.unwrap_or_else(|| "client_secret_basic".into());
    if !["none", "client_secret_post", "client_secret_basic"].contains(&method.as_str()) {
        return refuse(
            "invalid_client_metadata",
            "token_endpoint_auth_method must be none, client_secret_post or client_secret_basic",
        );
    }
    let grant_types = registration.grant_types.unwrap_or_else(|| vec!["authorization_code".into()]);
    if grant_types.iter().any(|g| g != "authorization_code" && g != "refresh_token") {
        return refuse("invalid_client_metadata", "grant_types may be authorization_code and refresh_token");
    }
    let response_types = registration.response_types.unwrap_or_else(|| vec!["code".into()]);
    if response_types.iter().any(|r| r != "code") {
        return refuse("invalid_client_metadata", "response_types may only be code");
    }
    if let Some(scope) = &registration.scope
        && let Err(e) = scopes(Some(scope))
    {
        return refuse("invalid_client_metadata", &e);
    }
    let (Ok(client_id), Ok(client_secret)) = (secret::fresh(), secret::fresh()) else { return random_failed() };
    let confidential = method != "none";
    let mut store = lock(&auth.store);
    if store.clients.len() >= crate::store::MAX_CLIENTS {
        drop(store);
        return oauth_error(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", "too many registered clients");
    }
    let client = Client {
        redirect_uris: uris.clone(),
        secret: confidential.then(|| Digest::of(&client_secret)),
        auth_method: method.clone(),
    };
    store.clients.insert(client_id.clone(), client);
    drop(store);
    auth.event("client_registered", json!({"client_id": client_id, "token_endpoint_auth_method": method}));
    let mut body = json!({
        "client_id": client_id,
        "client_id_issued_at": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "redirect_uris": uris,
        "token_endpoint_auth_method": method,
        "grant_types": grant_types,
        "response_types": response_types,
    });
    if let Some(name) = registration.client_name {
        body["client_name"] = Value::String(name);
    }
    if let Some(scope) = registration.scope {
        body["scope"] = Value::String(scope);
    }
    if confidential {
        body["client_secret"] = Value::String(client_secret);
        body["client_secret_expires_at"] = json!(0);
    }
    json_response(StatusCode::CREATED, &body)
}
