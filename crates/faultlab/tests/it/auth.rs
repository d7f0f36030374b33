//! `--auth` on the real binary: a client completes the headless OAuth flow against `faultlab serve` and the HTTP
//! proxy, calls MCP with its token, and no token, code or secret appears in anything the run wrote.

use crate::common::{Lab, PATIENCE, mcp_post};
use reqwest::StatusCode;
use serde_json::{Value, json};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

pub(crate) fn client() -> reqwest::Client {
    // Redirects are read, not followed: the headless approval's redirect carries the code.
    faultlab_client::tls::client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// The secrets a flow handled, to look for afterwards.
pub(crate) struct Flow {
    pub access: String,
    pub secrets: Vec<String>,
    /// The session its `initialize` opened (2025-11-25), if the endpoint gave one.
    pub session: Option<String>,
}

/// The JSON body of the answer to `request`.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// Discovery from the 401, confidential registration, headless authorization, the code exchange and a refresh;
/// the endpoint at `url`.
pub(crate) async fn run_flow(http: &reqwest::Client, url: &str) -> Flow {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let refused = mcp_post(http, url, init.to_string()).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let www = refused.headers()["www-authenticate"].to_str().unwrap().to_owned();
    let prm_url = www.split("resource_metadata=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let prm = json_of(http.get(&prm_url)).await;
    assert_eq!(prm["resource"], url);
    let issuer = prm["authorization_servers"][0].as_str().unwrap();
    let asm = json_of(http.get(format!("{issuer}/.well-known/oauth-authorization-server"))).await;
    assert_eq!(asm["issuer"], issuer);
    let registration = json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post", "grant_types": ["authorization_code", "refresh_token"]});
    let registered =
        http.post(asm["registration_endpoint"].as_str().unwrap()).header("content-type", "application/json");
    let client = json_of(registered.body(registration.to_string())).await;
    let (id, secret) = (client["client_id"].as_str().unwrap(), client["client_secret"].as_str().unwrap());
    let verifier = "a-verifier-of-more-than-forty-three-characters-0123";
    let challenge = faultlab_auth::secret::challenge_s256(verifier);
    let authorize = reqwest::Url::parse_with_params(
        asm["authorization_endpoint"].as_str().unwrap(),
        [
            ("response_type", "code"),
            ("client_id", id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "xyz"),
            ("resource", url),
        ],
    )
    .unwrap();
    let redirect = http.get(authorize).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    let location = reqwest::Url::parse(redirect.headers()["location"].to_str().unwrap()).unwrap();
    let code = location.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned();
    let token_endpoint = asm["token_endpoint"].as_str().unwrap();
    // application/x-www-form-urlencoded is a URL query's encoding.
    let token = async |pairs: &[(&str, &str)]| -> Value {
        let body = reqwest::Url::parse_with_params("http://form.invalid/", pairs).unwrap().query().unwrap().to_owned();
        json_of(http.post(token_endpoint).header("content-type", "application/x-www-form-urlencoded").body(body)).await
    };
    let tokens = token(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT),
        ("client_id", id),
        ("client_secret", secret),
        ("code_verifier", verifier),
        ("resource", url),
    ])
    .await;
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let refreshed = token(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh),
        ("client_id", id),
        ("client_secret", secret),
    ])
    .await;
    let access = refreshed["access_token"].as_str().unwrap().to_owned();
    let first_access = tokens["access_token"].as_str().unwrap().to_owned();
    let answer = mcp_post(http, url, init.to_string()).bearer_auth(&access).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK, "initialize with the token is answered");
    let session = answer.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let text = answer.text().await.unwrap();
    assert!(text.contains("\"result\""), "{text}");
    Flow { secrets: vec![access.clone(), first_access, refresh.to_owned(), code, secret.to_owned()], access, session }
}

/// `faultlab proxy --listen 127.0.0.1:0 --auth`, recording to `record`, with `options` (a rules file, say) before
/// `--` and the upstream's command after it: the lab, its stderr's rest, and the MCP endpoint's URL.
pub(crate) async fn auth_proxy(
    record: &std::path::Path,
    options: &[&str],
    upstream: &[&str],
) -> (Lab, tokio::task::JoinHandle<String>, String) {
    let mut args = vec!["proxy", "--listen", "127.0.0.1:0", "--auth", "--record", record.to_str().unwrap()];
    args.extend(options);
    args.push("--");
    args.extend(upstream);
    let (lab, rest) = Lab::start_capturing(&args, "faultlab: OAuth required").await;
    let url = lab.after("faultlab: proxy listening at ");
    (lab, rest, url)
}

pub(crate) async fn ended(lab: &mut Lab, rest: tokio::task::JoinHandle<String>) -> String {
    lab.terminate();
    tokio::time::timeout(PATIENCE, lab.child.wait()).await.unwrap().unwrap();
    let mut all = lab.banner.join("\n");
    all.push_str(&tokio::time::timeout(PATIENCE, rest).await.unwrap().unwrap());
    all
}

