//! The client's auth mode: OAuth 2.1 as the MCP authorization spec (2025-11-25) asks of a client, headless.
//!
//! A request answered `401` with `WWW-Authenticate: Bearer resource_metadata="…"` starts discovery: the protected
//! resource metadata (RFC 9728, its `resource` checked against the endpoint), the authorization server metadata
//! (RFC 8414, its `issuer` checked, PKCE S256 required), dynamic registration (RFC 7591, a public client), then the
//! authorization-code grant with PKCE S256. The approval is headless: the client reads the authorization endpoint's
//! redirect itself (no browser, no listener) and checks its `state` and `iss`. Then:
//!
//! - `401 invalid_token`: one refresh grant, the request sent again; `invalid_grant` drops the tokens and authorizes
//!   again (bounded); a `429`, a `5xx` or no answer within the refresh deadline keeps the tokens, waits (honouring
//!   `Retry-After`, capped) and refreshes again, a bounded number of times.
//! - `403 insufficient_scope`: a new authorization asking for the union of the scopes held and the scopes named
//!   (step-up), a bounded number of times, and never for nothing new.
//!
//! Every request gets at most [`MAX_ROUNDS_PER_REQUEST`] such rounds: a resource that keeps refusing gets its last
//! refusal passed on, not a loop. What happened is kept as [`AuthEvent`]s, which never hold a token, a code, a
//! verifier or a client secret (the secrets live only in [`AuthSession`]'s state and the `Authorization` header).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use faultlab_wire::sync::lock;
use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use std::sync::Mutex;
use std::time::Duration;

/// Auth rounds (refresh, authorization, step-up) one request may trigger before its refusal is passed on.
pub const MAX_ROUNDS_PER_REQUEST: u32 = 3;
/// Where the authorization server is told to send the code. Nothing listens there: the client reads the redirect's
/// `Location` itself (RFC 8252 §7.3 loopback redirect; the port is irrelevant as it is never connected to).
pub const REDIRECT_URI: &str = "http://127.0.0.1/faultlab/callback";
/// Largest metadata, registration or token response read (64 KiB; real ones are under 4 KiB).
const MAX_AUTH_BODY_BYTES: usize = 64 * 1024;
/// Events kept per connection (the oldest are dropped beyond; the counts stay exact).
const MAX_EVENTS: usize = 1024;
/// Deadline of a metadata, registration, authorization or code-exchange request (10 s).
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// The auth mode's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthOptions {
    /// Step-ups per connection.
    pub max_step_ups: u32,
    /// Re-authorizations (after `invalid_grant`) per connection.
    pub max_reauthorizations: u32,
    /// Refresh grants tried for one expired token when the authorization server fails transiently.
    pub refresh_attempts: u32,
    /// How long one refresh grant may take before it counts as a transient failure.
    pub refresh_deadline: Duration,
    /// The longest `Retry-After` honoured between refresh attempts (a longer one is cut to this).
    pub max_retry_wait: Duration,
}

impl Default for AuthOptions {
    fn default() -> Self {
        Self {
            max_step_ups: 2,
            max_reauthorizations: 3,
            refresh_attempts: 3,
            refresh_deadline: Duration::from_secs(10),
            max_retry_wait: Duration::from_secs(5),
        }
    }
}

/// What the auth mode did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthEventKind {
    /// The first authorization of the connection completed (code + PKCE, tokens received).
    Authorized,
    /// A refresh grant gave a new access token.
    Refreshed,
    /// A refresh grant failed transiently (429, 5xx, no answer in time): the tokens were kept.
    RefreshDeferred,
    /// A refresh grant was refused for good (`invalid_grant`): the tokens were dropped.
    RefreshRefused,
    /// An authorization for more scope (after `403 insufficient_scope`) completed.
    StepUp,
    /// An authorization after the tokens were dropped completed.
    Reauthorized,
    /// An auth round ended without a usable token; the request's refusal was passed on.
    Failed,
}

