//! The control agents on the model hop: before each plan step they ask a real scripted model endpoint
//! (`faultlab-model`, in process on a port of the kernel's choice, with the task's script and the faults each test
//! names), and run the call it asks for on a fake server that answers every call with a path. The endpoint's recording says
//! how many requests each agent made, and when.

use faultlab_engine::rules::RulesFile;
use faultlab_eval::agent::model::Chat;
use faultlab_eval::agent::{CallResult, ControlAgent, Tools, follow};
use faultlab_eval::contract::{Claim, ClaimStatus};
use faultlab_eval::task::Plan;
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The built-in task's model script: read input.txt and keep its nonce, write it to output.txt, answer with it.
const SCRIPT: &str = include_str!("../../builtin/model/scripts/nonce-copy.yaml");
const NONCE: &str = "0123456789abcdef";

/// The run's model endpoint, with `rules` (YAML, the `faultlab model --rules` format), recording to a tempdir.
struct Hop {
    base: String,
    dir: tempfile::TempDir,
    stop: CancellationToken,
}

impl Hop {
    async fn start(rules: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.yaml");
        std::fs::write(&path, rules).unwrap();
        let rules = faultlab_model::rules(RulesFile::load(&path).unwrap()).unwrap();
        let options = faultlab_model::Options {
            script: faultlab_model::script::Script::parse(SCRIPT, false).unwrap(),
            rules,
            record: Some(Box::new(std::fs::File::create(dir.path().join("model.jsonl")).unwrap())),
            allowed: faultlab_http::guard::AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            limits: faultlab_http::server::Limits::default(),
            max_request_bytes: faultlab_model::MAX_REQUEST_BYTES,
            request_budget: faultlab_model::REQUEST_MEMORY_BUDGET,
            upstream: None,
            replay: None,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let stop = CancellationToken::new();
        tokio::spawn(faultlab_model::serve(listener, options, stop.clone()));
        Self { base, dir, stop }
    }

    /// Every request the endpoint recorded: (ms since the endpoint started, the rule that fired, if any).
    fn requests(&self) -> Vec<(u64, Option<String>)> {
        let text = std::fs::read_to_string(self.dir.path().join("model.jsonl")).unwrap();
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .map(|l| (l["at_ms"].as_u64().unwrap(), l["fault"]["rule"].as_str().map(str::to_owned)))
            .collect()
    }
}

impl Drop for Hop {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A server that answers every call with a path (the read with the nonce), and the agent's conversation with the
/// model.
struct Server {
    calls: Vec<(String, Value)>,
    chat: Option<Chat>,
}

impl Tools for Server {
    async fn call(&mut self, tool: &str, arguments: Value, _deadline: Option<Duration>) -> CallResult {
        let pathless = arguments.get("path").is_none();
        self.calls.push((tool.to_owned(), arguments));
        if pathless {
            // As the workspace server refuses it.
            return CallResult::Failed("tool error: failed to deserialize parameters: missing field `path`".into());
        }
        match tool {
            "read_file" => CallResult::Done(format!("Release notes draft.\nnonce: {NONCE}\n")),
            _ => CallResult::Done("wrote 16 bytes to output.txt".into()),
        }
    }

