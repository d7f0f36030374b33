//! The same rule, the same request, every front: the stdio front (lines) in front of the real server in process
//! and in front of its HTTP front, and the HTTP front (Streamable HTTP, a 2025-11-25 session) in front of its
//! HTTP front, all in this process (HTTP on loopback listeners). A catalogue fault must give the client the same
//! JSON-RPC message whichever way it goes.

use faultlab_client::transport::{HttpTransport, Incoming};
use faultlab_engine::Recorder;
use faultlab_http::guard::AllowedHosts;
use faultlab_proxy::front::http::Backend;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_proxy::upstream::http::Endpoint;
use faultlab_server::FaultServer;
use faultlab_server::http::HttpOptions;
use faultlab_wire::Frame;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::harness::{Client, call, http_front};

/// A loopback listener on a free port, and its `/mcp` URL.
async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    (listener, url)
}

/// `faultlab serve --transport http` in process until `shutdown`; its URL.
async fn http_server(shutdown: &CancellationToken) -> String {
    let (server, url) = listen().await;
    let options = HttpOptions::new("/mcp".into(), AllowedHosts::for_bind(server.local_addr().unwrap().ip()));
    let recorder = Recorder::discard();
    tokio::spawn(faultlab_server::http::serve(server, options, FaultServer::http, recorder, shutdown.clone()));
    url
}

fn rules_of(rule: &str) -> RulesFile {
    let mut file = RulesFile::default();
    file.rules.push(RulesFile::parse_spec(rule, 1).unwrap());
    file
}

/// `faultlab serve --transport http` and `faultlab proxy --listen … --upstream …` with `rule`, in process; a
/// session through the proxy. Returns the reply to `request`.
async fn over_http(rule: &str, request: &Value) -> Value {
    let shutdown = CancellationToken::new();
    let upstream = http_server(&shutdown).await;

    let trajectory = Arc::new(Trajectory::new(Recorder::discard()));
    let backend = Backend::url(upstream.parse().unwrap()).unwrap();
    let rules = RuleSet::new(rules_of(rule)).shared();
    let (url, _front) = http_front(backend, rules, trajectory, shutdown.clone()).await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = HttpTransport::new(&url, &BTreeMap::new(), tx).unwrap();
    let mut ask = async |message: &Value| -> Value {
        let frame = Frame::from_value(message.clone());
        let id = frame.id().cloned();
        client.post(&frame);
        loop {
            let incoming = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("an answer in time");
            match incoming.expect("the transport is open") {
                Incoming::Frame(reply) if reply.id() == id.as_ref() => return reply.value().cloned().unwrap(),
                Incoming::HttpStatus { id: got, body, .. } if Some(&got) == id.as_ref() => {
                    return serde_json::from_slice(&body).unwrap();
                }
                Incoming::Lost { detail, .. } => panic!("lost: {detail}"),
                _ => {}
            }
        }
    };
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",
        "capabilities":{},"clientInfo":{"name":"proxy-test","version":"1"}}});
    let reply = ask(&init).await;
    client.set_protocol(reply["result"]["protocolVersion"].as_str().unwrap());
    client.post(&Frame::from_value(json!({"jsonrpc":"2.0","method":"notifications/initialized"})));
    let reply = ask(request).await;
    client.end_session().await;
    shutdown.cancel();
    reply
}

/// The same through the stdio front, in front of the server on stdio or, with `http`, over HTTP.
async fn over_stdio(rule: &str, request: &Value, http: bool) -> Value {
    let shutdown = CancellationToken::new();
    let mut client = match http {
        false => Client::with_faults(&[rule]),
        true => Client::with_upstream(
            rules_of(rule),
            Endpoint(faultlab_proxy::remote::Remote::new(&http_server(&shutdown).await).unwrap()),
        ),
    };
    client.initialize().await;
    let reply = client.ask(request).await;
    client.finish_clean().await;
    shutdown.cancel();
    reply
}

#[tokio::test]
async fn each_catalogue_fault_gives_the_same_message_on_every_front() {
    let faults = [
        "{type: rate_limit, retry_after_sec: 3}",
        "{type: auth_expired}",
        "{type: invalid_schema}",
        "{type: missing_field}",
        "{type: empty}",
        "{type: partial_result}",
        "{type: wrong_value, pointer: /content/0/text, value: tampered}",
        "{type: contradictory}",
        "{type: malformed, variant: invalid-jsonrpc-version}",
    ];
    let request = call(1, "delay", json!({"delayMs": 2}));
    let text = json!({"status": "delayed", "delayMs": 2}).to_string();
    let plain =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}], "isError": false}});
    for fault in faults {
        let rule = format!("{{match: {{tool: delay}}, fault: {fault}}}");
        let stdio = over_stdio(&rule, &request, false).await;
        assert_eq!(stdio, over_stdio(&rule, &request, true).await, "{fault}: stdio front, HTTP upstream");
        assert_eq!(stdio, over_http(&rule, &request).await, "{fault}: HTTP front");
        assert_ne!(stdio, plain, "{fault} fired");
    }
}