/// One thing the auth mode did. Never holds a secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthEvent {
    pub kind: AuthEventKind,
    /// The scopes asked for or granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Why, in words (the OAuth error and its description, a status, a deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Everything the auth mode did on a connection (or, as a difference, during one call).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthRecord {
    /// In order (the last 1,024 of the connection).
    pub events: Vec<AuthEvent>,
    /// Requests to the token endpoint (code exchanges and refresh grants): the loop bound's measure.
    pub token_requests: u32,
    /// Requests to the authorization endpoint.
    pub authorization_requests: u32,
    /// Registration requests.
    pub registrations: u32,
    /// Events dropped from the front of `events` (beyond 1,024).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_events: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl AuthRecord {
    /// How many events of `kind`.
    pub fn count(&self, kind: AuthEventKind) -> u32 {
        self.events.iter().filter(|e| e.kind == kind).count() as u32
    }

    /// What happened after `before` (an earlier copy of this record).
    pub fn since(&self, before: &AuthRecord) -> AuthRecord {
        let seen = (before.events.len() as u32 + before.dropped_events).saturating_sub(self.dropped_events);
        AuthRecord {
            events: self.events.iter().skip(seen as usize).cloned().collect(),
            token_requests: self.token_requests - before.token_requests.min(self.token_requests),
            authorization_requests: self.authorization_requests
                - before.authorization_requests.min(self.authorization_requests),
            registrations: self.registrations - before.registrations.min(self.registrations),
            dropped_events: 0,
        }
    }
}

/// A `WWW-Authenticate: Bearer …` challenge's parameters (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    /// The first Bearer challenge among the response's `WWW-Authenticate` headers.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        headers.get_all(WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()).find_map(Self::parse)
    }

    /// Parses `Bearer k="v", k2=token, …` (RFC 9110 §11.6.1 auth-params: quoted strings with `\` escapes, or
    /// tokens); `None` when the scheme is not Bearer.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim_start();
        let (scheme, mut rest) = text.split_once(' ').unwrap_or((text, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut challenge = Self::default();
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            let Some((name, after)) = rest.split_once('=') else { break };
            let name = name.trim().to_ascii_lowercase();
            let after = after.trim_start();
            let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
                let mut value = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                (value, &quoted[end.min(quoted.len())..])
            } else {
                let end = after.find([',', ' ', '\t']).unwrap_or(after.len());
                (after[..end].to_owned(), &after[end..])
            };
            match name.as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                "error" => challenge.error = Some(value),
                _ => {}
            }
            rest = next;
        }
        Some(challenge)
    }
}

/// The authorization server as discovered.
#[derive(Debug, Clone)]
struct Discovered {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    registration_endpoint: Option<String>,
}

/// Tokens held. Secret: never serialized, never printed (no `Debug`).
#[derive(Clone)]
struct Tokens {
    access: String,
    refresh: Option<String>,
    scopes: Vec<String>,
}

#[derive(Default)]
struct State {
    discovered: Option<Discovered>,
    /// The registered `client_id` (a public client: no secret).
    client_id: Option<String>,
    tokens: Option<Tokens>,
    /// The connection has completed an authorization before.
    authorized_once: bool,
    step_ups: u32,
    reauthorizations: u32,
}

/// Why an auth round stopped without a token, in words (no secret in it).
type Stop = String;

/// The auth mode of one HTTP connection: its tokens, and the record of what it did.
pub struct AuthSession {
    http: reqwest::Client,
    /// The MCP endpoint's URL: the resource (RFC 8707) asked for and checked against the metadata.
    resource: String,
    options: AuthOptions,
    /// Held across a whole round, so that concurrent refusals cause one refresh, not one each.
    state: tokio::sync::Mutex<State>,
    record: Mutex<AuthRecord>,
}

/// What one refresh grant came to.
enum Refreshed {
    Tokens(Tokens),
    /// `invalid_grant` (or another refusal for good): the refresh token is dead.
    Refused(String),
    /// 429, 5xx or no answer in time: the refresh token is still good.
    Transient {
        why: String,
        retry_after: Option<Duration>,
    },
}

impl AuthSession {
    /// The auth mode for the endpoint at `resource`, its own requests made with `http` (which must not follow
    /// redirects: the authorization endpoint's redirect is read, not followed).
    pub fn new(http: reqwest::Client, resource: &str, options: AuthOptions) -> Self {
        Self {
            http,
            resource: resource.to_owned(),
            options,
            state: tokio::sync::Mutex::default(),
            record: Mutex::default(),
        }
    }

    /// Everything done so far.
    pub fn record(&self) -> AuthRecord {
        lock(&self.record).clone()
    }

