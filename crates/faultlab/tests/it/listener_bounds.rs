//! The control API's token kept out of `ps` (a private file, the environment) and weak tokens refused, and the
//! HTTP listeners' bounds through the real binary: the element limit on the proxy's front, the answering slots
//! with a small `--max-connections`.

use crate::common::{BIN, Lab, http_client, mcp_post};
use crate::reliability::control;
use std::process::Stdio;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_control_token_can_come_from_a_private_file_or_the_environment_and_stays_out_of_ps() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    let secret = "file-token-7f3a9c2e41d8b6";
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (lab, rules) = control(&["--control-token-file", file.to_str().unwrap()]).await;
    let http = http_client();
    assert_eq!(http.get(&rules).send().await.unwrap().status(), 401);
    assert_eq!(
        http.get(&rules).bearer_auth(secret).send().await.unwrap().status(),
        200,
        "the newline is not part of it"
    );
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", lab.child.id().unwrap())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains(secret), "the token is not on the command line");

    let env_secret = "env-token-52b8e07d19c4af";
    let args = ["proxy", "--control", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--", "sh", "-c", "cat > /dev/null"];
    let lab = Lab::start_env(&args, &[("FAULTLAB_CONTROL_TOKEN", env_secret)], "faultlab: proxy listening at ").await;
    let rules = lab.after("faultlab: control API at ");
    assert_eq!(http.get(&rules).send().await.unwrap().status(), 401);
    assert_eq!(http.get(&rules).bearer_auth(env_secret).send().await.unwrap().status(), 200);
}

#[test]
fn a_readable_token_file_and_weak_tokens_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "file-token-7f3a9c2e41d8b6").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let path = file.to_str().unwrap();
    let proxy = |extra: &[&str], vars: &[(&str, &str)]| {
        let mut args = vec!["proxy", "--control", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "true"]);
        let mut command = std::process::Command::new(BIN);
        command.args(&args).envs(vars.iter().copied()).stdin(Stdio::null());
        let output = command.output().unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (code, stderr) = proxy(&["--control-token-file", path], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(path) && stderr.contains("chmod 600"), "{stderr}");
    for weak in ["aaaaaaaaaaaaaaaaaaaa", "passwordpassword", "1212121212121212"] {
        let (code, stderr) = proxy(&["--control-token", weak], &[]);
        assert_eq!(code, Some(2), "{weak}: {stderr}");
        assert!(stderr.contains("--control-token") && !stderr.contains(weak), "{weak}: {stderr}");
        let (code, stderr) = proxy(&[], &[("FAULTLAB_CONTROL_TOKEN", weak)]);
        assert_eq!(code, Some(2), "{weak}: {stderr}");
        assert!(stderr.contains("FAULTLAB_CONTROL_TOKEN") && !stderr.contains(weak), "{weak}: {stderr}");
    }
}

#[tokio::test]
async fn the_http_proxy_refuses_a_body_of_a_million_tiny_values_before_forwarding_it() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("trajectory.jsonl");
    let args = ["--record", record.to_str().unwrap()];
    let (_lab, url) = Lab::bridge(&args, &[BIN, "serve"]).await;
    let start = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ping","arguments":{"pad":["#;
    let mut wide = start.to_owned();
    wide.push_str(&"{},".repeat((4 * 1024 * 1024 - 200) / 3));
    wide.push_str("{}]}}}");
    let response = mcp_post(&http_client(), &url, wide).send().await.unwrap();
    assert_eq!(response.status(), 413);
    let error: serde_json::Value = response.json().await.unwrap();
    assert_eq!(error["id"], 9, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("JSON elements"), "{error}");
    let trajectory = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(!trajectory.contains("tools/call"), "nothing was forwarded or recorded as a frame: {trajectory}");
}

#[tokio::test]
async fn serve_with_its_answering_slots_full_of_hangs_tells_a_newcomer_to_retry() {
    let (_lab, url) = Lab::serve(&["--max-connections", "4"]).await;
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let hang = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang","arguments":{}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{hang}",
        hang.len()
    );
    let connect = |source: &str| {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        socket.connect(addr)
    };
    // Three hangs from three addresses take the three answering slots of a cap of 4 (one is kept in reserve).
    let mut held = Vec::new();
    for source in ["127.0.0.1", "127.0.0.3", "127.0.0.4"] {
        let mut stream = connect(source).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        held.push(stream);
    }
    let deadline = tokio::time::Instant::now() + crate::common::PATIENCE;
    loop {
        // The hangs may not all have been admitted yet: a newcomer is answered either way, never closed silently.
        let mut newcomer = connect("127.0.0.2").await.unwrap();
        newcomer.write_all(request.as_bytes()).await.unwrap();
        let mut answer = vec![0; 4096];
        let n = tokio::time::timeout(std::time::Duration::from_millis(500), newcomer.read(&mut answer)).await;
        if let Ok(n) = n {
            let answer = String::from_utf8_lossy(&answer[..n.unwrap()]).to_ascii_lowercase();
            assert!(answer.starts_with("http/1.1 503"), "{answer}");
            assert!(answer.contains("\r\nretry-after: 1\r\n"), "{answer}");
            break;
        }
        // Admitted: a fourth hang; the slots are full now.
        held.push(newcomer);
        assert!(tokio::time::Instant::now() < deadline, "no newcomer was refused with 503");
    }
}
