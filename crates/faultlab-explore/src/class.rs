//! The fault classes exploration tries: one catalogue fault and mode each, and the catalogue faults each stands for;
//! the rest are reported as not tried.

use faultlab_engine::FaultKind;
use faultlab_engine::catalogue::Effect;
use faultlab_engine::rules::Mode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// A fault class: one catalogue fault and mode, chosen as the one of its kind most likely to break a client. Each
/// class is tried once per call, and stands only for the catalogue faults that do the same thing to a client
/// ([`FaultClass::stands_for`]); the catalogue faults no class stands for are listed as not tried
/// ([`not_tried`]), never implied.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema, strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
pub enum FaultClass {
    /// A JSON-RPC error instead of the answer; the server never saw the call.
    Error,
    /// A rate-limit error (with a retry hint) instead of the answer; the server never saw the call.
    RateLimit,
    /// No reply, and the server never saw the call.
    Timeout,
    /// No reply, but the server executed the call (`mode: after`): a retry repeats its side effect.
    TimeoutAfter,
    /// The right reply, half the run's deadline late: past any client timeout shorter than that.
    Latency,
    /// The connection is lost before the call reaches the server.
    TransportLoss,
    /// The reply is not valid JSON-RPC.
    Malformed,
    /// A line that is not JSON, then the right reply.
    NonJsonLine,
    /// The reply arrives twice.
    Duplicate,
    /// A valid reply with the wrong content (empty).
    WrongData,
    /// The right reply padded with 128 KiB of text: past the 64 KiB line limit of common stream readers.
    Oversized,
    /// The previous answer of the same tool, presented as this one.
    Stale,
    /// The call's response stream (Streamable HTTP) is cut before its reply: resumable with `Last-Event-ID`, or
    /// not (`stream_cut.unresumable`, `stream_lost`), or its resume refused. Only over HTTP (a task with
    /// `server: {transport: http}`); on a stdio task it is listed as not tried.
    Stream,
    /// The session is lost around the call: it expires while the call is in flight (its reply a 404), or, where
    /// the task's server gives out session ids, it is forgotten after the reply (`session_lifecycle`). Only over
    /// HTTP, as `stream`.
    Session,
    /// A fault on the model hop, at the nth request to the task's model (`model:` in the task; not an MCP class,
    /// so not among [`FaultClass::ALL`]): the model hop's own faults and the wire's faults the model endpoint
    /// performs ([`crate::model_sites`]). Its representative is `tool_call_cut`.
    Model,
}

/// The padding of the `oversized` class (128 KiB): past the 64 KiB default line limit of common stream readers
/// (Python's asyncio `StreamReader`, Go's `bufio.Scanner`), which is where clients most often break on size; small
/// enough that the lab's relays carry it in a few milliseconds, so what is tested is the size, not a delay. Larger
/// limits (1 MiB, 4 MiB) are not tried: `faultlab eval` with an `oversized` rule tries them.
const OVERSIZED_BYTES: usize = 128 * 1024;

/// The delay of the `latency` class: half the run's deadline (so an agent that waits still has the other half to
/// finish), at most the catalogue's limit, in milliseconds.
pub fn latency_ms(deadline_ms: u64) -> u64 {
    (deadline_ms / 2).min(faultlab_engine::catalogue::MAX_LATENCY_MS)
}

impl FaultClass {
    /// The classes of the MCP hop, every exploration's default.
    pub const ALL: &[FaultClass] = &[
        FaultClass::Error,
        FaultClass::RateLimit,
        FaultClass::Timeout,
        FaultClass::TimeoutAfter,
        FaultClass::Latency,
        FaultClass::TransportLoss,
        FaultClass::Malformed,
        FaultClass::NonJsonLine,
        FaultClass::Duplicate,
        FaultClass::WrongData,
        FaultClass::Oversized,
        FaultClass::Stale,
        FaultClass::Stream,
        FaultClass::Session,
    ];