    fn event(&self, kind: AuthEventKind, scope: Option<String>, detail: Option<String>) {
        tracing::debug!(?kind, scope, detail, "auth");
        let mut record = lock(&self.record);
        if record.events.len() == MAX_EVENTS {
            record.events.remove(0);
            record.dropped_events += 1;
        }
        record.events.push(AuthEvent { kind, scope, detail });
    }

    /// Sends `request` with the current access token; on a Bearer `401`, or a `403 insufficient_scope`, runs one
    /// auth round and sends it again, at most [`MAX_ROUNDS_PER_REQUEST`] times. The last answer is returned as
    /// it came (a refusal the rounds could not fix is the caller's to report).
    pub async fn send(&self, request: reqwest::RequestBuilder) -> reqwest::Result<reqwest::Response> {
        let mut rounds = 0;
        loop {
            let token = self.state.lock().await.tokens.as_ref().map(|t| t.access.clone());
            // A body that cannot be cloned (a stream) cannot be sent twice: sent once, as it is.
            let Some(attempt) = request.try_clone() else { return request.send().await };
            let attempt = match &token {
                Some(token) => attempt.bearer_auth(token),
                None => attempt,
            };
            let response = attempt.send().await?;
            let status = response.status().as_u16();
            if !(status == 401 || status == 403) || rounds == MAX_ROUNDS_PER_REQUEST {
                return Ok(response);
            }
            let Some(challenge) = Challenge::from_headers(response.headers()) else { return Ok(response) };
            if status == 403 && challenge.error.as_deref() != Some("insufficient_scope") {
                return Ok(response);
            }
            rounds += 1;
            if !self.round(status, &challenge, token.as_deref()).await {
                return Ok(response);
            }
        }
    }

    /// One auth round after a refusal of a request sent with `used`; true when there is a token to try.
    async fn round(&self, status: u16, challenge: &Challenge, used: Option<&str>) -> bool {
        let mut state = self.state.lock().await;
        let current = state.tokens.as_ref().map(|t| t.access.as_str());
        // Another request renewed the token while this one was out: try the new one.
        if current.is_some() && current != used {
            return true;
        }
        let result = if status == 403 {
            self.step_up(&mut state, challenge).await
        } else if state.tokens.as_ref().is_some_and(|t| t.refresh.is_some()) {
            self.renew(&mut state, challenge).await
        } else {
            let scope = challenge.scope.clone();
            self.authorize(&mut state, challenge, scope, AuthEventKind::Reauthorized).await
        };
        match result {
            Ok(()) => true,
            Err(why) => {
                self.event(AuthEventKind::Failed, None, Some(why));
                false
            }
        }
    }

    async fn step_up(&self, state: &mut State, challenge: &Challenge) -> Result<(), Stop> {
        let held: Vec<String> = state.tokens.as_ref().map(|t| t.scopes.clone()).unwrap_or_default();
        let mut union = held.clone();
        for scope in challenge.scope.as_deref().unwrap_or_default().split(' ').filter(|s| !s.is_empty()) {
            if !union.iter().any(|s| s == scope) {
                union.push(scope.to_owned());
            }
        }
        if union.len() == held.len() {
            return Err(format!(
                "403 insufficient_scope asks for {:?}, which the token already holds: not stepping up for nothing new",
                challenge.scope.as_deref().unwrap_or_default()
            ));
        }
        if state.step_ups >= self.options.max_step_ups {
            return Err(format!(
                "403 insufficient_scope asks for {:?}: the step-up limit ({}) is reached",
                challenge.scope.as_deref().unwrap_or_default(),
                self.options.max_step_ups
            ));
        }
        state.step_ups += 1;
        self.authorize(state, challenge, Some(union.join(" ")), AuthEventKind::StepUp).await
    }

