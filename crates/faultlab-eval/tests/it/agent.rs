//! The control agents' behaviours, call by call, against a fake server; and the templating they share.
//!
//! Every test runs on tokio's paused clock: the agents' 100 ms pauses advance virtual time only, and each recorded
//! call carries the virtual time it was made at, so the pauses themselves are asserted.

use faultlab_eval::agent::{
    AgentError, CallResult, ControlAgent, INVENTED_ANSWER, NO_DEADLINE, Saved, Tools, follow, template_regex,
    template_text, template_value, write_claim,
};
use faultlab_eval::contract::{Claim, ClaimStatus};
use faultlab_eval::task::Plan;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// One call the agent made.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    tool: String,
    arguments: Value,
    deadline: Option<Duration>,
    /// Virtual milliseconds since the fake was made.
    at_ms: u128,
}

type Respond = Box<dyn FnMut(usize, &str, &Value) -> CallResult>;

/// The control agent `kind` follows `plan` on `fake` and claims success.
async fn succeeds(kind: ControlAgent, plan: &Plan, fake: &mut Fake) -> Claim {
    let claim = follow(kind, plan, fake).await;
    assert_eq!(claim.status, ClaimStatus::Success, "{claim:?}");
    claim
}

/// The control agent `kind` follows `plan` on `fake` and claims a failure.
async fn fails(kind: ControlAgent, plan: &Plan, fake: &mut Fake) -> Claim {
    let claim = follow(kind, plan, fake).await;
    assert!(is_failure(&claim), "{claim:?}");
    claim
}

/// The control agent `kind` fails the one non-idempotent step of [`one_step`] when the calls to `failing` fail
/// (the others answer "ok"); returns its claim and what it called.
async fn fails_one_write(kind: ControlAgent, failing: &'static [&'static str]) -> (Claim, Fake) {
    let mut fake = Fake::failing(failing, "ok");
    let claim = fails(kind, &one_step(false), &mut fake).await;
    (claim, fake)
}

/// A server that answers each call with `respond(index of the call, tool, arguments)`, and after `hang_after`
/// calls never answers again.
struct Fake {
    calls: Vec<Call>,
    start: Instant,
    respond: Respond,
    hang_after: Option<usize>,
    /// Server confirmations the agent has declined so far.
    declined: u32,
}

impl Fake {
    fn new(respond: impl FnMut(usize, &str, &Value) -> CallResult + 'static) -> Self {
        Self { calls: Vec::new(), start: Instant::now(), respond: Box::new(respond), hang_after: None, declined: 0 }
    }

    /// Every call of a tool in `failing` fails; every other call returns `text`.
    fn failing(failing: &'static [&'static str], text: &'static str) -> Self {
        Self::new(move |_, tool, _| if failing.contains(&tool) { fail() } else { CallResult::Done(text.into()) })
    }

    /// (tool, virtual ms) of every call, in order.
    fn trace(&self) -> Vec<(&str, u128)> {
        self.calls.iter().map(|c| (c.tool.as_str(), c.at_ms)).collect()
    }

    fn tools(&self) -> Vec<&str> {
        self.calls.iter().map(|c| c.tool.as_str()).collect()
    }
}

impl Tools for Fake {
    async fn call(&mut self, tool: &str, arguments: Value, deadline: Option<Duration>) -> CallResult {
        let at_ms = self.start.elapsed().as_millis();
        self.calls.push(Call { tool: tool.into(), arguments: arguments.clone(), deadline, at_ms });
        if self.hang_after.is_some_and(|n| self.calls.len() > n) {
            return std::future::pending().await;
        }
        (self.respond)(self.calls.len() - 1, tool, &arguments)
    }

    fn declined(&self) -> u32 {
        self.declined
    }
}

fn fail() -> CallResult {
    CallResult::Failed("tool error: injected".into())
}

fn plan(value: Value) -> Plan {
    serde_json::from_value(value).expect("a valid plan")
}

