//! A real client nobody here wrote: rmcp's own client against `faultlab serve`, over stdio and HTTP (both eras).
//! It connects, lists the tools, calls `ping` and `delay`, times out on `hang`, and sees `disconnect` as a
//! transport failure, never a result.

use crate::common::BIN;
use crate::common::{Lab, http_client};
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientConfig, ClientRequest, ProtocolVersion, ServerResult};
use rmcp::service::{PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(20);

fn params(tool: &str, args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().unwrap().clone())
}

fn legacy() -> ClientConfig {
    ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// The checks every transport must pass, up to (not including) `disconnect`.
async fn exercise(client: &RunningService<RoleClient, ClientConfig>) {
    let tools = tokio::time::timeout(PATIENCE, client.list_all_tools()).await.unwrap().unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"ping".into()) && names.contains(&"hang".into()), "{names:?}");

    let ping = client.call_tool(params("ping", json!({}))).await.unwrap();
    assert_eq!(ping.is_error, Some(false));
    let delay = client.call_tool(params("delay", json!({"delayMs": 20}))).await.unwrap();
    assert_eq!(delay.is_error, Some(false));

    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params("hang", json!({}))));
    let handle = client.send_cancellable_request(request, PeerRequestOptions::with_timeout(Duration::from_millis(300)));
    let outcome = handle.await.unwrap().await_response().await;
    assert!(matches!(outcome, Err(ServiceError::Timeout { .. })), "{outcome:?}");

    let after = client.call_tool(params("ping", json!({}))).await.unwrap();
    assert_eq!(after.is_error, Some(false), "the connection survives a timed-out call");
}

async fn expect_transport_failure(client: &RunningService<RoleClient, ClientConfig>) {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params("disconnect", json!({}))));
    let handle = client.send_cancellable_request(request, PeerRequestOptions::with_timeout(Duration::from_secs(5)));
    let outcome = match handle.await {
        Ok(handle) => handle.await_response().await,
        Err(e) => Err(e),
    };
    assert!(
        !matches!(outcome, Ok(ServerResult::CallToolResult(_)) | Err(ServiceError::Timeout { .. })),
        "disconnect must surface as a transport failure, got {outcome:?}"
    );
}

#[tokio::test]
async fn rmcp_client_over_stdio() {
    let mut command = tokio::process::Command::new(BIN);
    command.arg("serve");
    let (transport, _) = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().unwrap();
    let client = tokio::time::timeout(PATIENCE, legacy().serve(transport)).await.unwrap().unwrap();
    exercise(&client).await;
    expect_transport_failure(&client).await;
}

async fn http_server() -> (Lab, String) {
    Lab::serve(&[]).await
}

#[tokio::test]
async fn rmcp_client_over_http_legacy_session() {
    let (_server, url) = http_server().await;
    let config = StreamableHttpClientTransportConfig::with_uri(url).reinit_on_expired_session(false);
    let transport = StreamableHttpClientTransport::with_client(http_client(), config);
    let client = tokio::time::timeout(PATIENCE, legacy().serve(transport)).await.unwrap().unwrap();
    exercise(&client).await;
    expect_transport_failure(&client).await;
}

#[tokio::test]
async fn rmcp_client_over_http_modern() {
    let (_server, url) = http_server().await;
    let transport =
        StreamableHttpClientTransport::with_client(http_client(), StreamableHttpClientTransportConfig::with_uri(url));
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client =
        tokio::time::timeout(PATIENCE, ClientConfig::default().serve_with_lifecycle(transport, lifecycle)).await;
    let client = client.unwrap().unwrap();
    exercise(&client).await;
    expect_transport_failure(&client).await;
}