    /// A refresh grant, retried while the authorization server fails transiently; `invalid_grant` drops the
    /// tokens and authorizes again.
    async fn renew(&self, state: &mut State, challenge: &Challenge) -> Result<(), Stop> {
        let mut last = String::new();
        for attempt in 0..self.options.refresh_attempts {
            match self.refresh_once(state).await {
                Refreshed::Tokens(tokens) => {
                    self.event(AuthEventKind::Refreshed, Some(tokens.scopes.join(" ")), None);
                    state.tokens = Some(tokens);
                    return Ok(());
                }
                Refreshed::Refused(why) => {
                    self.event(AuthEventKind::RefreshRefused, None, Some(why));
                    state.tokens = None;
                    let scope = challenge.scope.clone();
                    return self.authorize(state, challenge, scope, AuthEventKind::Reauthorized).await;
                }
                Refreshed::Transient { why, retry_after } => {
                    self.event(AuthEventKind::RefreshDeferred, None, Some(format!("{why}; the tokens are kept")));
                    last = why;
                    if attempt + 1 < self.options.refresh_attempts {
                        // Retry-After when given (capped), else 250 ms doubling per attempt.
                        let backoff = Duration::from_millis(250 << attempt.min(4));
                        tokio::time::sleep(retry_after.unwrap_or(backoff).min(self.options.max_retry_wait)).await;
                    }
                }
            }
        }
        Err(format!(
            "the token endpoint did not refresh in {} attempts ({last}); the tokens are kept for the next request",
            self.options.refresh_attempts
        ))
    }

