//! The healthy flow, as an MCP client runs it, and what the server refuses on the way.

use super::*;

/// Tokens a client holds.
pub struct Tokens {
    pub client_id: String,
    pub access: String,
    pub refresh: Option<String>,
}

/// Discovery, registration, authorization (headless) and the code exchange; returns the tokens.
pub async fn authorize(lab: &Lab, scope: &str) -> Result<Tokens, Answer> {
    let client = lab.register(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]})).await;
    if client.status != StatusCode::CREATED {
        return Err(client);
    }
    let client_id = client.body["client_id"].as_str().unwrap().to_owned();
    authorize_as(lab, &client_id, scope).await
}

pub async fn authorize_as(lab: &Lab, client_id: &str, scope: &str) -> Result<Tokens, Answer> {
    let (verifier, challenge) = pkce("verifier");
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "s1"),
            ("resource", RESOURCE),
            ("scope", scope),
        ])
        .finish();
    let redirect = lab.get(&format!("/oauth/authorize?{query}")).await;
    let back = redirect_query(&redirect);
    assert_eq!(back["state"], "s1");
    let Some(code) = back.get("code") else { return Err(redirect) };
    let token = lab
        .form(
            "/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("client_id", client_id),
                ("code_verifier", &verifier),
                ("resource", RESOURCE),
            ],
        )
        .await;
    if token.status != StatusCode::OK {
        return Err(token);
    }
    Ok(Tokens {
        client_id: client_id.into(),
        access: token.body["access_token"].as_str().unwrap().into(),
        refresh: token.body["refresh_token"].as_str().map(Into::into),
    })
}

pub async fn refresh(lab: &Lab, tokens: &Tokens) -> Answer {
    let refresh = tokens.refresh.as_deref().unwrap();
    lab.form(
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", &tokens.client_id),
            ("resource", RESOURCE),
        ],
    )
    .await
}

fn challenge(answer: &Answer) -> String {
    answer.headers[header::WWW_AUTHENTICATE].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_client_discovers_registers_authorizes_headless_and_calls_with_its_token() {
    let lab = Lab::new(None);
    let refused = lab.mcp(None).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let www = challenge(&refused);
    let prm_url = format!("{ORIGIN}/.well-known/oauth-protected-resource/mcp");
    assert!(www.starts_with("Bearer ") && www.contains(&format!("resource_metadata=\"{prm_url}\"")), "{www}");
    assert!(!www.contains("error="), "no error code when no token was sent (RFC 6750 §3): {www}");

    let prm = lab.get("/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(prm.body["resource"], RESOURCE);
    assert_eq!(prm.body["authorization_servers"], json!([ORIGIN]));
    assert_eq!(lab.get("/.well-known/oauth-protected-resource").await.body, prm.body, "the root form too");

    let asm = lab.get("/.well-known/oauth-authorization-server").await;
    assert_eq!(asm.body["issuer"], ORIGIN);
    assert_eq!(asm.body["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm.body["token_endpoint"], format!("{ORIGIN}/oauth/token"));

    let tokens = authorize(&lab, "mcp:read").await.map_err(|a| a.text).unwrap();
    let ok = lab.mcp(Some(&tokens.access)).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text);
    assert_eq!(ok.body["authorization_seen"], false, "the token is not passed on to the endpoint");

    let refreshed = refresh(&lab, &tokens).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.text);
    assert_eq!(refreshed.headers[header::CACHE_CONTROL], "no-store");
    let new_access = refreshed.body["access_token"].as_str().unwrap();
    assert_ne!(new_access, tokens.access);
    assert_eq!(lab.mcp(Some(new_access)).await.status, StatusCode::OK);

    // Revoking the refresh token ends the grant: both access tokens and the refresh token are dead.
    let revoked = lab
        .form("/oauth/revoke", &[("token", tokens.refresh.as_deref().unwrap()), ("client_id", &tokens.client_id)])
        .await;
    assert_eq!(revoked.status, StatusCode::OK);
    let after = lab.mcp(Some(new_access)).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
    assert!(challenge(&after).contains("error=\"invalid_token\""));
    assert_eq!(refresh(&lab, &tokens).await.body["error"], "invalid_grant");
}

#[tokio::test]
async fn pkce_is_required_and_a_code_works_once_with_its_own_verifier() {
    let lab = Lab::new(None);
    let client = lab.register(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})).await;
    let client_id = client.body["client_id"].as_str().unwrap();
    // No challenge, and the plain method: refused, said on the redirect.
    for extra in ["", "&code_challenge=abc&code_challenge_method=plain"] {
        let answer = lab
            .get(&format!("/oauth/authorize?response_type=code&client_id={client_id}&redirect_uri={REDIRECT}{extra}"))
            .await;
        assert_eq!(redirect_query(&answer)["error"], "invalid_request");
    }
    // A redirect URI the client did not register is never redirected to.
    let answer = lab
        .get(&format!("/oauth/authorize?response_type=code&client_id={client_id}&redirect_uri=http://evil.example/"))
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(!answer.headers.contains_key(header::LOCATION));

    let (_, challenge) = pkce("right");
    let answer = lab
        .get(&format!(
            "/oauth/authorize?response_type=code&client_id={client_id}&redirect_uri={REDIRECT}&code_challenge={challenge}&code_challenge_method=S256"
        ))
        .await;
    let back = redirect_query(&answer);
    assert_eq!(back["iss"], ORIGIN);
    let code = &back["code"];
    let exchange = |verifier: String| {
        let code = code.clone();
        let client_id = client_id.to_owned();
        let lab = &lab;
        async move {
            lab.form(
                "/oauth/token",
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", REDIRECT),
                    ("client_id", &client_id),
                    ("code_verifier", &verifier),
                ],
            )
            .await
        }
    };
    let wrong = exchange(pkce("wrong").0).await;
    assert_eq!(wrong.body["error"], "invalid_grant", "{}", wrong.text);
    // The wrong verifier used the code up: the right one now fails too (a code is single-use).
    assert_eq!(exchange(pkce("right").0).await.body["error"], "invalid_grant");
}

