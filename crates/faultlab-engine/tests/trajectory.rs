//! The trajectory's one reader: what the writer puts in a file comes back as the same records, and whatever a
//! file holds, the reader answers with records or an error naming the line, never a panic.

use faultlab_engine::recorder::{Direction, Event, FrameAction, Refusal, TransportEventKind};
use faultlab_engine::trajectory::{Outcome, Trajectory, Writer};
use faultlab_engine::{FaultKind, Recorder, WireAction};
use faultlab_wire::{Frame, MessageId};
use serde_json::json;

fn frame(text: &str) -> Frame {
    Frame::parse(text.as_bytes().to_vec())
}

#[test]
fn what_the_writer_records_reads_back_as_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trajectory.jsonl");
    let writer = Writer::new(Recorder::file(&path).unwrap().scoped("stdio")).with_bodies();
    writer.started(7, 2);
    let call = frame(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"b":[1,{"z":null}],"a":"é"}}}"#,
    );
    writer.client_frames_forwarded(std::slice::from_ref(&call), &[true]);
    let reply = frame(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}"#);
    let twice = [WireAction::Send(reply.bytes().clone()), WireAction::Send(reply.bytes().clone())];
    let fault = |json: &str| serde_json::from_str::<FaultKind>(json).unwrap();
    let (duplicate, forbidden) = (fault(r#"{"type":"duplicate"}"#), fault(r#"{"type":"forbidden"}"#));
    let event = writer.server_frame_event(&reply, Some("r"), Some(&duplicate), &twice, true);
    writer.record_events(vec![event]);
    let consumed = frame(r#"{"jsonrpc":"2.0","id":"s-2","method":"tools/call","params":{"name":"echo"}}"#);
    writer.client_frame(&consumed, FrameAction::Consumed, Some("f"), Some(&forbidden), 0);
    let refusal = frame(r#"{"jsonrpc":"2.0","id":"s-2","error":{"code":-32003,"message":"no"}}"#);
    writer.injected_frame(Direction::ServerToClient, &refusal, Some("f"), Some(&forbidden), Some(false));
    writer.transport(TransportEventKind::Closed, MessageId::from_value(&json!(3)).as_ref(), "rule o".into());
    writer.finish();

    let text = std::fs::read_to_string(&path).unwrap();
    let read = Trajectory::read(std::io::BufReader::new(std::fs::File::open(&path).unwrap())).unwrap();
    assert_eq!(read.cut_short, None);
    assert_eq!(read.lines.len(), 7);
    // Written again, each record is the line it was read from, byte for byte: nothing lost, nothing added.
    for (line, raw) in read.lines.iter().zip(text.lines()) {
        assert_eq!(serde_json::to_string(&line.record).unwrap(), raw);
    }
    assert!(matches!(read.lines[0].record.event, Event::RunStarted { seed: 7, rules: 2 }));
    let ledger = Event::Ledger { frames_in: 3, frames_out: 4, consumed: 1, injected: 2 };
    assert_eq!(read.lines[6].record.event, ledger);

    let calls = read.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].arguments().unwrap()["a"], "é");
    assert_eq!(calls[0].fault(), Some((Some("r"), "duplicate")));
    assert_eq!((calls[0].error(), calls[0].executed(), calls[0].outcome()), (true, Some(true), Some(Outcome::Faulted)));
    assert_eq!(calls[0].recorded_reply().unwrap()["result"]["isError"], true);
    assert_eq!((calls[1].id(), calls[1].reply_line()), (&json!("s-2"), Some(5)));
    let refused = (calls[1].executed(), calls[1].outcome(), calls[1].recorded_reply());
    assert_eq!(refused, (Some(false), Some(Outcome::Error), None));
}

/// A request the authorization refused (`--auth`) is a call that failed, never executed and never answered; the
/// same request sent again with a usable token pairs with the reply as any other; the ledger counts neither the
/// refusal nor a body that was not read.
#[test]
fn a_request_the_authorization_refused_reads_back_as_a_refused_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trajectory.jsonl");
    let writer = Writer::new(Recorder::file(&path).unwrap().scoped("http"));
    let write = frame(
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"o"}}}"#,
    );
    let refusal = |status, error: Option<&str>| Refusal {
        status,
        error: error.map(str::to_owned),
        fault: None,
        http_method: "POST".into(),
        unread: None,
    };
    writer.refused(&write, refusal(401, Some("invalid_token")));
    writer.refused(&frame("not json"), refusal(401, None));
    let unread =
        Refusal { unread: Some("larger than 4194304 bytes".into()), ..refusal(403, Some("insufficient_scope")) };
    writer.refused(&frame(""), unread.clone());
    writer.client_frame(&write, FrameAction::Forwarded, None, None, 1);
    let reply = frame(r#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#);
    let event = writer.server_frame_event(&reply, None, None, &[WireAction::Send(reply.bytes().clone())], true);
    writer.record_events(vec![event]);
    writer.finish();

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.lines().next().unwrap().contains(r#""action":"refused""#), "{text}");
    assert!(text.contains(r#""refused":{"status":401,"error":"invalid_token","httpMethod":"POST"}"#), "{text}");
    let read = Trajectory::parse(&text).unwrap();
    let Event::Frame(not_json) = &read.lines[1].record.event else { panic!("{text}") };
    assert_eq!((not_json.method.as_deref(), not_json.bytes, not_json.action), (None, 8, FrameAction::Refused));
    let Event::Frame(not_read) = &read.lines[2].record.event else { panic!("{text}") };
    assert_eq!((not_read.bytes, not_read.refused.as_ref()), (0, Some(&unread)));
    let calls = read.tool_calls();
    assert_eq!(calls.len(), 2, "the refused write and the one that got through: {text}");
    let (refused, through) = (&calls[0], &calls[1]);
    assert_eq!((refused.tool(), refused.id()), (Some("write_file"), &json!(4)));
    assert_eq!(refused.refused().map(|r| (r.status, r.error.as_deref())), Some((401, Some("invalid_token"))));
    assert_eq!(
        (refused.outcome(), refused.executed(), refused.reply_line()),
        (Some(Outcome::Refused), Some(false), None)
    );
    assert!(refused.failed());
    assert_eq!((through.outcome(), through.reply_line()), (Some(Outcome::Ok), Some(5)));
    assert_eq!(read.lines[5].record.event, Event::Ledger { frames_in: 2, frames_out: 2, consumed: 0, injected: 0 });
}

const RUN: &str = r#"{"tsMs":0,"scope":"stdio","event":"run_started","seed":0,"rules":0}"#;

#[test]
fn a_last_line_cut_short_is_set_aside_and_any_other_bad_line_is_named() {
    let cut = Trajectory::parse(&format!("{RUN}\n\n{RUN}\n{{\"tsMs\":1,\"sco")).unwrap();
    assert_eq!(cut.lines.iter().map(|l| l.number).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(cut.cut_short.as_ref().map(|e| e.line), Some(4));

    let frame = r#"{"tsMs":1,"scope":"","event":"frame","direction":"up","action":"forwarded","bytes":1}"#;
    let cases = [
        (format!("{RUN}\n{{\"tsMs\":1,\"sco\n{RUN}\n"), 2, "invalid JSON"),
        (format!("{RUN}\n[1]\n"), 2, "expected an event object, found an array"),
        (format!("{RUN}\n{{\"tsMs\":1,\"scope\":\"\"}}\n"), 2, "no `event`"),
        (format!("{RUN}\n{{\"tsMs\":1,\"scope\":\"\",\"event\":\"gone\"}}\n"), 2, "unknown variant `gone`"),
        (format!("{RUN}\n{{\"tsMs\":\"1\",\"scope\":\"\",\"event\":\"ledger\"}}\n"), 2, "`tsMs` is not a number"),
        (format!("{RUN}\n{RUN}\n{frame}\n"), 3, "`frame` event: `direction`: unknown variant `up`"),
        (format!("{}\n", "[".repeat(200)), 1, "nested deeper than 128 levels"),
    ];
    for (text, line, words) in cases {
        let error = Trajectory::parse(&text).unwrap_err();
        assert_eq!(error.line, line, "{error}");
        assert!(error.to_string().contains(words), "{error} (wanted {words:?})");
    }
}

#[test]
fn a_line_over_the_limit_is_refused() {
    let text = format!("{RUN}\n{{\"tsMs\":1,\"scope\":\"{}\",\"event\":\"ledger\"}}\n", "x".repeat(500));
    let error = Trajectory::read_with_limit(&mut text.as_bytes(), 200).unwrap_err();
    assert_eq!((error.line, error.message.as_str()), (2, "longer than 200 bytes"));
    assert_eq!(Trajectory::read_with_limit(&mut RUN.as_bytes(), RUN.len()).unwrap().lines.len(), 1);
}

#[test]
fn replies_pair_with_requests_by_scope_and_id_and_later_ones_are_duplicates() {
    let frame = |scope: &str, dir: &str, id: u32, method: Option<&str>| {
        let method = method.map_or(String::new(), |m| format!(r#""method":"{m}","tool":"t","#));
        format!(
            r#"{{"tsMs":1,"scope":"{scope}","event":"frame","direction":"{dir}","action":"forwarded","id":{id},{method}"bytes":1}}"#
        )
    };
    let lines = [
        frame("a", "client_to_server", 1, Some("tools/call")),
        frame("b", "client_to_server", 1, Some("tools/call")),
        frame("b", "server_to_client", 1, None),
        // A server-to-client request with the same id is not a reply.
        frame("a", "server_to_client", 1, Some("ping")),
        frame("a", "server_to_client", 1, None),
        frame("a", "server_to_client", 1, None),
        frame("a", "server_to_client", 9, None),
        frame("a", "client_to_server", 2, Some("tools/list")),
    ];
    let trajectory = Trajectory::parse(&lines.join("\n")).unwrap();
    let exchanges = trajectory.exchanges();
    let seen: Vec<_> =
        exchanges.iter().map(|e| (e.request.line, e.reply_line(), e.duplicates.clone(), e.failed())).collect();
    assert_eq!(seen, [(1, Some(5), vec![6], false), (2, Some(3), vec![], false), (8, None, vec![], true)]);
    assert_eq!(trajectory.tool_calls().len(), 2);
    assert!(trajectory.upstream_answered());
}

/// The error the proxy writes for a request whose upstream it could not reach is not the server answering.
#[test]
fn the_proxys_error_for_a_lost_upstream_is_not_an_answer() {
    let lines = [
        r#"{"tsMs":1,"scope":"","event":"frame","direction":"client_to_server","action":"forwarded","id":1,"method":"initialize","bytes":1}"#,
        r#"{"tsMs":2,"scope":"","event":"transport","outcome":"closed","requestId":1,"detail":"connection refused"}"#,
        r#"{"tsMs":3,"scope":"","event":"frame","direction":"server_to_client","action":"forwarded","id":1,"bytes":1,"error":true}"#,
    ];
    let lost = Trajectory::parse(&lines.join("\n")).unwrap();
    assert!(!lost.upstream_answered());
    assert_eq!(lost.upstream_lost(), Some("connection refused"));
    // Without the transport event, the same reply is the server's.
    let answered = Trajectory::parse(&[lines[0], lines[2]].join("\n")).unwrap();
    assert!(answered.upstream_answered());
    assert_eq!(answered.upstream_lost(), None);
}

/// A connection the lab closed itself (a fault aborting the response stream where its reply would be, as
/// `stream_lost` does at `initialize`) is not the upstream lost: the server answered, and the run is graded.
#[test]
fn a_closure_a_fault_requested_is_not_a_lost_upstream() {
    let lines = [
        r#"{"tsMs":1,"scope":"","event":"frame","direction":"client_to_server","action":"forwarded","id":1,"method":"initialize","rule":"r","fault":"stream_lost","bytes":1}"#,
        r#"{"tsMs":2,"scope":"","event":"frame","direction":"server_to_client","action":"consumed","id":1,"rule":"r","fault":"stream_lost","executed":true,"bytes":1}"#,
        r#"{"tsMs":3,"scope":"","event":"transport","outcome":"closure_requested","requestId":1,"detail":"http: aborting the response stream"}"#,
        r#"{"tsMs":4,"scope":"","event":"transport","outcome":"closed","requestId":1,"detail":null}"#,
    ];
    let faulted = Trajectory::parse(&lines.join("\n")).unwrap();
    assert!(faulted.upstream_answered());
    assert_eq!(faulted.upstream_lost(), None);
    // The same closure in another connection's scope is that connection's own.
    let other = lines[2].replace(r#""scope":"""#, r#""scope":"connection 2""#);
    let lost = Trajectory::parse(&[lines[0], lines[1], &other, lines[3]].join("\n")).unwrap();
    assert_eq!(lost.upstream_lost(), Some("the connection closed"));
}