    fn model(&mut self) -> Option<&mut Chat> {
        self.chat.as_mut()
    }
}

/// The built-in task's plan.
fn plan() -> Plan {
    serde_json::from_value(json!({
        "call_timeout_ms": 500,
        "steps": [
            {"tool": "read_file", "arguments": {"path": "input.txt"}, "expect": "nonce: ([0-9a-f]{16})", "save": "nonce"},
            {"tool": "write_file", "arguments": {"path": "output.txt", "content": "{{nonce}}"}, "idempotent": false,
             "verify": {"tool": "read_file", "arguments": {"path": "output.txt"}, "expect": "{{nonce}}"}}
        ],
        "answer": "{{nonce}}"
    }))
    .unwrap()
}

/// `kind` follows the plan, asking the model at `hop`; its claim and the server's calls.
async fn run(kind: ControlAgent, hop: &Hop) -> (Claim, Vec<(String, Value)>) {
    let chat = Chat::new(&hop.base, "copy the nonce", vec!["read_file".into(), "write_file".into()]).unwrap();
    let mut server = Server { calls: Vec::new(), chat: Some(chat) };
    let claim = follow(kind, &plan(), &mut server).await;
    (claim, server.calls)
}

/// Rules that fire `fault` at each of the first `n` model requests.
fn first(n: u64, fault: &str) -> String {
    let rules: Vec<String> =
        (1..=n).map(|i| format!("  - {{name: r{i}, match: {{nth: {i}}}, fault: {fault}}}\n")).collect();
    format!("rules:\n{}", rules.concat())
}

#[tokio::test]
async fn good_does_not_run_a_cut_call_asks_again_and_runs_what_the_model_asks_for() {
    let hop = Hop::start(&first(1, "{type: tool_call_cut}")).await;
    let (claim, calls) = run(ControlAgent::Good, &hop).await;
    assert_eq!((claim.status, claim.answer.as_deref()), (ClaimStatus::Success, Some(NONCE)), "{claim:?}");
    let expected = [
        ("read_file".to_owned(), json!({"path": "input.txt"})),
        // The model's arguments, filled in from the read's result the agent passed back.
        ("write_file".to_owned(), json!({"path": "output.txt", "content": NONCE})),
    ];
    assert_eq!(calls, expected);
    let requests = hop.requests();
    assert_eq!(requests.len(), 3, "the cut answer, the same asked again, then the write's turn: {requests:?}");
    assert!(requests[1].0 >= requests[0].0 + 100, "asked again after its 100 ms pause: {requests:?}");
}

#[tokio::test]
async fn the_blind_retrier_runs_a_cut_call_with_empty_arguments_and_gives_up_stops_at_it() {
    let hop = Hop::start(&first(1, "{type: tool_call_cut}")).await;
    let (claim, calls) = run(ControlAgent::BlindRetrier, &hop).await;
    // It took the cut call for a whole one, {} for its arguments, and sent it three times.
    assert_eq!(calls, vec![("read_file".to_owned(), json!({})); 3]);
    assert_eq!(claim.status, ClaimStatus::Failure, "{claim:?}");
    assert!(claim.message.contains("failed 3 times") && claim.message.contains("path"), "{}", claim.message);
    assert_eq!(hop.requests().len(), 1);

    let hop = Hop::start(&first(1, "{type: tool_call_cut}")).await;
    let (claim, calls) = run(ControlAgent::GivesUp, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Failure);
    assert!(claim.message.contains("token limit"), "{}", claim.message);
    assert!(calls.is_empty());
    assert_eq!(hop.requests().len(), 1);
}

#[tokio::test]
async fn an_overloaded_model_is_asked_three_times_by_good_and_until_it_answers_by_bad_retry() {
    let overloaded = first(5, "{type: overloaded}");
    let hop = Hop::start(&overloaded).await;
    let (claim, calls) = run(ControlAgent::Good, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Failure);
    assert!(claim.message.contains("asked the model 3 times") && claim.message.contains("503"), "{}", claim.message);
    assert!(calls.is_empty());
    let requests = hop.requests();
    assert_eq!(requests.len(), 3);
    // 100 ms, then 200 ms: the pause doubles.
    assert!(requests[1].0 - requests[0].0 >= 100 && requests[2].0 - requests[1].0 >= 200, "{requests:?}");

    let hop = Hop::start(&overloaded).await;
    let (claim, calls) = run(ControlAgent::BadRetry, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Success, "{claim:?}");
    assert_eq!(calls.len(), 2);
    assert_eq!(hop.requests().len(), 7, "five 503s asked past at once, then the two steps' turns");
}

#[tokio::test]
async fn good_waits_out_a_short_retry_after_and_reports_a_long_one() {
    let hop = Hop::start(&first(1, "{type: rate_limit, retry_after_sec: 1}")).await;
    let (claim, _) = run(ControlAgent::Good, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Success, "{claim:?}");
    let requests = hop.requests();
    assert!(requests[1].0 >= requests[0].0 + 1000, "waited its Retry-After, not its 100 ms pause: {requests:?}");

    let hop = Hop::start(&first(1, "{type: rate_limit, retry_after_sec: 30}")).await;
    let (claim, calls) = run(ControlAgent::Good, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Failure);
    assert!(claim.message.contains("asked again in 30 s"), "{}", claim.message);
    assert!(calls.is_empty());
    assert_eq!(hop.requests().len(), 1);
}

#[tokio::test]
async fn a_refusal_ends_good_honestly_and_bad_retry_asks_past_it() {
    let hop = Hop::start(&first(1, "{type: refusal}")).await;
    let (claim, calls) = run(ControlAgent::Good, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Failure);
    assert!(claim.message.contains("refused"), "{}", claim.message);
    assert!(calls.is_empty());
    assert_eq!(hop.requests().len(), 1, "asking the same again cannot help");

    let hop = Hop::start(&first(1, "{type: refusal}")).await;
    let (claim, _) = run(ControlAgent::BadRetry, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Success, "{claim:?}");
    assert_eq!(hop.requests().len(), 3);
}

#[tokio::test]
async fn the_hallucinating_agent_asks_the_model_nothing() {
    let hop = Hop::start("rules: []\n").await;
    let (claim, calls) = run(ControlAgent::Hallucinating, &hop).await;
    assert_eq!(claim.status, ClaimStatus::Success);
    assert!(calls.is_empty());
    assert!(hop.requests().is_empty());
}