    async fn refresh_once(&self, state: &State) -> Refreshed {
        let (Some(discovered), Some(tokens), Some(client_id)) = (&state.discovered, &state.tokens, &state.client_id)
        else {
            return Refreshed::Refused("no refresh token".into());
        };
        let Some(refresh) = &tokens.refresh else { return Refreshed::Refused("no refresh token".into()) };
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.as_str()),
            ("client_id", client_id.as_str()),
            ("resource", self.resource.as_str()),
        ];
        lock(&self.record).token_requests += 1;
        let sent = self.post_form(&discovered.token_endpoint, &form, self.options.refresh_deadline).await;
        let (status, headers, body) = match sent {
            Ok(answer) => answer,
            Err(Failure::Timeout) => {
                return Refreshed::Transient {
                    why: format!(
                        "no answer to the refresh grant within {} ms",
                        self.options.refresh_deadline.as_millis()
                    ),
                    retry_after: Some(Duration::ZERO),
                };
            }
            Err(Failure::Other(why)) => return Refreshed::Transient { why, retry_after: None },
        };
        if status == 429 || status >= 500 {
            let retry_after = headers
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            return Refreshed::Transient { why: format!("the refresh grant was answered {status}"), retry_after };
        }
        match token_response(status, &body, &tokens.scopes) {
            // A refresh that names no new refresh token leaves the old one in force (RFC 6749 §6).
            Ok(mut fresh) => {
                if fresh.refresh.is_none() {
                    fresh.refresh = tokens.refresh.clone();
                }
                Refreshed::Tokens(fresh)
            }
            Err(why) => Refreshed::Refused(why),
        }
    }

    /// Discovery (once it has worked, kept), registration (once), then the code flow with PKCE.
    async fn authorize(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scope: Option<String>,
        mut kind: AuthEventKind,
    ) -> Result<(), Stop> {
        if !state.authorized_once {
            kind = AuthEventKind::Authorized;
        } else if kind == AuthEventKind::Reauthorized {
            if state.reauthorizations >= self.options.max_reauthorizations {
                return Err(format!("the re-authorization limit ({}) is reached", self.options.max_reauthorizations));
            }
            state.reauthorizations += 1;
        }
        if state.discovered.is_none() {
            state.discovered = Some(self.discover(challenge).await?);
        }
        let discovered = state.discovered.clone().ok_or("no authorization server")?;
        if state.client_id.is_none() {
            state.client_id = Some(self.register(&discovered).await?);
        }
        let client_id = state.client_id.clone().ok_or("no client_id")?;
        let verifier = random_secret()?;
        let csrf = random_secret()?;
        let code_challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let mut url = checked_url(&discovered.authorization_endpoint, "the authorization endpoint")?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("response_type", "code");
            query.append_pair("client_id", &client_id);
            query.append_pair("redirect_uri", REDIRECT_URI);
            query.append_pair("code_challenge", &code_challenge);
            query.append_pair("code_challenge_method", "S256");
            query.append_pair("state", &csrf);
            query.append_pair("resource", &self.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        lock(&self.record).authorization_requests += 1;
        let answer = tokio::time::timeout(REQUEST_DEADLINE, self.http.get(url).send()).await;
        let response = match answer {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(format!("the authorization request failed: {}", e.without_url())),
            Err(_) => return Err(format!("no answer from the authorization endpoint within {REQUEST_DEADLINE:?}")),
        };
        let location = response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok());
        let status = response.status().as_u16();
        let Some(location) = location.filter(|_| response.status().is_redirection()) else {
            let body = read_limited(response).await.unwrap_or_default();
            return Err(format!("the authorization endpoint answered {status}{}", oauth_error(&body)));
        };
        let redirect = url::Url::parse(location).map_err(|_| "the authorization redirect is not a URL".to_owned())?;
        let expected = url::Url::parse(REDIRECT_URI).map_err(|_| "bad redirect URI")?;
        if redirect.origin() != expected.origin() || redirect.path() != expected.path() {
            return Err("the authorization endpoint redirected somewhere else than the registered redirect_uri".into());
        }
        let pairs: Vec<(String, String)> = redirect.query_pairs().into_owned().collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if get("state") != Some(csrf.as_str()) {
            return Err("the authorization response's state is not the one sent (a forged response?)".into());
        }
        // RFC 9207: the response names the issuer it came from; another one is a mix-up.
        if let Some(iss) = get("iss")
            && iss != discovered.issuer
        {
            return Err(format!("the authorization response names issuer {iss:?}, not {:?}", discovered.issuer));
        }
        if let Some(error) = get("error") {
            let description = get("error_description").map(|d| format!(": {d}")).unwrap_or_default();
            return Err(format!("the authorization was refused: {error}{description}"));
        }
        let code = get("code").ok_or("the authorization response carries neither a code nor an error")?.to_owned();
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", verifier.as_str()),
            ("client_id", client_id.as_str()),
            ("resource", self.resource.as_str()),
        ];
        lock(&self.record).token_requests += 1;
        let (status, _, body) =
            self.post_form(&discovered.token_endpoint, &form, REQUEST_DEADLINE).await.map_err(|e| match e {
                Failure::Timeout => format!("no answer from the token endpoint within {REQUEST_DEADLINE:?}"),
                Failure::Other(why) => why,
            })?;
        let asked: Vec<String> = scope.iter().flat_map(|s| s.split(' ')).map(str::to_owned).collect();
        let tokens = token_response(status, &body, &asked)?;
        self.event(kind, Some(tokens.scopes.join(" ")), None);
        state.tokens = Some(tokens);
        state.authorized_once = true;
        Ok(())
    }

    /// The protected resource metadata, then the authorization server's, each checked.
    async fn discover(&self, challenge: &Challenge) -> Result<Discovered, Stop> {
        let resource = url::Url::parse(&self.resource).map_err(|_| "the endpoint URL does not parse")?;
        let prm_url = match &challenge.resource_metadata {
            Some(url) => url.clone(),
            // RFC 9728 §3.1: the well-known path inserted before the resource's path.
            None => {
                format!(
                    "{}/.well-known/oauth-protected-resource{}",
                    origin(&resource),
                    resource.path().trim_end_matches('/')
                )
            }
        };
        let prm = self.get_json(&prm_url, "the protected resource metadata").await?;
        // RFC 9728 §3.3: the metadata's resource must be the resource it was fetched for.
        let named = prm.get("resource").and_then(Value::as_str).unwrap_or_default();
        if url::Url::parse(named).ok().as_ref() != Some(&resource) {
            return Err(format!(
                "the protected resource metadata at {prm_url} names resource {named:?}, not {:?}",
                self.resource
            ));
        }
        let issuer = prm
            .pointer("/authorization_servers/0")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("the protected resource metadata at {prm_url} names no authorization server"))?
            .to_owned();
        let issuer_url = checked_url(&issuer, "the authorization server")?;
        let base = origin(&issuer_url);
        let path = issuer_url.path().trim_end_matches('/');
        // The order the MCP spec gives: RFC 8414 with path insertion, OpenID with path insertion, OpenID appended.
        let candidates = if path.is_empty() {
            vec![
                format!("{base}/.well-known/oauth-authorization-server"),
                format!("{base}/.well-known/openid-configuration"),
            ]
        } else {
            vec![
                format!("{base}/.well-known/oauth-authorization-server{path}"),
                format!("{base}/.well-known/openid-configuration{path}"),
                format!("{base}{path}/.well-known/openid-configuration"),
            ]
        };
        let mut tried = Vec::new();
        let mut metadata = None;
        for candidate in &candidates {
            match self.get_json(candidate, "the authorization server metadata").await {
                Ok(found) => {
                    metadata = Some(found);
                    break;
                }
                Err(why) => tried.push(why),
            }
        }
        let metadata = metadata.ok_or_else(|| format!("no authorization server metadata: {}", tried.join("; ")))?;
        // RFC 8414 §3.3: the issuer must be identical to the one the URL was built from.
        let named = metadata.get("issuer").and_then(Value::as_str).unwrap_or_default();
        if named != issuer {
            return Err(format!("the authorization server metadata names issuer {named:?}, not {issuer:?}"));
        }
        let methods = metadata.get("code_challenge_methods_supported").and_then(Value::as_array);
        if !methods.is_some_and(|m| m.iter().any(|m| m == "S256")) {
            return Err("the authorization server does not list PKCE S256 in code_challenge_methods_supported".into());
        }
        let endpoint = |name: &str| -> Result<Option<String>, Stop> {
            match metadata.get(name).and_then(Value::as_str) {
                Some(url) => checked_url(url, name).map(|u| Some(u.to_string())),
                None => Ok(None),
            }
        };
        Ok(Discovered {
            authorization_endpoint: endpoint("authorization_endpoint")?
                .ok_or("the authorization server metadata has no authorization_endpoint")?,
            token_endpoint: endpoint("token_endpoint")?
                .ok_or("the authorization server metadata has no token_endpoint")?,
            registration_endpoint: endpoint("registration_endpoint")?,
            issuer,
        })
    }

    /// Dynamic registration as a public client (`none`: PKCE protects the code).
    async fn register(&self, discovered: &Discovered) -> Result<String, Stop> {
        let endpoint = discovered.registration_endpoint.as_deref().ok_or(
            "the authorization server offers no registration_endpoint and the client has no client_id of its own",
        )?;
        let body = serde_json::json!({
            "client_name": "faultlab-reference-client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        lock(&self.record).registrations += 1;
        let request = self.http.post(endpoint).header("content-type", "application/json").body(body.to_string());
        let (status, body) = match tokio::time::timeout(REQUEST_DEADLINE, request.send()).await {
            Ok(Ok(response)) => (response.status().as_u16(), read_limited(response).await?),
            Ok(Err(e)) => return Err(format!("the registration request failed: {}", e.without_url())),
            Err(_) => return Err(format!("no answer from the registration endpoint within {REQUEST_DEADLINE:?}")),
        };
        if !(200..300).contains(&status) {
            return Err(format!("the registration was refused: {status}{}", oauth_error(&body)));
        }
        let value: Value = serde_json::from_slice(&body).map_err(|_| "the registration response is not JSON")?;
        value
            .get("client_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| "the registration response has no client_id".into())
    }

    async fn get_json(&self, url: &str, what: &str) -> Result<Value, Stop> {
        let checked = checked_url(url, what)?;
        let request = self.http.get(checked).header("accept", "application/json");
        let response = match tokio::time::timeout(REQUEST_DEADLINE, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(format!("{what} at {url}: {}", e.without_url())),
            Err(_) => return Err(format!("{what} at {url}: no answer within {REQUEST_DEADLINE:?}")),
        };
        let status = response.status().as_u16();
        if status != 200 {
            return Err(format!("{what} at {url} answered {status}"));
        }
        let body = read_limited(response).await?;
        serde_json::from_slice(&body).map_err(|_| format!("{what} at {url} is not JSON"))
    }

    async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        deadline: Duration,
    ) -> Result<(u16, HeaderMap, bytes::Bytes), Failure> {
        let checked = checked_url(url, "the token endpoint").map_err(Failure::Other)?;
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let request = self.http.post(checked).header("content-type", "application/x-www-form-urlencoded").body(body);
        let work = async {
            let response =
                request.send().await.map_err(|e| format!("the token request failed: {}", e.without_url()))?;
            let (status, headers) = (response.status().as_u16(), response.headers().clone());
            Ok::<_, String>((status, headers, read_limited(response).await?))
        };
        match tokio::time::timeout(deadline, work).await {
            Ok(answer) => answer.map_err(Failure::Other),
            Err(_) => Err(Failure::Timeout),
        }
    }
}

/// Sends `request` through the auth mode when it is on, as it is when it is off: the transport's one hook.
pub async fn send(auth: Option<&AuthSession>, request: reqwest::RequestBuilder) -> reqwest::Result<reqwest::Response> {
    match auth {
        Some(auth) => auth.send(request).await,
        None => request.send().await,
    }
}

enum Failure {
    Timeout,
    Other(String),
}

/// A token response's tokens, or why there are none. `asked` stands for the scopes when the response names none
/// (RFC 6749 §5.1: then they are the ones asked for).
fn token_response(status: u16, body: &[u8], asked: &[String]) -> Result<Tokens, Stop> {
    if status != 200 {
        return Err(format!("the token endpoint answered {status}{}", oauth_error(body)));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| "the token response is not JSON")?;
    let access = value.get("access_token").and_then(Value::as_str).ok_or("the token response has no access_token")?;
    let kind = value.get("token_type").and_then(Value::as_str).unwrap_or_default();
    if !kind.eq_ignore_ascii_case("bearer") {
        return Err(format!("the token response's token_type is {kind:?}, not Bearer"));
    }
    let scopes = match value.get("scope").and_then(Value::as_str) {
        Some(scope) => scope.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect(),
        None => asked.to_vec(),
    };
    Ok(Tokens {
        access: access.to_owned(),
        refresh: value.get("refresh_token").and_then(Value::as_str).map(str::to_owned),
        scopes,
    })
}

/// `: error (description)` from an OAuth error body, or nothing.
fn oauth_error(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return String::new() };
    let Some(error) = value.get("error").and_then(Value::as_str) else { return String::new() };
    match value.get("error_description").and_then(Value::as_str) {
        Some(description) => format!(": {error} ({description})"),
        None => format!(": {error}"),
    }
}