    /// The name users write (`--classes`) and reports show.
    pub fn name(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    }

    pub fn parse(name: &str) -> Option<Self> {
        serde_json::from_value(Value::from(name)).ok()
    }

    /// The fault and mode that stand for the class on the wire (`latency` with the built-in tasks' deadline's
    /// delay; a run's own is [`FaultClass::fault_for`]).
    pub fn fault(self) -> (FaultKind, Mode) {
        self.fault_for(1500)
    }

    /// The fault and mode of the class in a run whose deadline is `deadline_ms`.
    pub fn fault_for(self, deadline_ms: u64) -> (FaultKind, Mode) {
        let (json, mode) = match self {
            FaultClass::Error => (json!({"type": "http_status", "status": 500}), Mode::Instead),
            FaultClass::RateLimit => (json!({"type": "rate_limit"}), Mode::Instead),
            FaultClass::Timeout => (json!({"type": "timeout"}), Mode::Instead),
            FaultClass::TimeoutAfter => (json!({"type": "timeout"}), Mode::After),
            FaultClass::Latency => (json!({"type": "latency", "delay_ms": latency_ms(deadline_ms)}), Mode::After),
            FaultClass::TransportLoss => (json!({"type": "disconnect"}), Mode::Before),
            FaultClass::Malformed => (json!({"type": "malformed"}), Mode::After),
            FaultClass::NonJsonLine => (json!({"type": "non_json_line"}), Mode::After),
            FaultClass::Duplicate => (json!({"type": "duplicate"}), Mode::After),
            FaultClass::WrongData => (json!({"type": "empty"}), Mode::After),
            FaultClass::Oversized => (json!({"type": "oversized", "bytes": OVERSIZED_BYTES}), Mode::After),
            FaultClass::Stale => (json!({"type": "stale"}), Mode::After),
            // Resumable (event ids, a priming event): the reply waits in the stream's log for a `GET` resume.
            FaultClass::Stream => (json!({"type": "stream_cut"}), Mode::After),
            FaultClass::Session => (json!({"type": "session_expired_in_flight"}), Mode::After),
            FaultClass::Model => (json!({"type": "tool_call_cut"}), Mode::After),
        };
        (serde_json::from_value(json).expect("the classes' faults are catalogue faults within their limits"), mode)
    }

    /// What the client sees, from the catalogue.
    pub fn effect(self) -> Effect {
        self.fault().0.effect()
    }

    /// The catalogue faults this class stands for: its own, and those that do the same thing to a client (an error
    /// instead of the answer; a reply that never comes; an extra copy of an answered reply). A fault with the same
    /// effect that acts otherwise on the wire (`framing`, `out_of_order`, `invalid_result`, …) is not tried by it.
    pub fn stands_for(self) -> Vec<&'static str> {
        match self {
            FaultClass::Error => {
                vec!["http_status", "burst_failure", "server_outage", "cascading_failure", "auth_expired", "forbidden"]
            }
            FaultClass::RateLimit => vec!["rate_limit"],
            FaultClass::Timeout => vec!["timeout", "wrong_id", "missing_id", "late_response"],
            FaultClass::TimeoutAfter => vec!["timeout"],
            FaultClass::Latency => vec!["latency"],
            FaultClass::TransportLoss => vec!["disconnect"],
            FaultClass::Malformed => vec!["malformed"],
            FaultClass::NonJsonLine => vec!["non_json_line"],
            FaultClass::Duplicate => vec!["duplicate", "replayed"],
            FaultClass::WrongData => vec!["empty"],
            FaultClass::Oversized => vec!["oversized"],
            FaultClass::Stale => vec!["stale"],
            FaultClass::Stream => vec!["stream_cut", "stream_lost", "resume_refused"],
            FaultClass::Session => vec!["session_expired_in_flight"],
            // The model hop's other faults do other things to an agent: tried as members, not stood for.
            FaultClass::Model => vec![crate::model_sites::REPRESENTATIVE],
        }
    }

    /// A class whose faults act on what only Streamable HTTP has (a response stream, a session): tried only on a
    /// task over HTTP, where the run's proxy has its HTTP front.
    pub fn http_only(self) -> bool {
        matches!(self, FaultClass::Stream | FaultClass::Session)
    }
}

