//! Checking what a call came to against a step's expectations. Each failed expectation is one readable line.

use crate::scenario::{ConnectionState, Expect};
use faultlab_client::{Anomalies, AuthEventKind, AuthRecord, Observation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Anomaly names an expectation may use (the camelCase fields of [`Anomalies`] that are counts).
pub const ANOMALY_NAMES: [&str; 10] = [
    "duplicateResponses",
    "lateResponses",
    "unknownIdResponses",
    "idlessErrors",
    "unparsableFrames",
    "nonMessageFrames",
    "outOfOrderResponses",
    "serverRequests",
    "declinedServerRequests",
    "unansweredServerRequests",
];

/// A call and what the connection saw because of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepObservation {
    /// The call's (last attempt's) observation.
    pub observation: Observation,
    /// Earlier attempts, when a retry policy made several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_attempts: Vec<Observation>,
    /// Responses that carried the call's id.
    pub responses: u32,
    /// Anomalies the call added to the connection's tally.
    pub anomalies: BTreeMap<String, u32>,
    /// Notifications received during the call, by method.
    pub notifications: BTreeMap<String, u32>,
    /// Whether the connection was still usable afterwards.
    pub connection_alive: bool,
    /// What the client's auth mode did during the call (and, for the first call, while connecting); absent when
    /// the auth mode is off. Never holds a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthRecord>,
    /// What the tool list said about the call (with the scenario's `toolSurface`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<faultlab_client::surface::SurfaceObservation>,
}

/// The anomaly counts that grew from `before` to `after`, by name.
pub fn anomaly_delta(before: &Anomalies, after: &Anomalies) -> (BTreeMap<String, u32>, BTreeMap<String, u32>) {
    let counts = |a: &Anomalies| -> BTreeMap<String, u32> {
        let value = serde_json::to_value(a).unwrap_or_default();
        ANOMALY_NAMES.iter().map(|n| (n.to_string(), value[n].as_u64().unwrap_or(0) as u32)).collect()
    };
    let (b, a) = (counts(before), counts(after));
    let anomalies = a.iter().filter(|(k, v)| *v > &b[*k]).map(|(k, v)| (k.clone(), v - b[k])).collect();
    let notifications = after
        .notifications
        .iter()
        .filter_map(|(k, v)| {
            let was = before.notifications.get(k).copied().unwrap_or(0);
            (*v > was).then(|| (k.clone(), v - was))
        })
        .collect();
    (anomalies, notifications)
}

