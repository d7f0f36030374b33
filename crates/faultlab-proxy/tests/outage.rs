//! `server_outage` under the paused tokio clock: every request fails for exactly the window, whatever its tool,
//! then requests reach the upstream again. The proxy runs in-process with `cat` as its upstream (a forwarded request
//! comes back as the same line), so the window is measured on the test's clock, not by waiting.

use faultlab_engine::Recorder;
use faultlab_proxy::front::stdio;
use faultlab_proxy::relay::ProxyOptions;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_proxy::upstream::child::Child;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

fn call(id: i64, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}}).to_string()
}

#[tokio::test(start_paused = true)]
async fn an_outage_fails_every_tool_for_exactly_its_window_then_forwards_again() {
    let rules = "rules:\n  - name: down\n    match: {tool: ping}\n    mode: instead\n    fault: {type: server_outage, duration_ms: 300}\n";
    let file: RulesFile = yaml_serde::from_str(rules).unwrap();
    let (client, proxy_side) = tokio::io::duplex(1 << 16);
    let (input, output) = tokio::io::split(proxy_side);
    let trajectory = Arc::new(Trajectory::new(Recorder::discard()));
    let cat = tokio::process::Command::new("cat");
    let proxy = tokio::spawn(stdio::run(
        ProxyOptions::default(),
        Child(cat),
        RuleSet::new(file).shared(),
        trajectory,
        input,
        output,
        CancellationToken::new(),
    ));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    let mut ask = async |line: String| -> Value {
        write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        serde_json::from_str(&lines.next_line().await.unwrap().expect("a line")).unwrap()
    };

    let first = ask(call(1, "ping")).await;
    assert_eq!(first["error"]["data"]["fault"], "server_outage", "{first}");
    let other = ask(call(2, "delay")).await;
    assert_eq!(other["error"]["data"]["httpStatus"], 503, "another tool fails too: {other}");
    tokio::time::advance(Duration::from_millis(299)).await;
    let late = ask(call(3, "delay")).await;
    assert_eq!(late["error"]["data"]["httpStatus"], 503, "still down 299 ms in: {late}");
    tokio::time::advance(Duration::from_millis(1)).await;
    let after = ask(call(4, "delay")).await;
    assert_eq!(after, serde_json::from_str::<Value>(&call(4, "delay")).unwrap(), "forwarded to the upstream again");

    proxy.abort();
}
