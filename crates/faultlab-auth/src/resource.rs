//! The protected resource: its metadata (RFC 9728) and the bearer check on every request to the MCP endpoint
//! (RFC 6750 challenges, with `resource_metadata` as the MCP authorization spec asks).

use crate::faults::{AuthFault, Document};
use crate::secret::Digest;
use crate::{Auth, READ_SCOPE, SCOPES, json_response};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use faultlab_wire::Frame;
use faultlab_wire::sync::lock;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::json;
use tokio::time::Instant;

/// The well-known path of the protected resource metadata (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The metadata document, for `GET` on its well-known path (with or without the resource's path inserted); `None`
/// for any other path.
pub fn metadata(auth: &Auth, path: &str, method: &Method) -> Option<Response> {
    let rest = path.strip_prefix(METADATA_PATH)?;
    if !(rest.is_empty() || rest == auth.path) {
        return Some((StatusCode::NOT_FOUND, "Not found").into_response());
    }
    if method != Method::GET {
        return Some(not_allowed());
    }
    let fault = auth.fault();
    if let Some(AuthFault::MetadataMissing(f)) = fault
        && f.document == Document::ProtectedResource
    {
        auth.event(
            "metadata_refused",
            json!({"document": "protected_resource", "status": 404, "fault": "metadata_missing"}),
        );
        return Some((StatusCode::NOT_FOUND, "Not found").into_response());
    }
    let resource = match fault {
        Some(AuthFault::ResourceMismatch(_)) => format!("{}/not-this-resource", auth.origin),
        _ => auth.resource(),
    };
    auth.event("metadata_served", json!({"document": "protected_resource"}));
    Some(json_response(
        StatusCode::OK,
        &json!({
            "resource": resource,
            "authorization_servers": [auth.issuer()],
            "scopes_supported": SCOPES,
            "bearer_methods_supported": ["header"],
            "resource_name": "faultlab",
        }),
    ))
}

pub(crate) fn not_allowed() -> Response {
    let mut response = (StatusCode::METHOD_NOT_ALLOWED, "Method not allowed").into_response();
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET"));
    response
}

/// Why a presented token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Unknown,
    Expired,
    Revoked,
    NotYetValid,
    OtherResource,
}

impl Refusal {
    fn reason(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
            Self::NotYetValid => "not_yet_valid",
            Self::OtherResource => "other_resource",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Self::Unknown => "the access token is not one this server issued",
            Self::Expired => "the access token expired",
            Self::Revoked => "the access token was revoked",
            Self::NotYetValid => "the access token is not yet valid",
            Self::OtherResource => "the access token was issued for another resource",
        }
    }
}

/// A refused request's answer, with what the refusal hook records of it.
pub struct Challenge {
    pub status: StatusCode,
    /// The challenge's `error` code; `None` when the request carried no credentials (RFC 6750 §3).
    pub error: Option<&'static str>,
    /// The auth fault that refused this very request (`token_expired`, ...), when one did.
    pub fault: Option<&'static str>,
    pub response: Response,
}