/// Every expectation of `expect` that `seen` does not meet.
pub fn check(expect: &Expect, seen: &StepObservation) -> Vec<String> {
    let obs = &seen.observation;
    let mut failures = Vec::new();
    let name = |v: Value| v.as_str().unwrap_or_default().to_owned();
    if let Some(outcome) = expect.outcome
        && outcome != obs.outcome
    {
        let detail = match obs.message() {
            m if m.is_empty() => String::new(),
            m => format!(" ({m})"),
        };
        failures.push(format!(
            "expected outcome {}, received {}{detail}",
            name(serde_json::json!(outcome)),
            name(serde_json::json!(obs.outcome))
        ));
    }
    if let Some(kind) = expect.error_kind
        && Some(kind) != obs.error_kind
    {
        let got = obs.error_kind.map_or("none".to_owned(), |k| name(serde_json::json!(k)));
        failures.push(format!("expected error kind {}, received {got}", name(serde_json::json!(kind))));
    }
    if let Some(max) = expect.max_duration_ms
        && obs.duration_ms > max
    {
        failures.push(format!("expected duration at most {max}ms, received {:.2}ms", obs.duration_ms));
    }
    if let Some(min) = expect.min_duration_ms
        && obs.duration_ms < min
    {
        failures.push(format!("expected duration at least {min}ms, received {:.2}ms", obs.duration_ms));
    }
    if let Some(result) = &expect.result {
        match &obs.result {
            None => failures.push("expected a result, but no result was received".into()),
            Some(value) => check_result(result, value, &obs.text(), &mut failures),
        }
    }
    if let Some(code) = expect.error_code {
        // An HTTP error status carries its JSON-RPC error in the body (`error.body.error.code`): a 2026-07-28
        // -32022 comes as a 400 with the code in its body.
        let got = obs
            .error
            .as_ref()
            .and_then(|e| e.get("code").or_else(|| e.get("body").and_then(|b| b.get("error")?.get("code"))))
            .and_then(Value::as_i64);
        if got != Some(code) {
            failures
                .push(format!("expected error code {code}, received {}", got.map_or("none".into(), |c| c.to_string())));
        }
    }
    if let Some(status) = expect.http_status
        && obs.http_status != Some(status)
    {
        let got = obs.http_status.map_or("none".into(), |s| s.to_string());
        failures.push(format!("expected HTTP status {status}, received {got}"));
    }
    if let Some(n) = expect.responses
        && seen.responses != n
    {
        failures.push(format!("expected {n} responses with the call's id, received {}", seen.responses));
    }
    for (method, at_least) in &expect.notifications {
        let got = seen.notifications.get(method).copied().unwrap_or(0);
        if got < *at_least {
            failures.push(format!("expected at least {at_least} {method} notifications, received {got}"));
        }
    }
    for (anomaly, n) in &expect.anomalies {
        let got = seen.anomalies.get(anomaly).copied().unwrap_or(0);
        if got != *n {
            failures.push(format!("expected {n} {anomaly}, observed {got}"));
        }
    }
    if let Some(n) = expect.attempts {
        let made = seen.earlier_attempts.len() as u32 + 1;
        if made != n {
            failures.push(format!("expected {n} attempts, made {made}"));
        }
    }
    if let Some(auth) = &expect.auth {
        match &seen.auth {
            Some(record) => check_auth(auth, record, &mut failures),
            None => failures.push("expected auth events, but the client ran without its auth mode".into()),
        }
    }
    if let Some(surface) = &expect.surface {
        surface.check(seen.surface.as_ref(), &mut failures);
    }
    if let Some(recovery) = &expect.recovery {
        check_recovery(recovery, &obs.recovery, &mut failures);
    }
    if let Some(task) = &expect.task {
        match &obs.task {
            Some(record) => check_task(task, record, &mut failures),
            None => failures.push("expected a task, but the call was not answered with a task handle".into()),
        }
    }
    if let Some(n) = expect.input_rounds {
        let made = obs.input_rounds.unwrap_or(0);
        if made != n {
            failures.push(format!("expected {n} input_required rounds retried, the client retried {made}"));
        }
    }
    if let Some(state) = expect.connection {
        let alive = state == ConnectionState::Alive;
        if alive != seen.connection_alive {
            let say = |a: bool| if a { "alive" } else { "dead" };
            failures.push(format!("expected the connection {}, found it {}", say(alive), say(seen.connection_alive)));
        }
    }
    failures
}

fn check_task(expect: &crate::scenario::TaskExpect, record: &faultlab_client::TaskRecord, failures: &mut Vec<String>) {
    let seen = format!("(statuses {}, {} polls)", record.statuses.join(" → "), record.polls);
    if let Some(status) = &expect.status
        && *status != record.status
    {
        failures.push(format!("expected the task {status}, the client kept {} {seen}", record.status));
    }
    if let Some(min) = expect.min_polls
        && record.polls < min
    {
        failures.push(format!("expected at least {min} tasks/get polls, made {}", record.polls));
    }
    if let Some(max) = expect.max_polls
        && record.polls > max
    {
        failures.push(format!("expected at most {max} tasks/get polls, made {} {seen}", record.polls));
    }
    if let Some(n) = expect.reverts
        && record.reverts != n
    {
        failures.push(format!("expected {n} task status reverts, observed {} {seen}", record.reverts));
    }
    if let Some(cancelled) = expect.cancelled
        && cancelled != record.cancelled
    {
        failures.push(format!("expected tasks/cancel {}sent {seen}", if cancelled { "" } else { "not " }));
    }
    if let Some(answered) = expect.result_answered
        && answered != record.result_answered
    {
        let note = record.result_note.as_deref().unwrap_or("it answered");
        failures.push(format!("expected tasks/result {}answered ({note})", if answered { "" } else { "not " }));
    }
    if let Some(why) = &expect.gave_up
        && record.gave_up.as_ref() != Some(why)
    {
        let got = record.gave_up.as_deref().unwrap_or("it did not give up");
        failures.push(format!("expected the client to give up at the task's {why}, observed {got} {seen}"));
    }
}

