//! No panic, and nothing lost, whatever crosses the proxy: random and truncated lines go through it in both
//! directions (an echo server in process as the upstream sends what the client sends back as server output; the
//! requests it leaves unanswered fail with its exit once it ends).

use faultlab_engine::Recorder;
use faultlab_proxy::front::stdio;
use faultlab_proxy::relay::ProxyOptions;
use faultlab_proxy::rules::{RuleSet, RulesFile};
use faultlab_proxy::trajectory::Trajectory;
use faultlab_proxy::upstream::in_process::InProcess;
use proptest::prelude::*;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

const VALID: &str = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}"#;

fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..120),
        (0usize..VALID.len()).prop_map(|cut| VALID.as_bytes()[..cut].to_vec()),
        Just(VALID.as_bytes().to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":5,"result":{"content":[]}}"#.to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call"}"#.to_vec()),
    ]
}

/// Runs the lines through the proxy in front of an echo server with `rules`; returns what the client read back.
fn relay(lines: &[Vec<u8>], rules: &str) -> Vec<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let file: RulesFile = yaml_serde::from_str(rules).unwrap();
        let (mut client, proxy_side) = tokio::io::duplex(1 << 20);
        let (input, output) = tokio::io::split(proxy_side);
        let trajectory = Arc::new(Trajectory::new(Recorder::discard()));
        let run = stdio::run(
            ProxyOptions::default(),
            InProcess::spawn(|pipe| async move {
                let (mut from_proxy, mut to_proxy) = tokio::io::split(pipe);
                let _ = tokio::io::copy(&mut from_proxy, &mut to_proxy).await;
            }),
            RuleSet::new(file).shared(),
            trajectory,
            input,
            output,
            CancellationToken::new(),
        );
        let proxy = tokio::spawn(run);
        for line in lines {
            client.write_all(line).await.unwrap();
            client.write_all(b"\n").await.unwrap();
        }
        client.shutdown().await.unwrap();
        let mut received = Vec::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(20), client.read_to_end(&mut received)).await;
        read.expect("the proxy finished in time").unwrap();
        proxy.await.expect("the proxy did not panic").unwrap();
        received
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn without_rules_every_line_comes_back_byte_for_byte(lines in proptest::collection::vec(line(), 1..8)) {
        let mut expected = Vec::new();
        for line in &lines {
            expected.extend_from_slice(line);
            expected.push(b'\n');
        }
        let received = relay(&lines, "rules: []");
        prop_assert_eq!(&received[..expected.len().min(received.len())], &expected[..]);
        // The echo answers no request: when it ends on the client's EOF, each one it left gets the exit as an error.
        for extra in received[expected.len()..].split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let error: serde_json::Value = serde_json::from_slice(extra).unwrap();
            prop_assert_eq!(&error["id"], &serde_json::json!(5));
            prop_assert_eq!(&error["error"]["data"]["upstreamExit"]["status"], &serde_json::json!("the in-process server ended"));
        }
    }

    #[test]
    fn rules_never_make_the_proxy_panic(lines in proptest::collection::vec(line(), 1..8)) {
        let rules = "seed: 3\nrules:\n  - name: a\n    match: { probability: 0.5 }\n    fault: { type: malformed, variant: result-with-error }\n  - name: b\n    match: { tool: \"e*\" }\n    mode: instead\n    fault: { type: truncated }\n";
        relay(&lines, rules);
    }
}