/// Admits a request to the MCP endpoint carrying a valid token for this resource, removing its `Authorization`
/// header; otherwise the `401`, `403` or `400` challenge. `frame` is its body, read when an `auth.match` needs it.
pub fn admit(auth: &Auth, request: &mut Request, frame: Option<&Frame>) -> Result<(), Challenge> {
    let values: Vec<&HeaderValue> = request.headers().get_all(header::AUTHORIZATION).iter().collect();
    let token = match values.as_slice() {
        [] => None,
        [one] => Some(bearer(one).ok_or_else(|| {
            challenge(
                auth,
                StatusCode::UNAUTHORIZED,
                Some(("invalid_request", "the Authorization header must be `Bearer TOKEN`")),
                READ_SCOPE,
            )
        })?),
        _ => {
            let refused = ("invalid_request", "more than one Authorization header");
            return Err(challenge(auth, StatusCode::BAD_REQUEST, Some(refused), READ_SCOPE));
        }
    };
    let Some(token) = token else {
        auth.event("token_missing", json!({"method": request.method().as_str()}));
        return Err(challenge(auth, StatusCode::UNAUTHORIZED, None, READ_SCOPE));
    };
    let digest = Digest::of(&token);
    let (checked, fault) = match check(auth, &digest, frame) {
        Ok(()) => {
            request.headers_mut().remove(header::AUTHORIZATION);
            return Ok(());
        }
        Err(Checked::ByFault(checked, fault)) => (*checked, Some(fault)),
        Err(checked) => (checked, None),
    };
    let mut challenge = match checked {
        Checked::Refused(refusal, client_id) => {
            let mut event = json!({"reason": refusal.reason(), "client_id": client_id});
            if let Some(fault) = fault {
                event["fault"] = fault.into();
            }
            auth.event("token_refused", event);
            challenge(auth, StatusCode::UNAUTHORIZED, Some(("invalid_token", refusal.description())), READ_SCOPE)
        }
        Checked::Scope { needed, client_id } => {
            let mut event = json!({"reason": "insufficient_scope", "client_id": client_id, "scope": needed});
            if let Some(fault) = fault {
                event["fault"] = fault.into();
            }
            auth.event("token_refused", event);
            let description = "the request needs more scope than the access token has";
            challenge(auth, StatusCode::FORBIDDEN, Some(("insufficient_scope", description)), &needed)
        }
        Checked::ByFault(..) => unreachable!("check wraps a refusal once"),
    };
    challenge.fault = fault;
    Err(challenge)
}