#[tokio::test]
async fn serve_with_auth_completes_the_headless_flow_and_writes_no_secret() {
    let (mut lab, rest) =
        Lab::start_capturing(&["serve", "--transport", "http", "--port", "0", "--auth"], "faultlab: OAuth required")
            .await;
    let url = lab.after("faultlab: listening at ");
    let flow = run_flow(&client(), &url).await;
    let stderr = ended(&mut lab, rest).await;
    assert!(stderr.contains("\"auth\":\"token_issued\""), "auth events are written: {stderr}");
    for secret in &flow.secrets {
        assert!(!stderr.contains(secret.as_str()), "a secret is on stderr");
    }
    assert!(!flow.access.is_empty());
}

#[tokio::test]
async fn the_proxy_with_auth_is_the_resource_and_neither_its_trajectory_nor_its_log_holds_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let bin = crate::common::bin();
    let (mut lab, rest, url) = auth_proxy(&record, &[], &[bin.as_str(), "serve"]).await;
    let http = client();
    let mut flow = run_flow(&http, &url).await;
    // A call with a token the authorization server never issued: refused, and recorded as a refused call.
    let forged = "Zm9yZ2VkLXRva2VuLW5vdC1pc3N1ZWQtYnktdGhlLXNlcnZlcg";
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let answer = mcp_post(&http, &url, call.to_string()).bearer_auth(forged).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    flow.secrets.push(forged.to_owned());
    let stderr = ended(&mut lab, rest).await;
    let trajectory = std::fs::read_to_string(&record).unwrap();
    assert!(trajectory.contains("initialize"), "the authorized request went upstream and was recorded");
    let read = faultlab_engine::trajectory::Trajectory::parse(&trajectory).unwrap();
    let refused: Vec<_> = read
        .exchanges()
        .iter()
        .filter_map(|e| e.refused().map(|r| (e.method(), e.tool(), e.id().clone(), r.status, r.error.clone())))
        .collect();
    let missing = ("initialize", None, json!(1), 401, None);
    let invalid = ("tools/call", Some("echo"), json!(7), 401, Some("invalid_token".to_owned()));
    assert_eq!(refused, [missing, invalid], "{trajectory}");
    assert!(read.tool_calls().iter().all(|c| c.failed()), "a refused call is a failed call: {trajectory}");
    for secret in &flow.secrets {
        assert!(!stderr.contains(secret.as_str()), "a secret is on stderr");
        assert!(!trajectory.contains(secret.as_str()), "a secret is in the trajectory");
    }
}

#[test]
fn auth_options_are_checked() {
    let out = crate::common::faultlab().args(["serve", "--auth"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--auth requires --transport http"));
    let out = crate::common::faultlab()
        .args([
            "serve",
            "--transport",
            "http",
            "--port",
            "0",
            "--auth",
            "--auth-fault",
            r#"{"type": "token_expired", "after": 0}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("token_expired.after") && stderr.contains("1 to 1000000"), "{stderr}");
    let out = crate::common::faultlab()
        .args(["serve", "--transport", "http", "--auth-fault", "clock_skew"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--auth-fault needs --auth");
}

/// A refused request's body is read before the 401, so the client's connection stays open for its retry. Left
/// unread, the connection was closed after the 401, and the Python SDK's retry on it failed with "Server
/// disconnected without sending a response" (reproduced with interop/python/oauth_client.py before the fix).
#[tokio::test]
async fn a_refused_request_leaves_its_connection_open_for_the_retry() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (lab, _rest) =
        Lab::start_capturing(&["serve", "--transport", "http", "--port", "0", "--auth"], "faultlab: OAuth required")
            .await;
    let url = reqwest::Url::parse(&lab.after("faultlab: listening at ")).unwrap();
    let address = format!("127.0.0.1:{}", url.port().unwrap());
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    // A body large enough not to arrive with the head in one read.
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(256 * 1024));
    let request = |body: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let mut answers = Vec::new();
    for _ in 0..2 {
        socket.write_all(request(&body).as_bytes()).await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            let n = tokio::time::timeout(PATIENCE, socket.read(&mut byte)).await.unwrap().unwrap();
            assert!(n > 0, "the connection was closed after {} answers", answers.len());
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse().unwrap()))
            .unwrap();
        let mut rest = vec![0u8; length];
        socket.read_exact(&mut rest).await.unwrap();
        assert!(!head.to_ascii_lowercase().contains("connection: close"), "{head}");
        answers.push(head.lines().next().unwrap().to_owned());
    }
    assert_eq!(answers, ["HTTP/1.1 401 Unauthorized", "HTTP/1.1 401 Unauthorized"]);
    lab.terminate();
}