#[tokio::test]
async fn a_confidential_client_must_present_its_secret_and_a_token_for_another_resource_is_refused() {
    let lab = Lab::new(None);
    let client =
        lab.register(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"})).await;
    assert_eq!(client.status, StatusCode::CREATED);
    let (id, secret) = (client.body["client_id"].as_str().unwrap(), client.body["client_secret"].as_str().unwrap());
    let answer = lab
        .form(
            "/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", "x"), ("client_id", id), ("client_secret", "wrong")],
        )
        .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(answer.body["error"], "invalid_client");
    let answer = lab
        .form(
            "/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", "x"), ("client_id", id), ("client_secret", secret)],
        )
        .await;
    assert_eq!(answer.body["error"], "invalid_grant", "the secret passed; the refresh token is unknown");
    let answer = lab
        .form(
            "/oauth/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", "x"),
                ("client_id", id),
                ("client_secret", secret),
                ("resource", "http://127.0.0.1:4000/other"),
            ],
        )
        .await;
    assert_eq!(answer.body["error"], "invalid_target");
}

#[tokio::test]
async fn requests_from_a_foreign_origin_are_refused_before_any_auth_endpoint() {
    let lab = Lab::new(None);
    let request = base("/oauth/register")
        .method("POST")
        .header(header::ORIGIN, "http://evil.example")
        .body(axum::body::Body::from(json!({"redirect_uris": [REDIRECT]}).to_string()))
        .unwrap();
    assert_eq!(lab.send(request).await.status, StatusCode::FORBIDDEN);
    assert!(lab.events("client_registered").is_empty());
    let request = Request::builder()
        .uri("/.well-known/oauth-authorization-server")
        .header(header::HOST, "evil.example")
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(lab.send(request).await.status, StatusCode::FORBIDDEN);
}