enum Checked {
    Refused(Refusal, Option<String>),
    Scope {
        needed: String,
        client_id: String,
    },
    /// A refusal the auth fault (named) made at this very request, rather than one the token earned.
    ByFault(Box<Checked>, &'static str),
}

impl Checked {
    fn by(self, fault: &AuthFault) -> Self {
        Self::ByFault(Box::new(self), fault.name())
    }
}

fn check(auth: &Auth, digest: &Digest, frame: Option<&Frame>) -> Result<(), Checked> {
    let now = Instant::now();
    let fault = auth.fault().cloned();
    // With an `auth.match` the fault acts at the matching requests only, not by its own count.
    let counted = auth.matcher.is_none();
    let timed = fault.as_ref().filter(|_| counted);
    // A JSON-RPC request (method and id) meeting the match's method, tool and argument; counted below only if its
    // token is otherwise valid, so a request refused anyway does not use up an `nth`.
    let meets = match (&auth.matcher, frame) {
        (Some(matcher), Some(frame)) => frame
            .method()
            .filter(|method| frame.id().is_some() && matcher.matches(frame, method))
            .map(|method| (method.to_owned(), frame.tool_name().map(str::to_owned))),
        _ => None,
    };
    let resource = auth.resource();
    let mut store = lock(&auth.store);
    let (authorized, revoked_once, matched) = (store.authorized, store.revoked_once, store.matched);
    let Some(access) = store.access.get_mut(digest) else {
        return Err(Checked::Refused(Refusal::Unknown, None));
    };
    let client = Some(access.client_id.clone());
    if access.revoked {
        return Err(Checked::Refused(Refusal::Revoked, client));
    }
    if access.expires <= now {
        return Err(Checked::Refused(Refusal::Expired, client));
    }
    if let Some(fault) = timed
        && fault.uses_per_token().is_some_and(|n| access.uses >= n)
    {
        return Err(Checked::Refused(Refusal::Expired, client).by(fault));
    }
    if access.not_before > now {
        return Err(Checked::Refused(Refusal::NotYetValid, client));
    }
    if access.resource != resource {
        return Err(Checked::Refused(Refusal::OtherResource, client));
    }
    if let (Some((method, tool)), Some(matcher), Some(fault)) = (meets, &auth.matcher, &fault) {
        let count = matched + 1;
        let fires = matcher.counted(count);
        let (grant, client_id) = (access.grant, access.client_id.clone());
        let lacks = match fault {
            AuthFault::InsufficientScope(f) if !access.scopes.contains(&f.scope) => {
                let mut needed = access.scopes.clone();
                needed.push(f.scope.clone());
                Some(needed.join(" "))
            }
            _ => None,
        };
        if fires && matches!(fault, AuthFault::TokenExpired(_)) {
            // Really expired: the token stays dead for every later request, as one that ran out would.
            access.expires = now;
        }
        store.matched = count;
        let refused = match fault {
            AuthFault::TokenExpired(_) if fires => Some(Checked::Refused(Refusal::Expired, Some(client_id.clone()))),
            AuthFault::TokenRevoked(_) if fires => {
                store.revoke_grant(grant);
                Some(Checked::Refused(Refusal::Revoked, Some(client_id.clone())))
            }
            AuthFault::InsufficientScope(_) if fires => {
                lacks.map(|needed| Checked::Scope { needed, client_id: client_id.clone() })
            }
            _ => None,
        };
        if let Some(refused) = refused {
            let refused = refused.by(fault);
            drop(store);
            let mut event = json!({"fault": fault.name(), "count": count, "method": method, "client_id": client_id});
            if let Some(tool) = tool {
                event["tool"] = tool.into();
            }
            auth.event("fault_matched", event);
            if matches!(fault, AuthFault::TokenRevoked(_)) {
                auth.event("grant_revoked", json!({"client_id": client_id, "fault": "token_revoked"}));
            }
            return Err(refused);
        }
        let Some(access) = store.access.get_mut(digest) else {
            return Err(Checked::Refused(Refusal::Unknown, None));
        };
        access.uses += 1;
        store.authorized += 1;
        return Ok(());
    }
    match timed {
        Some(AuthFault::InsufficientScope(f))
            if authorized >= u64::from(f.after) && !access.scopes.contains(&f.scope) =>
        {
            let mut needed = access.scopes.clone();
            needed.push(f.scope.clone());
            let scope = Checked::Scope { needed: needed.join(" "), client_id: access.client_id.clone() };
            return Err(Checked::ByFault(Box::new(scope), "insufficient_scope"));
        }
        // Only the first grant is revoked, once: a client that authorizes again can go on.
        Some(AuthFault::TokenRevoked(f)) if !revoked_once && access.grant == 1 && access.uses >= f.after => {
            let (grant, client_id) = (access.grant, access.client_id.clone());
            store.revoked_once = true;
            store.revoke_grant(grant);
            drop(store);
            auth.event("grant_revoked", json!({"client_id": client_id, "fault": "token_revoked"}));
            return Err(Checked::ByFault(
                Box::new(Checked::Refused(Refusal::Revoked, Some(client_id))),
                "token_revoked",
            ));
        }
        _ => {}
    }
    access.uses += 1;
    store.authorized += 1;
    Ok(())
}

/// `Authorization: Bearer TOKEN` (the scheme is case-insensitive, RFC 9110 §11.1); the token's characters are
/// RFC 6750's `b64token`.
fn bearer(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?;
    let (scheme, token) = text.split_once(' ')?;
    let token = token.trim();
    let b64token = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b);
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.bytes().all(b64token)).then(|| token.into())
}

/// The challenge: `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` plus `error` and
/// `error_description` when a token was presented (RFC 6750 §3: none when the request had no credentials).
fn challenge(auth: &Auth, status: StatusCode, error: Option<(&'static str, &str)>, scope: &str) -> Challenge {
    let mut value = format!("Bearer resource_metadata=\"{}\", scope=\"{scope}\"", auth.resource_metadata_url());
    if let Some((error, description)) = error {
        value.push_str(&format!(", error=\"{error}\", error_description=\"{description}\""));
    }
    let body = match error {
        Some((error, description)) => json!({"error": error, "error_description": description}),
        None => {
            json!({"error": "unauthorized", "error_description": "this MCP endpoint needs a bearer token; see resource_metadata"})
        }
    };
    let mut response = json_response(status, &body);
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    Challenge { status, error: error.map(|(error, _)| error), fault: None, response }
}