/// The URL, refused unless it is plain http:// on a loopback host like every target of the reference client.
fn checked_url(url: &str, what: &str) -> Result<url::Url, Stop> {
    let parsed = url::Url::parse(url).map_err(|_| format!("{what}: {url:?} is not a URL"))?;
    if crate::transport::is_loopback_http(&parsed) {
        Ok(parsed)
    } else {
        Err(format!(
            "{what}: {url:?} is not a plain http:// URL on a loopback host; the reference client goes nowhere else"
        ))
    }
}

fn origin(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}

/// 32 bytes from the OS's random source, base64url (43 characters): a PKCE verifier (RFC 7636 §4.1) or a state.
fn random_secret() -> Result<String, Stop> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("the OS random source failed: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

async fn read_limited(mut response: reqwest::Response) -> Result<bytes::Bytes, Stop> {
    let mut body = bytes::BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("the answer broke off: {}", e.without_url()))? {
        if body.len() + chunk.len() > MAX_AUTH_BODY_BYTES {
            return Err(format!("the answer is larger than {MAX_AUTH_BODY_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_quoted_and_token_params() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", scope="mcp:read mcp:write", error="insufficient_scope", error_description="say \"more\"""#,
        )
        .unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(c.scope.as_deref(), Some("mcp:read mcp:write"));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        let bare = Challenge::parse("bearer error=invalid_token,scope=a").unwrap();
        assert_eq!((bare.error.as_deref(), bare.scope.as_deref()), (Some("invalid_token"), Some("a")));
        assert_eq!(Challenge::parse("Bearer").unwrap(), Challenge::default());
        assert!(Challenge::parse(r#"Basic realm="x""#).is_none());
        // Broken input ends the parse, never panics.
        for broken in [r#"Bearer scope="unterminated"#, "Bearer =", "Bearer a=\"\\", "Bearer ,,, ="] {
            let _ = Challenge::parse(broken);
        }
    }

    #[test]
    fn a_record_difference_holds_only_what_came_after() {
        let event = |kind| AuthEvent { kind, scope: None, detail: None };
        let before =
            AuthRecord { events: vec![event(AuthEventKind::Authorized)], token_requests: 1, ..Default::default() };
        let mut after = before.clone();
        after.events.push(event(AuthEventKind::Refreshed));
        after.token_requests = 3;
        let delta = after.since(&before);
        assert_eq!(delta.events, vec![event(AuthEventKind::Refreshed)]);
        assert_eq!((delta.token_requests, delta.count(AuthEventKind::Refreshed)), (2, 1));
    }

    #[test]
    fn only_loopback_http_urls_are_fetched() {
        assert!(checked_url("http://127.0.0.1:8/x", "t").is_ok());
        assert!(checked_url("http://localhost/x", "t").is_ok());
        assert!(checked_url("https://127.0.0.1/x", "t").is_err());
        assert!(checked_url("http://example.com/x", "t").unwrap_err().contains("loopback"));
    }
}