#[tokio::test(start_paused = true)]
async fn an_access_token_expires_after_its_lifetime() {
    let lab = Lab::new(None);
    let tokens = authorize(&lab, "").await.map_err(|a| a.text).unwrap();
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::OK);
    tokio::time::advance(faultlab_auth::TOKEN_TTL).await;
    let expired = lab.mcp(Some(&tokens.access)).await;
    assert_eq!(expired.status, StatusCode::UNAUTHORIZED);
    assert!(challenge(&expired).contains("the access token expired"));
}

/// What the refusal hook was told of one request: status, challenge error, HTTP method, body (or why unread).
type Told = (u16, Option<&'static str>, String, Result<String, String>);

/// Every request to the endpoint the authorization refuses reaches the refusal hook (the HTTP proxy records it in
/// its trajectory) with its status, the challenge's error code, its method and its body, whatever refused it; a
/// body past the endpoint's limit is not read and says so; an admitted request and the auth endpoints' own
/// refusals do not reach it; nothing it is handed holds the token. (`insufficient_scope` after one request, for
/// the 403.)
#[tokio::test]
async fn each_refused_request_to_the_endpoint_reaches_the_refusal_hook_with_its_body() {
    let told: Arc<std::sync::Mutex<Vec<Told>>> = Arc::default();
    let hook: faultlab_auth::RefusalHook = {
        let told = told.clone();
        Arc::new(move |r: faultlab_auth::Refused<'_>| {
            let body = r.body.map(|b| String::from_utf8_lossy(b).into_owned()).map_err(str::to_owned);
            told.lock().unwrap().push((r.status, r.error, r.method.to_owned(), body));
        })
    };
    let fault = AuthFault::parse(r#"{"type": "insufficient_scope", "after": 1}"#).unwrap();
    let lab = Lab::with(AuthConfig { refusals: Some(hook), fault: Some(fault), ..AuthConfig::default() });
    let forged = "Zm9yZ2VkLXRva2Vu";
    assert_eq!(lab.mcp(None).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(lab.mcp(Some(forged)).await.status, StatusCode::UNAUTHORIZED);
    let post = || base("/mcp").method("POST").header(header::CONTENT_TYPE, "application/json");
    let basic = post().header(header::AUTHORIZATION, "Basic eDp5").body(axum::body::Body::from("not json")).unwrap();
    assert_eq!(lab.send(basic).await.status, StatusCode::UNAUTHORIZED);
    let twice = post()
        .header(header::AUTHORIZATION, format!("Bearer {forged}"))
        .header(header::AUTHORIZATION, format!("Bearer {forged}"))
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(lab.send(twice).await.status, StatusCode::BAD_REQUEST);
    let stream = base("/mcp").method("GET").body(axum::body::Body::empty()).unwrap();
    assert_eq!(lab.send(stream).await.status, StatusCode::UNAUTHORIZED);
    let large = post().body(axum::body::Body::from(vec![b' '; 4 * 1024 * 1024 + 1])).unwrap();
    assert_eq!(lab.send(large).await.status, StatusCode::UNAUTHORIZED);
    // Not the endpoint: a refused registration is the authorization server's answer, not a refused call.
    assert_eq!(lab.register(json!({"redirect_uris": "nope"})).await.status, StatusCode::BAD_REQUEST);
    let tokens = authorize(&lab, "mcp:read").await.map_err(|a| a.text).unwrap();
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::OK);
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::FORBIDDEN);

    let ping = Ok(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_owned());
    let told = told.lock().unwrap().clone();
    let expected: Vec<Told> = vec![
        (401, None, "POST".into(), ping.clone()),
        (401, Some("invalid_token"), "POST".into(), ping.clone()),
        (401, Some("invalid_request"), "POST".into(), Ok("not json".into())),
        (400, Some("invalid_request"), "POST".into(), Ok(String::new())),
        (401, None, "GET".into(), Ok(String::new())),
        (401, None, "POST".into(), Err("larger than the endpoint's 4 MiB".into())),
        (403, Some("insufficient_scope"), "POST".into(), ping),
    ];
    assert_eq!(told, expected);
    assert!(!format!("{told:?}").contains(forged));
}