/// The faults of the HTTP classes that act on the session rather than on a response stream.
const SESSION_FAULTS: &[&str] = &["session_lifecycle", "session_expired_in_flight"];

/// Further members of a class: a catalogue fault again with other parameters that make it act otherwise on the
/// wire, named `fault.variant` (a cut stream that cannot be resumed; each way of losing a session).
fn variants(class: FaultClass) -> Vec<(&'static str, Value)> {
    match class {
        FaultClass::Stream => vec![("stream_cut.unresumable", json!({"type": "stream_cut", "ids": false}))],
        FaultClass::Session => vec![
            ("session_lifecycle.restart", json!({"type": "session_lifecycle", "variant": "restart"})),
            ("session_lifecycle.reinit_404", json!({"type": "session_lifecycle", "variant": "reinit_404"})),
        ],
        _ => Vec::new(),
    }
}

/// The catalogue fault a member name stands for (`stream_cut.unresumable` is `stream_cut`).
pub fn catalogue_name(member: &str) -> &str {
    member.split('.').next().unwrap_or(member)
}

/// One catalogue fault tried under a class: its catalogue name, the fault and the mode the rule puts it in.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The catalogue entry (`forbidden`, `framing`), as reports name it.
    pub name: &'static str,
    pub fault: FaultKind,
    pub mode: Mode,
}

impl FaultClass {
    /// The catalogue fault that stands for the class (`--quick` tries it alone).
    pub fn representative(self) -> &'static str {
        self.stands_for()[0]
    }

    /// The fault that stands for the class at a site whose request is `method` (`None`: a tool call): its
    /// representative, except where the proxy cannot perform that there. An `initialize` carries no session id,
    /// so no session is in flight to expire: there the session class stands for the session lost after its
    /// reply (`session_lifecycle`, the next request answered 400).
    pub fn representative_at(self, method: Option<&str>) -> &'static str {
        match (self, method) {
            (FaultClass::Session, Some("initialize")) => "session_lifecycle",
            _ => self.representative(),
        }
    }

    /// Every catalogue fault tried under the class (its representative first): the faults it stands for, and,
    /// for the class that is the home of an effect, the faults of that effect no class stands for (`framing`
    /// under `non-json-line`, `invalid_result` under `malformed`, …), so that every fault on the MCP wire is
    /// tried under exactly one class. A fault other than the representative takes the catalogue's first example
    /// and the class's mode (`before` only for the faults that allow it; `after` else).
    pub fn members(self, deadline_ms: u64) -> Vec<Member> {
        if self == FaultClass::Model {
            return crate::model_sites::members();
        }
        let (fault, mode) = self.fault_for(deadline_ms);
        let mut members = vec![Member { name: self.representative(), fault, mode }];
        for (name, fault) in mcp_examples() {
            if name == self.representative() || home_of(name, &fault) != Some(self) {
                continue;
            }
            let mode = match mode {
                Mode::Before if !matches!(fault, FaultKind::Latency(_) | FaultKind::Disconnect(_)) => Mode::After,
                mode => mode,
            };
            members.push(Member { name, fault, mode });
        }
        for (name, json) in variants(self) {
            let fault = serde_json::from_value(json).expect("the classes' variants are catalogue faults");
            members.push(Member { name, fault, mode });
        }
        members
    }

    /// The member of the class named `name`, if it has one.
    pub fn member(self, name: &str, deadline_ms: u64) -> Option<Member> {
        self.members(deadline_ms).into_iter().find(|m| m.name == name)
    }

    /// The class an effect's unclaimed faults are tried under.
    fn home(effect: Effect) -> FaultClass {
        match effect {
            Effect::Result => FaultClass::NonJsonLine,
            Effect::WrongData => FaultClass::WrongData,
            Effect::Error => FaultClass::Error,
            Effect::Invalid => FaultClass::Malformed,
            Effect::Timeout => FaultClass::Timeout,
            Effect::TransportLoss => FaultClass::TransportLoss,
        }
    }
}

