//! Each auth fault on the wire: what the client sees, and that a client doing the right thing gets through.

use super::flow::{Tokens, authorize, authorize_as, refresh};
use super::*;

fn www(answer: &Answer) -> String {
    answer.headers.get(header::WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

async fn healthy(lab: &Lab) -> Tokens {
    authorize(lab, "").await.map_err(|a| a.text).unwrap()
}

#[tokio::test]
async fn token_expired_answers_invalid_token_mid_session_and_a_refresh_recovers() {
    let lab = Lab::new(Some(r#"{"type": "token_expired", "after": 2}"#));
    let tokens = healthy(&lab).await;
    for _ in 0..2 {
        assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::OK);
    }
    let expired = lab.mcp(Some(&tokens.access)).await;
    assert_eq!(expired.status, StatusCode::UNAUTHORIZED);
    assert!(www(&expired).contains("error=\"invalid_token\"") && www(&expired).contains("resource_metadata="));
    let refreshed = refresh(&lab, &tokens).await;
    assert_eq!(lab.mcp(refreshed.body["access_token"].as_str()).await.status, StatusCode::OK);
    assert_eq!(lab.events("token_refused")[0]["reason"], "expired");
}

#[tokio::test]
async fn token_revoked_kills_the_grant_and_only_a_new_authorization_recovers() {
    let lab = Lab::new(Some(r#"{"type": "token_revoked", "after": 1}"#));
    let tokens = healthy(&lab).await;
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::OK);
    let revoked = lab.mcp(Some(&tokens.access)).await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
    assert!(www(&revoked).contains("revoked"));
    assert_eq!(refresh(&lab, &tokens).await.body["error"], "invalid_grant");
    let again = authorize_as(&lab, &tokens.client_id, "").await.map_err(|a| a.text).unwrap();
    for _ in 0..3 {
        assert_eq!(lab.mcp(Some(&again.access)).await.status, StatusCode::OK, "the second grant is not revoked");
    }
}

#[tokio::test]
async fn refresh_invalid_grant_refuses_the_refresh_and_forgets_the_token() {
    let lab = Lab::new(Some("refresh_invalid_grant"));
    let tokens = healthy(&lab).await;
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::OK);
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::UNAUTHORIZED, "expired after one request");
    let first = refresh(&lab, &tokens).await;
    assert_eq!((first.status, first.body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    let looped = refresh(&lab, &tokens).await;
    assert_eq!(looped.body["error"], "invalid_grant", "the token is gone: a client that loops keeps failing");
    assert_eq!(lab.events("refresh_refused")[1]["reason"], "unknown");
    let again = authorize_as(&lab, &tokens.client_id, "").await.map_err(|a| a.text).unwrap();
    assert_eq!(lab.mcp(Some(&again.access)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn refresh_unavailable_answers_the_status_and_keeps_the_refresh_token_valid() {
    let lab = Lab::new(Some(r#"{"type": "refresh_unavailable", "status": 429, "retry_after": 2}"#));
    let tokens = healthy(&lab).await;
    let busy = refresh(&lab, &tokens).await;
    assert_eq!(busy.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(busy.headers[header::RETRY_AFTER], "2");
    assert_eq!(busy.body["error"], "temporarily_unavailable");
    let later = refresh(&lab, &tokens).await;
    assert_eq!(later.status, StatusCode::OK, "the same refresh token works once the server is back: {}", later.text);
}

#[tokio::test(start_paused = true)]
async fn refresh_slow_holds_the_answer_for_its_delay() {
    let lab = Lab::new(Some(r#"{"type": "refresh_slow", "delay_ms": 4000}"#));
    let tokens = healthy(&lab).await;
    let started = tokio::time::Instant::now();
    let answer = refresh(&lab, &tokens).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(started.elapsed() >= std::time::Duration::from_millis(4000), "{:?}", started.elapsed());
    let started = tokio::time::Instant::now();
    refresh(&lab, &tokens).await;
    assert!(started.elapsed() < std::time::Duration::from_millis(4000), "only the first refresh is slow");
}

#[tokio::test]
async fn refresh_rotation_issues_a_new_refresh_token_and_the_old_one_is_dead() {
    let lab = Lab::new(Some("refresh_rotation"));
    let tokens = healthy(&lab).await;
    let first = refresh(&lab, &tokens).await;
    let rotated = first.body["refresh_token"].as_str().expect("a new refresh token").to_owned();
    assert_ne!(Some(&rotated), tokens.refresh.as_ref());
    let reused = refresh(&lab, &tokens).await;
    assert_eq!(reused.body["error"], "invalid_grant");
    assert!(reused.text.contains("rotated"));
    let next = Tokens { client_id: tokens.client_id.clone(), access: String::new(), refresh: Some(rotated) };
    assert_eq!(refresh(&lab, &next).await.status, StatusCode::OK);
}

#[tokio::test]
async fn insufficient_scope_asks_for_the_union_and_a_step_up_passes() {
    let lab = Lab::new(Some(r#"{"type": "insufficient_scope", "after": 1}"#));
    let tokens = healthy(&lab).await;
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::OK);
    let refused = lab.mcp(Some(&tokens.access)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let challenge = www(&refused);
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp:read mcp:write\""),
        "{challenge}"
    );
    let stepped = authorize_as(&lab, &tokens.client_id, "mcp:read mcp:write").await.map_err(|a| a.text).unwrap();
    assert_eq!(lab.mcp(Some(&stepped.access)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn metadata_missing_answers_404_for_the_chosen_document_only() {
    let lab = Lab::new(Some("metadata_missing"));
    assert_eq!(lab.get("/.well-known/oauth-protected-resource/mcp").await.status, StatusCode::NOT_FOUND);
    assert!(www(&lab.mcp(None).await).contains("resource_metadata="), "the 401 still names it");
    assert_eq!(lab.get("/.well-known/oauth-authorization-server").await.status, StatusCode::OK);
    let lab = Lab::new(Some(r#"{"type": "metadata_missing", "document": "authorization_server"}"#));
    assert_eq!(lab.get("/.well-known/oauth-authorization-server").await.status, StatusCode::NOT_FOUND);
    assert_eq!(lab.get("/.well-known/openid-configuration").await.status, StatusCode::NOT_FOUND);
    assert_eq!(lab.get("/.well-known/oauth-protected-resource/mcp").await.status, StatusCode::OK);
}

#[tokio::test]
async fn issuer_and_resource_mismatch_name_another_issuer_or_resource() {
    let lab = Lab::new(Some("issuer_mismatch"));
    assert_eq!(
        lab.get("/.well-known/oauth-authorization-server").await.body["issuer"],
        format!("{ORIGIN}/not-this-issuer")
    );
    let lab = Lab::new(Some("resource_mismatch"));
    let prm = lab.get("/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(prm.body["resource"], format!("{ORIGIN}/not-this-resource"));
    assert_ne!(prm.body["resource"], RESOURCE);
}

#[tokio::test]
async fn registration_refused_answers_invalid_client_metadata() {
    let lab = Lab::new(Some("registration_refused"));
    let answer = authorize(&lab, "").await.err().expect("registration refused");
    assert_eq!(
        (answer.status, answer.body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_client_metadata"))
    );
}

#[tokio::test]
async fn access_denied_redirects_with_the_error_and_no_code_then_approves() {
    let lab = Lab::new(Some("access_denied"));
    let answer = authorize(&lab, "").await.err().expect("denied");
    let back = redirect_query(&answer);
    assert_eq!(back["error"], "access_denied");
    assert!(!back.contains_key("code"));
    let client_id = lab.events("client_registered")[0]["client_id"].as_str().unwrap().to_owned();
    assert!(authorize_as(&lab, &client_id, "").await.is_ok(), "only the first authorization is denied");
}

#[tokio::test(start_paused = true)]
async fn clock_skew_makes_a_new_token_not_yet_valid_until_the_skew_passes() {
    let lab = Lab::new(Some(r#"{"type": "clock_skew", "seconds": 30}"#));
    let tokens = healthy(&lab).await;
    let early = lab.mcp(Some(&tokens.access)).await;
    assert_eq!(early.status, StatusCode::UNAUTHORIZED);
    assert!(www(&early).contains("not yet valid"));
    tokio::time::advance(std::time::Duration::from_secs(30)).await;
    assert_eq!(lab.mcp(Some(&tokens.access)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn no_event_carries_a_secret() {
    let lab = Lab::new(Some("refresh_rotation"));
    let tokens = healthy(&lab).await;
    let refreshed = refresh(&lab, &tokens).await;
    lab.mcp(Some(&tokens.access)).await;
    let events = serde_json::to_string(&lab.auth.events()).unwrap();
    let secrets =
        [tokens.access.as_str(), tokens.refresh.as_deref().unwrap(), refreshed.body["access_token"].as_str().unwrap()];
    for secret in secrets {
        assert!(!events.contains(secret), "an event holds a token");
    }
    assert!(events.contains("token_issued"));
}

/// A lab playing a rules file's `auth` (checked as `faultlab proxy --rules` checks it).
fn matched_lab(rule: &str) -> Lab {
    let rule: faultlab_engine::rules::AuthRule = serde_json::from_str(rule).unwrap();
    rule.check().unwrap();
    Lab::with(AuthConfig { fault: Some(rule.fault), matcher: rule.matcher, ..AuthConfig::default() })
}

#[tokio::test]
async fn a_matched_token_expired_expires_the_token_at_the_first_write_only() {
    let lab = matched_lab(
        r#"{"fault": {"type": "token_expired"}, "match": {"method": "tools/call", "tool": "write_file", "nth": 1}}"#,
    );
    // A write with no token is refused for that, and does not use up the `nth: 1`.
    assert_eq!(lab.call(None, "write_file", "a.txt").await.status, StatusCode::UNAUTHORIZED);
    let tokens = healthy(&lab).await;
    for _ in 0..3 {
        // The fault's own count (a token lasting one request by default) is not in force: the match is.
        let read = lab.call(Some(&tokens.access), "read_file", "a.txt").await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        assert!(read.body["body"].as_str().unwrap().contains("\"read_file\""), "the body passes as read");
    }
    let write = lab.call(Some(&tokens.access), "write_file", "a.txt").await;
    assert_eq!(write.status, StatusCode::UNAUTHORIZED);
    let challenge = www(&write);
    assert!(challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata="), "{challenge}");
    assert!(challenge.contains("expired"), "{challenge}");
    let after = lab.call(Some(&tokens.access), "read_file", "a.txt").await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "the token is expired in the store, for every later request");
    let refreshed = refresh(&lab, &tokens).await;
    let access = refreshed.body["access_token"].as_str().unwrap();
    let again = lab.call(Some(access), "write_file", "a.txt").await;
    assert_eq!(again.status, StatusCode::OK, "only the first write: {}", again.text);
    assert!(again.body["body"].as_str().unwrap().contains("\"write_file\""));
    let matched = lab.events("fault_matched");
    assert_eq!(matched.len(), 1, "{matched:?}");
    assert_eq!(
        (&matched[0]["fault"], &matched[0]["tool"], &matched[0]["count"]),
        (&json!("token_expired"), &json!("write_file"), &json!(1))
    );
    let refused = lab.events("token_refused");
    assert_eq!((&refused[0]["reason"], &refused[0]["fault"]), (&json!("expired"), &json!("token_expired")));
    assert!(refused[1].get("fault").is_none(), "the old token refused later earned it: {refused:?}");
}

#[tokio::test]
async fn a_matched_insufficient_scope_asks_for_the_scope_at_the_matched_tool_only() {
    let lab = matched_lab(r#"{"fault": {"type": "insufficient_scope"}, "match": {"tool": "write_*"}}"#);
    let tokens = healthy(&lab).await;
    assert_eq!(lab.call(Some(&tokens.access), "read_file", "a.txt").await.status, StatusCode::OK);
    let refused = lab.call(Some(&tokens.access), "write_file", "a.txt").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let challenge = www(&refused);
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp:read mcp:write\""),
        "{challenge}"
    );
    assert_eq!(
        lab.call(Some(&tokens.access), "read_file", "a.txt").await.status,
        StatusCode::OK,
        "the token still does what needs no more scope"
    );
    let stepped = authorize_as(&lab, &tokens.client_id, "mcp:read mcp:write").await.map_err(|a| a.text).unwrap();
    for _ in 0..2 {
        assert_eq!(lab.call(Some(&stepped.access), "write_file", "a.txt").await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn a_matched_token_revoked_revokes_the_grant_at_the_matching_argument() {
    let lab = matched_lab(
        r#"{"fault": {"type": "token_revoked"}, "match": {"tool": "delete_file", "argument": {"pointer": "/path", "regex": "^keep"}}}"#,
    );
    let tokens = healthy(&lab).await;
    assert_eq!(lab.call(Some(&tokens.access), "delete_file", "scratch.txt").await.status, StatusCode::OK);
    let revoked = lab.call(Some(&tokens.access), "delete_file", "keep.txt").await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
    assert!(www(&revoked).contains("revoked"), "{}", www(&revoked));
    assert_eq!(refresh(&lab, &tokens).await.body["error"], "invalid_grant", "the whole grant is revoked");
    let again = authorize_as(&lab, &tokens.client_id, "").await.map_err(|a| a.text).unwrap();
    assert_eq!(lab.call(Some(&again.access), "delete_file", "scratch.txt").await.status, StatusCode::OK);
    assert_eq!(lab.events("grant_revoked").len(), 1);
}