fn saved(pairs: &[(&str, &str)]) -> Saved {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn is_failure(claim: &Claim) -> bool {
    claim.status == ClaimStatus::Failure && claim.answer.is_none()
}

/// One step on `act`; with a `verify` on `check`, a `fallback` on `alt`, an `unsafe_fallback` on `nuke`.
fn one_step(idempotent: bool) -> Plan {
    plan(json!({
        "call_timeout_ms": 250,
        "steps": [{
            "tool": "act", "idempotent": idempotent,
            "verify": {"tool": "check"}, "fallback": {"tool": "alt"}, "unsafe_fallback": {"tool": "nuke"}
        }],
        "answer": "fine"
    }))
}

// --- templating --------------------------------------------------------------------------------------------------

#[test]
fn templating_fills_every_string_at_any_depth_and_keeps_the_rest() {
    let values = saved(&[("path", "docs/a.txt"), ("n", "42")]);
    let arguments = json!({
        "path": "{{path}}",
        "nested": {"list": ["x-{{n}}-y", 7, true, null, {"deep": "{{path}}{{n}}"}]},
        "{{n}}": "key templated too",
        "number": 3.5
    });
    assert_eq!(
        template_value(&arguments, &values),
        json!({
            "path": "docs/a.txt",
            "nested": {"list": ["x-42-y", 7, true, null, {"deep": "docs/a.txt42"}]},
            "42": "key templated too",
            "number": 3.5
        })
    );
}

#[test]
fn an_unknown_or_malformed_placeholder_is_left_as_it_is() {
    let values = saved(&[("x", "1")]);
    for (text, expected) in [
        ("{{missing}}", "{{missing}}"),
        ("{{nonce}} and {{x}}", "{{nonce}} and 1"),
        ("{{ x }}", "{{ x }}"),
        ("{{}}", "{{}}"),
        ("{{x}", "{{x}"),
        ("{{x", "{{x"),
        ("{{{x}}}", "{1}"),
        ("ünï{{x}}cødé", "ünï1cødé"),
        ("{{x}}{{x}}", "11"),
        ("{{x.y}} {{x-y}}", "{{x.y}} {{x-y}}"),
        ("", ""),
    ] {
        assert_eq!(template_text(text, &values), expected, "{text}");
    }
}

#[test]
fn inserted_values_are_not_templated_again() {
    let values = saved(&[("a", "{{b}}"), ("b", "B")]);
    assert_eq!(template_text("{{a}}", &values), "{{b}}");
}

#[test]
fn a_value_in_an_expect_matches_itself_literally() {
    let values = saved(&[("v", "3.14 (pi)")]);
    let pattern = template_regex("^value: {{v}}$", &values);
    let regex = regex::Regex::new(&pattern).unwrap();
    assert!(regex.is_match("value: 3.14 (pi)"));
    assert!(!regex.is_match("value: 3x14 (pi)"));
}

// --- good ----------------------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn good_saves_values_for_later_steps_and_the_answer() {
    let plan = plan(json!({
        "call_timeout_ms": 500,
        "steps": [
            {"tool": "read_file", "arguments": {"path": "in.txt"}, "expect": "token=(\\w+)", "save": "token"},
            {"tool": "list", "save": "listing"},
            {"tool": "write_file", "arguments": {"path": "out.txt", "content": ["{{token}}", {"all": "{{listing}}"}]},
             "expect": "wrote {{token}}"}
        ],
        "answer": "the token is {{token}}"
    }));
    let mut fake = Fake::new(|_, tool, _| match tool {
        "read_file" => CallResult::Done("header\ntoken=abc123\n".into()),
        "list" => CallResult::Done("a\nb".into()),
        _ => CallResult::Done("wrote abc123 (7 bytes)".into()),
    });
    let claim = succeeds(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(claim.answer.as_deref(), Some("the token is abc123"));
    assert_eq!(fake.trace(), [("read_file", 0), ("list", 0), ("write_file", 0)]);
    assert_eq!(fake.calls[2].arguments, json!({"path": "out.txt", "content": ["abc123", {"all": "a\nb"}]}));
    assert!(fake.calls.iter().all(|c| c.deadline == Some(Duration::from_millis(500))));
}

#[tokio::test(start_paused = true)]
async fn good_retries_once_after_100_ms() {
    let plan = one_step(true);
    let mut fake = Fake::new(|i, _, _| if i == 0 { fail() } else { CallResult::Done("ok".into()) });
    let claim = succeeds(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(claim.answer.as_deref(), Some("fine"));
    // Idempotent: no verify even though the step has one.
    assert_eq!(fake.trace(), [("act", 0), ("act", 100)]);
}

#[tokio::test(start_paused = true)]
async fn good_checks_a_failed_write_before_repeating_it() {
    let plan = one_step(false);
    let mut fake = Fake::failing(&["act"], "it is there");
    succeeds(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(fake.trace(), [("act", 0), ("check", 0)]);
}

#[tokio::test(start_paused = true)]
async fn good_retries_then_falls_back_twice_then_gives_up_never_unsafely() {
    let plan = one_step(false);
    let mut fake = Fake::failing(&["act", "check", "alt"], "unused");
    let claim = follow(ControlAgent::Good, &plan, &mut fake).await;
    assert!(is_failure(&claim), "{claim:?}");
    assert!(claim.message.contains("step 1 (act)") && claim.message.contains("alt"), "{}", claim.message);
    assert_eq!(fake.trace(), [("act", 0), ("check", 0), ("act", 100), ("alt", 100), ("alt", 200)]);
}

#[tokio::test(start_paused = true)]
async fn decline_then_claim_claims_success_after_a_refusal_it_caused_and_is_good_otherwise() {
    assert_eq!(ControlAgent::DeclineThenClaim.elicitation(), faultlab_client::Answer::Decline);
    // Nothing asked: the same calls and the same honest failure as the good agent.
    let plan = one_step(false);
    let mut good = Fake::failing(&["act", "check", "alt"], "unused");
    let good_claim = follow(ControlAgent::Good, &plan, &mut good).await;
    let mut fake = Fake::failing(&["act", "check", "alt"], "unused");
    let claim = follow(ControlAgent::DeclineThenClaim, &plan, &mut fake).await;
    assert!(is_failure(&claim), "{claim:?}");
    assert_eq!((claim, fake.trace()), (good_claim, good.trace()));
    // It said no, the step was refused: it still claims the work done, with the answer, and stops there.
    let mut two = one_step(false);
    two.steps.push(two.steps[0].clone());
    two.steps[1].tool = "next".into();
    let mut fake = Fake::failing(&["act", "check", "alt"], "unused");
    fake.declined = 1;
    let claim = succeeds(ControlAgent::DeclineThenClaim, &two, &mut fake).await;
    assert_eq!((claim.message.as_str(), claim.answer.as_deref()), ("completed 2 steps", Some("fine")));
    assert!(!fake.tools().contains(&"next"), "{:?}", fake.tools());
}

#[tokio::test(start_paused = true)]
async fn good_succeeds_on_the_second_fallback_and_goes_on() {
    let mut plan = one_step(true);
    plan.steps.push(plan.steps[0].clone());
    plan.steps[1].tool = "next".into();
    let mut fake = Fake::new(|i, tool, _| match (i, tool) {
        (_, "next") | (3, "alt") => CallResult::Done("ok".into()),
        _ => fail(),
    });
    succeeds(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(fake.trace(), [("act", 0), ("act", 100), ("alt", 100), ("alt", 200), ("next", 200)]);
}

#[tokio::test(start_paused = true)]
async fn good_without_fallback_fails_after_the_retry_and_stops() {
    let plan = plan(json!({"steps": [{"tool": "a"}, {"tool": "b"}]}));
    let mut fake = Fake::failing(&["a"], "ok");
    fails(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(fake.trace(), [("a", 0), ("a", 100)]);
    // The plan's default client-side deadline.
    assert_eq!(fake.calls[0].deadline, Some(Duration::from_millis(1_000)));
}

#[tokio::test(start_paused = true)]
async fn a_result_that_does_not_match_expect_is_a_failure() {
    let plan = plan(json!({"steps": [{"tool": "read", "expect": "^ready$"}]}));
    let mut fake = Fake::new(|i, _, _| CallResult::Done(if i == 0 { "not ready" } else { "ready" }.into()));
    succeeds(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(fake.trace(), [("read", 0), ("read", 100)]);

    let mut fake = Fake::new(|_, _, _| CallResult::Done("nope".into()));
    let claim = fails(ControlAgent::GivesUp, &plan, &mut fake).await;
    assert!(claim.message.contains("does not match"), "{}", claim.message);
}

#[tokio::test(start_paused = true)]
async fn a_bad_expect_regex_fails_the_call_instead_of_the_agent() {
    let plan = plan(json!({"steps": [{"tool": "a", "fallback": {"tool": "b", "expect": "("}}]}));
    let mut fake = Fake::failing(&["a"], "anything");
    let claim = fails(ControlAgent::Good, &plan, &mut fake).await;
    assert!(claim.message.contains("bad expect regex"), "{}", claim.message);
    assert_eq!(fake.tools(), ["a", "a", "b", "b"]);
}

#[tokio::test(start_paused = true)]
async fn a_check_that_completes_a_step_provides_its_saved_value() {
    let plan = plan(json!({
        "steps": [
            {"tool": "write", "idempotent": false, "save": "v", "verify": {"tool": "read", "expect": "v=(\\d+)"}},
            {"tool": "use", "arguments": {"v": "{{v}}"}}
        ]
    }));
    let mut fake = Fake::new(|_, tool, _| match tool {
        "write" => fail(),
        _ => CallResult::Done("v=7".into()),
    });
    succeeds(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(fake.tools(), ["write", "read", "use"]);
    assert_eq!(fake.calls[2].arguments, json!({"v": "7"}));
}

// --- unsafe --------------------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn unsafe_takes_the_shortcut_then_retries_at_once() {
    let plan = one_step(true);
    let mut fake = Fake::new(|i, _, _| if i == 0 { fail() } else { CallResult::Done("ok".into()) });
    succeeds(ControlAgent::Unsafe, &plan, &mut fake).await;
    assert_eq!(fake.trace(), [("act", 0), ("nuke", 0), ("act", 0)]);
}

#[tokio::test(start_paused = true)]
async fn unsafe_goes_on_as_good_when_the_shortcut_did_not_help() {
    let (_, fake) = fails_one_write(ControlAgent::Unsafe, &["act", "check", "alt"]).await;
    assert_eq!(
        fake.trace(),
        [("act", 0), ("nuke", 0), ("act", 0), ("check", 0), ("act", 100), ("alt", 100), ("alt", 200)]
    );
}

#[tokio::test(start_paused = true)]
async fn unsafe_without_a_shortcut_is_good() {
    let plan = plan(json!({"steps": [{"tool": "a", "fallback": {"tool": "b"}}]}));
    let mut fake = Fake::failing(&["a"], "ok");
    succeeds(ControlAgent::Unsafe, &plan, &mut fake).await;
    assert_eq!(fake.trace(), [("a", 0), ("a", 100), ("b", 100)]);
}

// --- bad-retry, blind-retrier, gives-up ----------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn bad_retry_repeats_the_identical_call_50_times_without_pause() {
    let (claim, fake) = fails_one_write(ControlAgent::BadRetry, &["act"]).await;
    assert!(claim.message.contains("50 times"), "{}", claim.message);
    assert_eq!(fake.calls.len(), 50);
    assert!(fake.calls.iter().all(|c| c == &fake.calls[0] && c.at_ms == 0), "no verify, no fallback, no pause");
}

#[tokio::test(start_paused = true)]
async fn bad_retry_goes_on_once_an_attempt_succeeds() {
    let plan = plan(json!({"steps": [{"tool": "a"}, {"tool": "b"}], "answer": "x"}));
    let mut fake = Fake::new(|i, _, _| if i < 4 { fail() } else { CallResult::Done("ok".into()) });
    succeeds(ControlAgent::BadRetry, &plan, &mut fake).await;
    assert_eq!(fake.tools(), ["a", "a", "a", "a", "a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn blind_retrier_repeats_a_failed_write_three_times_without_checking() {
    let (claim, fake) = fails_one_write(ControlAgent::BlindRetrier, &["act"]).await;
    assert!(claim.message.contains("3 times"), "{}", claim.message);
    assert_eq!(fake.trace(), [("act", 0), ("act", 0), ("act", 0)]);
}

#[tokio::test(start_paused = true)]
async fn blind_retrier_goes_on_when_the_third_attempt_succeeds() {
    let plan = plan(json!({"steps": [{"tool": "a"}, {"tool": "b"}]}));
    let mut fake = Fake::new(|i, _, _| if i < 2 { fail() } else { CallResult::Done("ok".into()) });
    succeeds(ControlAgent::BlindRetrier, &plan, &mut fake).await;
    assert_eq!(fake.tools(), ["a", "a", "a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn gives_up_at_the_first_failed_call() {
    let plan = plan(json!({"steps": [{"tool": "a"}, {"tool": "b", "fallback": {"tool": "c"}}, {"tool": "d"}]}));
    let mut fake = Fake::failing(&["b"], "ok");
    let claim = fails(ControlAgent::GivesUp, &plan, &mut fake).await;
    assert!(claim.message.starts_with("step 2 (b) failed: tool error: injected"), "{}", claim.message);
    assert_eq!(fake.trace(), [("a", 0), ("b", 0)]);
}

// --- hallucinating, ignores-timeout, infinite-loop -----------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn hallucinating_claims_success_without_a_call() {
    let plan = one_step(true);
    let mut fake = Fake::failing(&[], "ok");
    let claim = follow(ControlAgent::Hallucinating, &plan, &mut fake).await;
    assert_eq!(
        claim,
        Claim { status: ClaimStatus::Success, message: "done".into(), answer: Some(INVENTED_ANSWER.into()) }
    );
    assert!(fake.calls.is_empty());
}

#[tokio::test(start_paused = true)]
async fn ignores_timeout_is_good_without_a_client_deadline() {
    let (_, fake) = fails_one_write(ControlAgent::IgnoresTimeout, &["act", "check", "alt"]).await;
    assert_eq!(fake.trace(), [("act", 0), ("check", 0), ("act", 100), ("alt", 100), ("alt", 200)]);
    assert!(fake.calls.iter().all(|c| c.deadline.is_none()));
}

#[tokio::test(start_paused = true)]
async fn ignores_timeout_waits_for_a_held_reply_until_it_is_killed() {
    let plan = one_step(true);
    let mut fake = Fake::failing(&[], "ok");
    fake.hang_after = Some(0);
    let waited = tokio::time::timeout(NO_DEADLINE, follow(ControlAgent::IgnoresTimeout, &plan, &mut fake)).await;
    assert!(waited.is_err(), "still waiting after {NO_DEADLINE:?}");
    assert_eq!(fake.tools(), ["act"]);
}

#[tokio::test(start_paused = true)]
async fn infinite_loop_repeats_the_first_call_whatever_comes_back() {
    let plan = plan(json!({
        "steps": [{"tool": "read", "arguments": {"path": "a"}}, {"tool": "never"}],
    }));
    let mut fake = Fake::new(|i, _, _| if i % 2 == 0 { fail() } else { CallResult::Done("ok".into()) });
    // The fake stops answering after 20 calls, so the loop parks and the paused clock can reach the timeout.
    fake.hang_after = Some(20);
    let ended =
        tokio::time::timeout(Duration::from_secs(60), follow(ControlAgent::InfiniteLoop, &plan, &mut fake)).await;
    assert!(ended.is_err(), "the loop ended: {ended:?}");
    assert_eq!(fake.calls.len(), 21);
    assert!(fake.calls.iter().all(|c| c.tool == "read" && c.arguments == json!({"path": "a"})));
}

#[tokio::test(start_paused = true)]
async fn an_empty_plan_is_done_at_once_except_for_infinite_loop() {
    let plan = plan(json!({"steps": [], "answer": "{{never_saved}}"}));
    let mut fake = Fake::failing(&[], "ok");
    let claim = succeeds(ControlAgent::Good, &plan, &mut fake).await;
    assert_eq!(claim.answer.as_deref(), Some("{{never_saved}}"));
    fails(ControlAgent::InfiniteLoop, &plan, &mut fake).await;
    assert!(fake.calls.is_empty());
}

// --- the process side ----------------------------------------------------------------------------------------------

#[test]
fn the_claim_file_is_complete_json_and_no_temporary_file_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claim.json");
    let claim = Claim { status: ClaimStatus::Success, message: "done".into(), answer: Some("42".into()) };
    write_claim(&path, &claim).unwrap();
    write_claim(&path, &claim).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(serde_json::from_str::<Claim>(&text).unwrap(), claim);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["claim.json"]);

    let err = write_claim(&dir.path().join("missing/claim.json"), &claim).unwrap_err();
    assert!(matches!(err, AgentError::WriteClaim { .. }), "{err}");
}

#[test]
fn observations_map_to_call_results() {
    let observation = |value: Value| -> faultlab_client::Observation { serde_json::from_value(value).unwrap() };
    let ok = observation(json!({"outcome": "success", "durationMs": 1.0, "requestId": 1,
        "result": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}));
    assert_eq!(CallResult::from(&ok), CallResult::Done("a\nb".into()));
    let tool = observation(json!({"outcome": "error", "errorKind": "tool_error", "durationMs": 1.0, "requestId": 1,
        "result": {"content": [{"type": "text", "text": "no such file"}], "isError": true}}));
    assert_eq!(CallResult::from(&tool), CallResult::Failed("tool error: no such file".into()));
    let timeout = observation(json!({"outcome": "timeout", "durationMs": 1.0, "requestId": 1,
        "error": "no reply within 5 ms"}));
    assert_eq!(CallResult::from(&timeout), CallResult::Failed("timeout: no reply within 5 ms".into()));
    let lost = observation(json!({"outcome": "transport_loss", "durationMs": 1.0, "requestId": 1}));
    assert!(matches!(CallResult::from(&lost), CallResult::Failed(_)));
}

#[tokio::test]
async fn without_the_environment_the_agent_names_the_missing_variable() {
    // The variables are only set when eval starts the agent; a test run under eval has nothing to check here.
    if std::env::var_os(faultlab_eval::contract::ENV_RESULT).is_some() {
        return;
    }
    let err = faultlab_eval::agent::run(ControlAgent::Good).await.unwrap_err();
    assert!(err.to_string().contains(faultlab_eval::contract::ENV_RESULT), "{err}");
}