/// The class a catalogue fault is tried under: the first class that stands for it (`timeout` is tried under
/// `timeout` and, as its only member, `timeout-after`), else the home class of its effect.
fn home_of(name: &str, fault: &FaultKind) -> Option<FaultClass> {
    // Whatever their effect, the faults of a response stream and of a session act only over HTTP: tried there.
    if SESSION_FAULTS.contains(&name) {
        return Some(FaultClass::Session);
    }
    if fault.on_stream() || name == "stream_lost" {
        return Some(FaultClass::Stream);
    }
    FaultClass::ALL
        .iter()
        .copied()
        .find(|c| c.stands_for().contains(&name))
        .or_else(|| Some(FaultClass::home(fault.effect())))
}

/// The catalogue's faults a proxy puts on the MCP wire, each with its first example (not the model hop's, nor
/// those only `faultlab serve` commits, which the proxy refuses).
fn mcp_examples() -> impl Iterator<Item = (&'static str, FaultKind)> {
    FaultKind::examples().into_iter().filter_map(|(name, examples)| {
        let fault: FaultKind = serde_json::from_str(examples.first()?).ok()?;
        (!fault.model_only() && fault.serve_only().is_none()).then_some((name, fault))
    })
}

/// The catalogue faults none of `classes` stands for: not tried by the exploration.
pub fn not_tried(classes: &[FaultClass]) -> Vec<&'static str> {
    let tried: BTreeSet<&str> = classes.iter().flat_map(|c| c.stands_for()).collect();
    mcp_faults().filter(|name| !tried.contains(name)).collect()
}

/// The catalogue's faults no exploration tries, whatever its classes: the model hop's own (exploration faults the
/// MCP wire, not the agent's model) and those only `faultlab serve` commits (a proxy cannot make another server ask
/// back or run a task), in that order.
pub fn beyond_the_proxy() -> (Vec<&'static str>, Vec<&'static str>) {
    let mut model = Vec::new();
    let mut serve = Vec::new();
    for (name, examples) in FaultKind::examples() {
        let Some(fault) = examples.first().and_then(|e| serde_json::from_str::<FaultKind>(e).ok()) else { continue };
        if fault.model_only() {
            model.push(name);
        } else if fault.serve_only().is_some() {
            serve.push(name);
        }
    }
    (model, serve)
}