fn check_auth(expect: &crate::scenario::AuthExpect, record: &AuthRecord, failures: &mut Vec<String>) {
    let counts = [
        ("authorizations", expect.authorizations, AuthEventKind::Authorized),
        ("refreshes", expect.refreshes, AuthEventKind::Refreshed),
        ("refresh deferrals", expect.refresh_deferrals, AuthEventKind::RefreshDeferred),
        ("refresh refusals", expect.refresh_refusals, AuthEventKind::RefreshRefused),
        ("step-ups", expect.step_ups, AuthEventKind::StepUp),
        ("re-authorizations", expect.reauthorizations, AuthEventKind::Reauthorized),
        ("auth failures", expect.failures, AuthEventKind::Failed),
    ];
    for (name, want, kind) in counts {
        if let Some(want) = want
            && record.count(kind) != want
        {
            failures.push(format!("expected {want} {name}, observed {}", record.count(kind)));
        }
    }
    if let Some(max) = expect.max_token_requests
        && record.token_requests > max
    {
        failures.push(format!("expected at most {max} token requests, observed {}", record.token_requests));
    }
    if let Some(needle) = &expect.failure_contains {
        let failed = record.events.iter().filter(|e| e.kind == AuthEventKind::Failed);
        if !failed.clone().any(|e| e.detail.as_deref().is_some_and(|d| d.contains(needle.as_str()))) {
            let details: Vec<&str> = failed.filter_map(|e| e.detail.as_deref()).collect();
            failures.push(format!("expected an auth failure containing {needle:?}, observed {details:?}"));
        }
    }
}

fn check_result(expect: &crate::scenario::ResultExpect, result: &Value, text: &str, failures: &mut Vec<String>) {
    if let Some(is_error) = expect.is_error {
        let got = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
        if got != is_error {
            failures.push(format!("expected result isError {is_error}, received {got}"));
        }
    }
    if let Some(needle) = &expect.text_contains
        && !text.contains(needle.as_str())
    {
        failures.push(format!("expected result text to contain {needle:?}"));
    }
    if let Some(pattern) = &expect.text_matches
        && !regex::Regex::new(pattern).is_ok_and(|re| re.is_match(text))
    {
        failures.push(format!("expected result text to match /{pattern}/"));
    }
    for (pointer, want) in &expect.pointer {
        match result.pointer(pointer) {
            Some(got) if got == want => {}
            Some(got) => failures.push(format!("expected result{pointer} to be {want}, received {got}")),
            None => failures.push(format!("expected result{pointer} to exist")),
        }
    }
}

