//! Parsing: malformed traces get errors naming the message index (OpenAI messages, from 0) or the line
//! (trajectories, from 1); extra fields are tolerated; trajectory frames become calls with the status the client saw.

use faultlab_diagnose::model::Outcome;
use faultlab_diagnose::{LoadError, Location, ParseError};

fn error(text: &str) -> ParseError {
    faultlab_diagnose::parse(text, None).expect_err("a parse error")
}

const CALL: &str = r#"{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]}"#;

#[test]
fn shape_errors_name_the_message_index_and_what_is_wrong() {
    let cases: &[(String, usize, &str)] = &[
        (r#"[{"role": "user", "content": "hi"}, {"content": "no role"}]"#.into(), 1, "no `role`"),
        (r#"[{"role": "user", "content": "hi"}, 7]"#.into(), 1, "expected a message object, found a number"),
        (r#"[{"role": "function", "content": "x"}]"#.into(), 0, "unknown role `function`"),
        (
            format!(r#"[{CALL}, {{"role": "tool", "tool_call_id": "c9", "content": "x"}}]"#),
            1,
            "`c9` answers no tool call",
        ),
        (
            format!(
                r#"[{CALL}, {{"role": "tool", "tool_call_id": "c1", "content": "a"}}, {{"role": "tool", "tool_call_id": "c1", "content": "b"}}]"#
            ),
            2,
            "answered already, at message 1",
        ),
        (format!(r#"[{CALL}, {CALL}]"#), 1, "`c1` was used already, at message 0"),
        (
            r#"[{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "t"}}]}]"#.into(),
            0,
            "tool_calls[0].function.arguments is missing",
        ),
        (r#"[{"role": "assistant", "tool_calls": {"id": "c1"}}]"#.into(), 0, "`tool_calls` is an object, not an array"),
        (r#"[{"role": "tool", "content": "x"}]"#.into(), 0, "without `tool_call_id`"),
        (r#"[{"role": "user", "content": 5}]"#.into(), 0, "`content` is a number"),
        (r#"[{"role": "user", "content": "x", "timestamp": "yesterday"}]"#.into(), 0, "not RFC 3339"),
        (r#"[{"role": "user", "content": "x", "ts_ms": "10"}]"#.into(), 0, "not a number of milliseconds"),
        (
            format!(r#"[{CALL}, {{"role": "tool", "tool_call_id": "c1", "content": "x", "is_error": "yes"}}]"#),
            1,
            "`is_error`",
        ),
    ];
    for (text, index, reason) in cases {
        let e = error(text);
        assert_eq!(e.location, Location::Message { index: *index, line: None }, "{text}: {e}");
        assert!(e.to_string().starts_with(&format!("message {index}: ")), "{e}");
        assert!(e.reason.contains(reason), "{text}: {e} (wanted {reason:?})");
    }
}

#[test]
fn a_json_syntax_error_names_the_message_it_falls_in() {
    let text = "[\n  {\"role\": \"user\", \"content\": \"hi\"},\n  {\"role\": \"assistant\", \"content\": \"a\"},\n  \
                {\"role\": \"assistant\" \"content\": \"b\"}\n]\n";
    let e = error(text);
    assert!(matches!(e.location, Location::Message { index: 2, line: Some((4, _)) }), "{e}");
    assert!(e.to_string().starts_with("message 2 (line 4, column "), "{e}");
    assert!(e.reason.starts_with("invalid JSON: "), "{e}");
}

#[test]
fn documents_that_are_not_traces_say_what_was_expected() {
    assert!(error("42").reason.contains("expected an array of messages, found a number"));
    assert!(error(r#"{"messages": {}}"#).reason.contains("`messages` is an object, not an array"));
    assert!(error(r#"{"choices": []}"#).reason.contains("without `messages`"));
    assert!(error("   ").reason.contains("empty"));
}

#[test]
fn load_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let path = dir.join("broken.json");
    std::fs::write(&path, r#"[{"role": "user", "content": "hi"}, {"role": 3}]"#).unwrap();
    let e = faultlab_diagnose::load(&path).unwrap_err();
    assert!(matches!(e, LoadError::Parse { .. }));
    assert_eq!(e.to_string(), format!("{}: message 1: `role` is a number, not a string", path.display()));
    let missing = faultlab_diagnose::load(&dir.join("missing.json")).unwrap_err();
    assert!(missing.to_string().contains("missing.json: cannot read"), "{missing}");
}

#[test]
fn unknown_extra_fields_are_tolerated_and_known_optional_ones_are_read() {
    let text = r#"{"id": "run-7", "messages": [
      {"role": "system", "content": "s", "name": "policy"},
      {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}]},
      {"role": "assistant", "content": null, "refusal": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "t", "arguments": "not json"}, "index": 0}], "timestamp": "2026-01-01T00:00:00Z"},
      {"role": "tool", "tool_call_id": "c1", "content": "all fine", "is_error": true, "ts_ms": 1767225600250}
    ], "usage": {"tokens": 9}}"#;
    let trace = faultlab_diagnose::parse(text, None).unwrap();
    assert_eq!(trace.entries[1].text.as_deref(), Some("hi"));
    let call = &trace.calls[0];
    assert_eq!(call.arguments, Some(serde_json::json!("not json")), "arguments that are not JSON are kept as text");
    let result = call.result.as_ref().unwrap();
    assert_eq!(result.status, Outcome::Error, "is_error overrides the text");
    assert_eq!(result.ts_ms.unwrap() - call.ts_ms.unwrap(), 250.0);
    assert!(trace.recorded.timing);
}

#[test]
fn trajectory_errors_name_the_line() {
    let good = r#"{"tsMs": 1.0, "scope": "", "event": "run_started", "seed": 0, "rules": 0}"#;
    let cases = [
        (
            format!(
                "{good}\n\n{{\"tsMs\": 2.0, \"scope\": \"\", \"event\": \"frame\", \"direction\": \"sideways\", \"action\": \"forwarded\"}}"
            ),
            3,
            "`direction`",
        ),
        (format!("{good}\n{{\"tsMs\": 2.0}}"), 2, "no `event`"),
        (format!("{good}\n{{\"event\": \"ledger\"}}"), 2, "no `tsMs`"),
        (
            format!(
                "{good}\n{{\"tsMs\": 2.0, \"scope\": \"\", \"event\": \"frame\", \"direction\": \"client_to_server\", \"action\": \"eaten\"}}"
            ),
            2,
            "`action`",
        ),
        (
            format!(
                "{good}\n{{\"tsMs\": 2.0, \"scope\": \"\", \"event\": \"frame\", \"direction\": \"client_to_server\", \"action\": \"forwarded\", \"id\": [1]}}"
            ),
            2,
            "`id` is an array",
        ),
    ];
    for (text, line, reason) in cases {
        let e = faultlab_diagnose::parse(&text, Some("t.jsonl".as_ref())).unwrap_err();
        assert_eq!(e.location, Location::Line { line, column: None }, "{e}");
        assert!(e.reason.contains(reason), "{e} (wanted {reason:?})");
    }
    let e = faultlab_diagnose::parse(&format!("{good}\n{{\"tsMs\": 2.0, \"event\": "), None).unwrap_err();
    assert!(matches!(e.location, Location::Line { line: 2, column: Some(_) }), "{e}");
    assert!(e.to_string().starts_with("line 2, column "), "{e}");
}

#[test]
fn trajectory_frames_become_calls_with_what_the_client_saw() {
    let frame = |ts: f64, dir: &str, action: &str, id: u32, extra: &str| {
        let method = if dir == "client_to_server" { r#""method": "tools/call", "tool": "w","# } else { "" };
        format!(
            r#"{{"tsMs": {ts}, "scope": "stdio", "event": "frame", "direction": "{dir}", "action": "{action}", "id": {id}, {method} "bytes": 10{extra}}}"#
        )
    };
    let lines = [
        frame(1.0, "client_to_server", "forwarded", 1, r#", "rule": "r", "fault": "timeout""#),
        frame(5.0, "server_to_client", "consumed", 1, r#", "rule": "r", "fault": "timeout", "executed": true"#),
        frame(9.0, "client_to_server", "consumed", 2, r#", "fault": "disconnect", "executed": false"#),
        frame(12.0, "client_to_server", "forwarded", 3, ""),
        frame(14.0, "server_to_client", "forwarded", 3, ""),
        frame(15.0, "client_to_server", "consumed", 4, r#", "fault": "rate_limit", "executed": false"#),
        frame(15.5, "server_to_client", "injected", 4, r#", "fault": "rate_limit", "executed": false"#),
        frame(16.0, "client_to_server", "forwarded", 5, ""),
        // A reply that says it failed is an error; one a fault changed but delivered is a failure the agent met.
        frame(17.0, "client_to_server", "forwarded", 6, ""),
        frame(17.5, "server_to_client", "forwarded", 6, r#", "error": true"#),
        frame(18.0, "client_to_server", "forwarded", 7, ""),
        frame(18.5, "server_to_client", "faulted", 7, r#", "rule": "d", "fault": "duplicate", "executed": true"#),
    ];
    let trace = faultlab_diagnose::parse(&lines.join("\n"), None).unwrap();
    type Seen = (usize, Option<Outcome>, Option<usize>, Option<bool>);
    let seen: Vec<Seen> = trace
        .calls
        .iter()
        .map(|c| (c.at, c.status(), c.result.as_ref().map(|r| r.at), c.result.as_ref().and_then(|r| r.executed)))
        .collect();
    assert_eq!(
        seen,
        [
            (1, Some(Outcome::Timeout), Some(2), Some(true)),
            (3, Some(Outcome::Lost), Some(3), Some(false)),
            (4, Some(Outcome::Ok), Some(5), Some(true)),
            (6, Some(Outcome::Error), Some(7), Some(false)),
            (8, None, None, None),
            (9, Some(Outcome::Error), Some(10), Some(true)),
            (11, Some(Outcome::Faulted), Some(12), Some(true)),
        ]
    );
    assert!(trace.calls.iter().all(|c| c.tool == "w" && c.arguments.is_none()));
    assert!(trace.entries[1].text.as_deref().unwrap().contains("fault timeout · executed upstream"));
}