/// The catalogue's faults on the MCP wire (exploration faults the MCP side; the model hop's own faults are not
/// its to try).
fn mcp_faults() -> impl Iterator<Item = &'static str> {
    mcp_examples().map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_stands_for_faults_of_its_effect_and_the_rest_are_listed_as_not_tried() {
        let mut named = BTreeSet::new();
        for &class in FaultClass::ALL {
            let faults = class.stands_for();
            assert!(faults.contains(&class.fault().0.name()), "{class:?}: {faults:?}");
            assert!(faults.iter().all(|f| FaultKind::effect_of(f) == Some(class.effect())), "{class:?}: {faults:?}");
            named.extend(faults);
        }
        let catalogue: BTreeSet<&str> = mcp_faults().collect();
        let untried: BTreeSet<&str> = not_tried(FaultClass::ALL).into_iter().collect();
        assert!(named.is_disjoint(&untried));
        assert_eq!(&named | &untried, catalogue);
        // A non-JSON line, a late reply and an oversized one are classes of their own, not a duplicate or an empty
        // reply; faults that act otherwise on the wire are not claimed.
        for (fault, class) in [
            ("non_json_line", FaultClass::NonJsonLine),
            ("latency", FaultClass::Latency),
            ("oversized", FaultClass::Oversized),
        ] {
            assert_eq!(class.fault().0.name(), fault);
            assert!(
                !FaultClass::Duplicate.stands_for().contains(&fault)
                    && !FaultClass::WrongData.stands_for().contains(&fault)
            );
        }
        for fault in ["framing", "split_write", "out_of_order", "invalid_result"] {
            assert!(untried.contains(fault), "{fault}");
        }
        assert!(FaultClass::Error.stands_for().contains(&"server_outage"));
        assert!(FaultClass::Timeout.stands_for().contains(&"wrong_id"));
        assert_eq!(FaultClass::parse("timeout-after"), Some(FaultClass::TimeoutAfter));
        assert_eq!(FaultClass::parse("non-json-line"), Some(FaultClass::NonJsonLine));
        // Only the classes asked for count as tried.
        assert!(not_tried(&[FaultClass::Error]).contains(&"non_json_line"));
        // The rest of the catalogue is named as beyond the proxy: every fault is in exactly one of the lists.
        let (model, serve) = beyond_the_proxy();
        assert!(model.contains(&"token_quota") && serve.contains(&"ask_back") && serve.contains(&"task_lifecycle"));
        let beyond: BTreeSet<&str> = model.iter().chain(&serve).copied().collect();
        assert!(beyond.is_disjoint(&catalogue), "{beyond:?}");
        let everything: BTreeSet<&str> = FaultKind::examples().into_iter().map(|(name, _)| name).collect();
        assert_eq!(&beyond | &catalogue, everything);
    }

    #[test]
    fn every_fault_on_the_mcp_wire_is_a_member_of_exactly_one_class_but_timeout() {
        let mut seen: Vec<&str> = Vec::new();
        for &class in FaultClass::ALL {
            let members = class.members(1500);
            assert_eq!(members[0].name, class.representative());
            assert_eq!((members[0].fault.clone(), members[0].mode), class.fault_for(1500));
            for m in &members {
                // A member's rule is valid as the class puts it (`before` only where the catalogue allows it).
                assert!(m.fault.validate().is_ok(), "{class:?} {}", m.name);
                assert!(m.mode != Mode::Before || matches!(m.fault, FaultKind::Disconnect(_)), "{}", m.name);
            }
            seen.extend(members.iter().map(|m| m.name).filter(|n| catalogue_name(n) == *n));
        }
        let catalogue: BTreeSet<&str> = mcp_faults().collect();
        assert_eq!(seen.iter().copied().collect::<BTreeSet<_>>(), catalogue);
        // timeout is tried twice (before and after the server executes the call); every other fault once (its
        // variants aside).
        assert_eq!(seen.len(), catalogue.len() + 1, "{seen:?}");
        // The stream's and the session's faults are tried under their own classes (only over HTTP), whatever
        // their effect, with their variants.
        for (class, fault) in [
            (FaultClass::Stream, "stream_lost"),
            (FaultClass::Stream, "stream_replay"),
            (FaultClass::Stream, "stream_cut.unresumable"),
            (FaultClass::Session, "session_lifecycle"),
            (FaultClass::Session, "session_lifecycle.reinit_404"),
        ] {
            let member = class.member(fault, 1500).unwrap_or_else(|| panic!("{fault}"));
            assert_eq!(member.fault.name(), catalogue_name(fault));
        }
        let unresumable = FaultClass::Stream.member("stream_cut.unresumable", 1500).unwrap();
        assert_eq!(serde_json::to_value(&unresumable.fault).unwrap()["ids"], false);
        assert!(FaultClass::ALL.iter().filter(|c| c.http_only()).count() == 2);
        // The faults no class stood for are tried under the home class of their effect.
        assert!(FaultClass::NonJsonLine.member("framing", 1500).is_some());
        assert!(FaultClass::Malformed.member("invalid_result", 1500).is_some());
        assert!(FaultClass::WrongData.member("partial_result", 1500).is_some());
        assert!(FaultClass::Error.member("forbidden", 1500).is_some_and(|m| m.mode == Mode::Instead));
        assert_eq!(FaultClass::TimeoutAfter.members(1500).len(), 1);
    }

    /// docs/explore.md's class table and its `--quick` list of faults not tried, against the classes: a class
    /// added, or a fault one stands for, fails here until the docs say so, with the cells to write.
    #[test]
    fn the_class_table_in_docs_explore_md_matches_the_classes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/explore.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let header = "| class | fault on the wire | mode | effect | also stands for |";
        let table = doc.split_once(header).expect("docs/explore.md has the class table").1;
        // The rows after the header's separator line, up to the first line that is no row.
        let rows: Vec<Vec<&str>> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
            .collect();
        assert!(rows.iter().all(|r| r.len() == 5), "five cells a row: {rows:?}");
        let backticked = |cell: &str| cell.split('`').nth(1).unwrap_or_default().to_owned();
        let mut wrong = Vec::new();
        for &class in FaultClass::ALL {
            let (fault, mode) = class.fault();
            let mode = serde_json::to_value(mode).unwrap().as_str().unwrap().to_owned();
            let effect: &str = class.effect().into();
            let also = class.stands_for()[1..].join(", ");
            let Some(row) = rows.iter().find(|r| backticked(r[0]) == class.name()) else {
                wrong.push(format!(
                    "no row for class `{}`: add | `{}` | `{}` | {mode} | {effect} | {also} |",
                    class.name(),
                    class.name(),
                    fault.name()
                ));
                continue;
            };
            let cells = [
                ("fault on the wire", backticked(row[1]), fault.name().to_owned()),
                ("mode", row[2].split_whitespace().next().unwrap_or_default().to_owned(), mode),
                ("effect", row[3].to_owned(), effect.to_owned()),
                ("also stands for", row[4].to_owned(), also),
            ];
            for (column, written, code) in cells {
                if written != code {
                    wrong.push(format!(
                        "class `{}`, column \"{column}\": the docs say `{written}`, the code `{code}`",
                        class.name()
                    ));
                }
            }
        }
        assert!(wrong.is_empty(), "docs/explore.md's class table:\n{}", wrong.join("\n"));
        assert_eq!(rows.len(), FaultClass::ALL.len(), "one row per class: {rows:?}");

        let quick = doc.split_once("With `--quick`, not tried by any class: ").expect("the --quick list").1;
        let listed: BTreeSet<String> =
            quick.split_once(" (").unwrap().0.split(',').map(|name| name.trim().trim_matches('`').to_owned()).collect();
        // In catalogue order, as the docs write them.
        let untried = not_tried(FaultClass::ALL);
        assert_eq!(
            listed,
            untried.iter().map(|&n| n.to_owned()).collect(),
            "docs/explore.md's --quick list: write {}",
            untried.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        );
    }

    #[test]
    fn latency_is_half_the_runs_deadline_and_oversized_is_past_the_common_line_limit() {
        let (fault, _) = FaultClass::Latency.fault_for(1500);
        assert_eq!(serde_json::to_value(&fault).unwrap()["delay_ms"], 750);
        let (fault, _) = FaultClass::Latency.fault_for(3_600_000);
        assert_eq!(serde_json::to_value(&fault).unwrap()["delay_ms"], faultlab_engine::catalogue::MAX_LATENCY_MS);
        let (fault, _) = FaultClass::Oversized.fault_for(1500);
        assert!(serde_json::to_value(&fault).unwrap()["bytes"].as_u64().unwrap() > 64 * 1024);
    }
}