fn check_recovery(
    expect: &crate::scenario::RecoveryExpect,
    seen: &faultlab_client::Recovery,
    failures: &mut Vec<String>,
) {
    let counts = [
        ("reconnects", expect.reconnects, seen.reconnects.len() as u32),
        ("duplicate events", expect.duplicate_events, seen.duplicate_events),
        ("lost responses", expect.lost_responses, seen.lost_responses),
        ("re-initialisations", expect.reinitializations, seen.reinitializations),
        ("failed re-initialisations", expect.failed_reinitializations, seen.failed_reinitializations),
    ];
    for (what, want, got) in counts {
        if let Some(want) = want
            && want != got
        {
            failures.push(format!("expected {want} {what}, observed {got}"));
        }
    }
    if let Some(pattern) = &expect.last_event_ids_match {
        let re = regex::Regex::new(pattern).ok();
        for sent in &seen.reconnects {
            if !re.as_ref().is_some_and(|re| re.is_match(&sent.last_event_id)) {
                failures
                    .push(format!("expected every Last-Event-ID to match /{pattern}/, sent {:?}", sent.last_event_id));
            }
        }
    }
    if let Some(version) = &expect.protocol_retry
        && seen.protocol_retry.as_ref() != Some(version)
    {
        let got = seen.protocol_retry.clone().unwrap_or_else(|| "none".into());
        failures.push(format!("expected a retry with protocol version {version}, received {got}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::AuthExpect;
    use faultlab_client::AuthEvent;

    fn seen(kinds: &[AuthEventKind], token_requests: u32) -> StepObservation {
        let observation =
            serde_json::from_value(serde_json::json!({"outcome": "success", "durationMs": 1.0, "requestId": 1}));
        let events = kinds
            .iter()
            .map(|&kind| AuthEvent { kind, scope: None, detail: Some(format!("{kind:?} happened")) })
            .collect();
        StepObservation {
            observation: observation.unwrap(),
            earlier_attempts: Vec::new(),
            responses: 1,
            anomalies: BTreeMap::new(),
            notifications: BTreeMap::new(),
            connection_alive: true,
            auth: Some(AuthRecord { events, token_requests, ..Default::default() }),
            surface: None,
        }
    }

    #[test]
    fn auth_expectations_count_events_and_bound_token_requests() {
        let expect = |auth: AuthExpect| Expect { auth: Some(auth), ..Expect::default() };
        let refreshed = seen(&[AuthEventKind::RefreshRefused, AuthEventKind::Reauthorized], 2);
        let met = AuthExpect {
            reauthorizations: Some(1),
            refreshes: Some(0),
            max_token_requests: Some(2),
            ..AuthExpect::default()
        };
        assert!(check(&expect(met), &refreshed).is_empty());
        let missed = AuthExpect { refreshes: Some(1), max_token_requests: Some(1), ..AuthExpect::default() };
        assert_eq!(
            check(&expect(missed), &refreshed),
            ["expected 1 refreshes, observed 0", "expected at most 1 token requests, observed 2"]
        );
        let failed = seen(&[AuthEventKind::Failed], 0);
        let contains = AuthExpect { failure_contains: Some("Failed happened".into()), ..AuthExpect::default() };
        assert!(check(&expect(contains), &failed).is_empty());
        let other = AuthExpect { failure_contains: Some("issuer".into()), ..AuthExpect::default() };
        assert!(check(&expect(other), &failed)[0].contains("issuer"));
        let off = StepObservation { auth: None, ..failed };
        assert!(check(&expect(AuthExpect::default()), &off)[0].contains("without its auth mode"));
    }

    #[test]
    fn task_expectations_name_what_the_client_saw_of_the_task() {
        let expect = crate::scenario::TaskExpect {
            status: Some("completed".into()),
            max_polls: Some(6),
            reverts: Some(1),
            cancelled: Some(false),
            gave_up: Some("ttl".into()),
            ..Default::default()
        };
        let expect = Expect { task: Some(expect), ..Expect::default() };
        let hot_loop = faultlab_client::TaskRecord {
            status: "working".into(),
            statuses: vec!["working".into()],
            polls: 400,
            gave_up: Some("deadline".into()),
            cancelled: true,
            ..Default::default()
        };
        let mut step = seen(&[], 0);
        step.observation.task = Some(hot_loop.clone());
        let failures = check(&expect, &step);
        assert_eq!(failures.len(), 5, "{failures:?}");
        for needle in ["the client kept working", "at most 6", "1 task status reverts", "tasks/cancel not sent", "ttl"]
        {
            assert!(failures.iter().any(|f| f.contains(needle)), "{needle}: {failures:?}");
        }
        let kept = faultlab_client::TaskRecord {
            status: "completed".into(),
            polls: 3,
            reverts: 1,
            gave_up: Some("ttl".into()),
            cancelled: false,
            ..hot_loop
        };
        step.observation.task = Some(kept);
        assert!(check(&expect, &step).is_empty());
        step.observation.task = None;
        assert!(check(&expect, &step)[0].contains("not answered with a task handle"));
    }
}
