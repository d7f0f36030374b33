//! Variant synthesis and pruning: pure functions of the healthy run's tool calls (and, for pairs, of the singles'
//! verdicts). What is left out is listed with the reason, never dropped silently.

use super::class::{FaultClass, Member};
use faultlab_engine::catalogue::{Earlier, Reply};
use faultlab_engine::rules::{At, Match, Rule};
use faultlab_wire::frame::Frame;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// One tool call of the healthy run, as exploration names it: "the nth call to tool T" (so a variant stays
/// meaningful when a fault makes the agent call things in another order), and its position in the healthy run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Site {
    /// Position among the healthy run's tool calls: 0-based here, counted from 1 (`#1`) in `report.json`.
    #[serde(with = "faultlab_eval::one_based")]
    #[schemars(with = "usize")]
    pub call: usize,
    pub tool: String,
    /// 1-based: the nth call to `tool`.
    pub nth: u64,
    /// A request of the protocol itself (`initialize`, `tools/list`; `--protocol-sites`), whose method `tool`
    /// then repeats; absent for a `tools/call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

impl Site {
    pub fn label(&self) -> String {
        match crate::model_sites::is_model(self) {
            true => format!("#{} {} (request {})", self.call + 1, self.tool, self.nth),
            false => format!("#{} {} (call {} of it)", self.call + 1, self.tool, self.nth),
        }
    }
}

/// What exploration needs to know of one healthy call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallFacts {
    pub tool: String,
    pub arguments: Value,
    /// The text of the server's reply, when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The call changed the workspace (a ledger entry, or an executed call carrying data another call produced).
    pub wrote: bool,
    /// The reply was an error in the healthy run.
    pub error: bool,
    /// A request of the protocol itself (`initialize`, `tools/list`), named in `tool` too; absent for a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// When a fault strikes: the timing dimension of a variant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// At the nth call to the site's tool (the site's own naming).
    #[default]
    Nth,
    /// At the first tool call that follows the first write of the healthy run, whichever tool the agent calls
    /// there: the proxy counts every `tools/call` and faults the one at the site's position. Under other faults
    /// that make the agent call more or fewer times before it, this is a different call than the nth call to
    /// the site's tool, which is the point of the dimension (state already changed when the fault strikes).
    AfterFirstWrite,
    /// While the stream resumes: the site's response stream cut (`stream_cut`, resumable, with a `retry:` of
    /// [`AT_RESUME_RETRY_MS`]) and the fault at that stream's first resume (a rule with `match.at: resume`). HTTP
    /// only; the fault is one of [`at_resume_members`].
    AtResume,
}

impl Timing {
    pub fn is_nth(&self) -> bool {
        *self == Timing::Nth
    }

    /// How reports say the timing after a fault's name: nothing for the nth call.
    pub fn phrase(&self) -> &'static str {
        match self {
            Timing::Nth => "",
            Timing::AfterFirstWrite => " after the first write",
            Timing::AtResume => " while the stream resumes",
        }
    }
}

/// The `retry:` of the cut a fault at the resume follows, in ms: a client resumes that soon, inside a typical call
/// timeout (the controls' 500 ms), so the resume happens and the fault acts; with the cut's default 3 s most
/// clients give the call up first and the fault never fires.
pub const AT_RESUME_RETRY_MS: u64 = 100;

/// The faults tried at a cut stream's resume, named as reports name them, the representative (`--quick`) first:
/// `http_status` 503 (what a resume most often meets in the wild, a load balancer whose backend restarts; a client
/// must report the call lost or recover it, not hang or resume for ever), `disconnect` (the connection closed
/// before a byte), `latency` (the replay half the run's deadline late), `timeout` (no answer at all) and
/// `session_expired_in_flight` (the session lost at the resume: it and every later request 404).
pub fn at_resume_members(deadline_ms: u64) -> Vec<Member> {
    let member = |name: &'static str, json: Value| Member {
        name,
        fault: serde_json::from_value(json).expect("the faults at a resume are catalogue faults within their limits"),
        mode: faultlab_engine::rules::Mode::After,
    };
    vec![
        member("http_status", serde_json::json!({"type": "http_status", "status": 503})),
        member("disconnect", serde_json::json!({"type": "disconnect"})),
        member("latency", serde_json::json!({"type": "latency", "delay_ms": super::class::latency_ms(deadline_ms)})),
        member("timeout", serde_json::json!({"type": "timeout"})),
        member("session_expired_in_flight", serde_json::json!({"type": "session_expired_in_flight"})),
    ]
}

/// One fault of a variant: a catalogue fault of a class at a site.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Planned {
    pub site: Site,
    pub class: FaultClass,
    /// The catalogue fault tried ([`FaultClass::members`]); the class's representative by default.
    pub fault: String,
    /// When it strikes; absent for the nth call to the site's tool.
    #[serde(default, skip_serializing_if = "Timing::is_nth")]
    pub timing: Timing,
}

impl Planned {
    /// The class's representative at `site` (the fault that stands for it there: [`FaultClass::representative_at`]).
    pub fn of(site: Site, class: FaultClass) -> Self {
        let fault = class.representative_at(site.method.as_deref()).into();
        Self { site, class, fault, timing: Timing::Nth }
    }

    /// `timeout-after at #2 …` for a class's representative, `error/forbidden at #2 …` for another member,
    /// `error after the first write, at #3 …` for the timing dimension.
    pub fn label(&self) -> String {
        match self.timing {
            Timing::Nth => format!("{} at {}", self.name(), self.site.label()),
            timing => format!("{}{}, at {}", self.name(), timing.phrase(), self.site.label()),
        }
    }

    /// The class, and the fault when it is not the class's representative.
    pub fn name(&self) -> String {
        match self.fault == self.class.representative() {
            true => self.class.name(),
            false => format!("{}/{}", self.class.name(), self.fault),
        }
    }

    /// The fault and mode on the wire, in a run whose deadline is `deadline_ms`.
    pub fn member(&self, deadline_ms: u64) -> Member {
        if self.timing == Timing::AtResume
            && let Some(member) = at_resume_members(deadline_ms).into_iter().find(|m| m.name == self.fault)
        {
            return member;
        }
        self.class.member(&self.fault, deadline_ms).unwrap_or_else(|| {
            let (fault, mode) = self.class.fault_for(deadline_ms);
            Member { name: self.class.representative(), fault, mode }
        })
    }

    /// The proxy rule that puts this fault on exactly this call, in a run whose deadline is `deadline_ms`.
    pub fn rule(&self, deadline_ms: u64) -> Rule {
        let Member { fault, mode, .. } = self.member(deadline_ms);
        // A model site's tool is `model API`: the rule's name keeps to one word.
        let tool = self.site.tool.replace(' ', "-");
        let mut name = match self.fault == self.class.representative() {
            true => format!("explore-{}-{}-{}", self.class.name(), tool, self.site.nth),
            false => format!("explore-{}-{}-{}-{}", self.class.name(), self.fault, tool, self.site.nth),
        };
        match self.timing {
            Timing::Nth => {}
            Timing::AfterFirstWrite => name.push_str("-after-first-write"),
            Timing::AtResume => name.push_str("-at-resume"),
        }
        let mut rule = Rule {
            name,
            matcher: match (&self.site.method, self.timing) {
                (Some(method), _) => {
                    Match { method: Some(method.clone()), nth: Some(self.site.nth), ..Match::default() }
                }
                // Any tool: the site's position among the tool calls (tool calls come first among the sites).
                (None, Timing::AfterFirstWrite) => Match {
                    method: Some("tools/call".into()),
                    nth: Some(self.site.call as u64 + 1),
                    ..Match::default()
                },
                (None, Timing::Nth | Timing::AtResume) => Match {
                    method: Some("tools/call".into()),
                    tool: Some(glob::Pattern::escape(&self.site.tool)),
                    nth: Some(self.site.nth),
                    ..Match::default()
                },
            },
            mode,
            fault,
            schedule: None,
        };
        if self.timing == Timing::AtResume {
            rule.matcher.at = Some(At::Resume);
        }
        rule
    }

    /// Every rule the fault needs: its own ([`Planned::rule`]), after, for a fault while the stream resumes, the
    /// cut of the site's stream it acts at the resume of (resumable, `retry:` [`AT_RESUME_RETRY_MS`]).
    pub fn rules(&self, deadline_ms: u64) -> Vec<Rule> {
        let own = self.rule(deadline_ms);
        if self.timing != Timing::AtResume {
            return vec![own];
        }
        let cut = serde_json::json!({"type": "stream_cut", "retry_ms": AT_RESUME_RETRY_MS});
        let cut = Rule {
            name: format!("{}-cut", own.name),
            matcher: Match { at: None, ..own.matcher.clone() },
            mode: faultlab_engine::rules::Mode::After,
            fault: serde_json::from_value(cut).expect("a stream cut within its limits"),
            schedule: None,
        };
        vec![cut, own]
    }
}

/// A set of faults tried together in one run (one, or two with `--max-faults 2`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Variant {
    /// Stable within an exploration: `v001`, `v002`, … in synthesis order.
    pub id: String,
    pub faults: Vec<Planned>,
}

impl Variant {
    pub fn label(&self) -> String {
        self.faults.iter().map(Planned::label).collect::<Vec<_>>().join(" + ")
    }

    /// The rules of the MCP hop (the task's `faults`).
    pub fn rules(&self, deadline_ms: u64) -> Vec<Rule> {
        self.faults
            .iter()
            .filter(|f| !crate::model_sites::is_model(&f.site))
            .flat_map(|f| f.rules(deadline_ms))
            .collect()
    }

    /// The rules of the model hop (the task's `model.faults`).
    pub fn model_rules(&self, deadline_ms: u64) -> Vec<Rule> {
        self.faults
            .iter()
            .filter(|f| crate::model_sites::is_model(&f.site))
            .flat_map(|f| f.rules(deadline_ms))
            .collect()
    }
}

/// A variant, call or class left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Pruned {
    /// What was not tried (a fault at a call, a pair, a class).
    pub what: String,
    pub why: String,
}

/// The healthy calls, named as sites.
pub fn sites(calls: &[CallFacts]) -> Vec<Site> {
    let mut seen: std::collections::BTreeMap<&str, u64> = Default::default();
    calls
        .iter()
        .enumerate()
        .map(|(call, c)| {
            let nth = seen.entry(&c.tool).or_default();
            *nth += 1;
            Site { call, tool: c.tool.clone(), nth: *nth, method: c.method.clone() }
        })
        .collect()
}

/// Why `class` cannot matter at this call, if it cannot.
fn not_applicable(class: FaultClass, site: &Site, call: &CallFacts) -> Option<String> {
    match class {
        FaultClass::TimeoutAfter if !call.wrote => {
            Some("the call changed nothing in the healthy run: a timeout after executing it is a plain timeout".into())
        }
        FaultClass::Stale if site.nth == 1 => {
            Some(format!("no earlier reply of {} to resend: stale would send the reply unchanged", site.tool))
        }
        FaultClass::WrongData | FaultClass::Malformed | FaultClass::Duplicate | FaultClass::Stale if call.error => {
            Some("the healthy reply was already an error: there is no result to change".into())
        }
        _ => None,
    }
}

/// Why a fault of an HTTP class (`stream`, `session`; `member` as the class names it) is not performed at `site`
/// by the proxy's HTTP front, if it is not. A response stream is cut at every request, the protocol's own
/// included; a session is lost only where there is one to lose.
fn not_on_the_wire(member: &str, site: &Site, front: Front) -> Option<String> {
    let fault = super::class::catalogue_name(member);
    if front == Front::Http && fault == "session_expired_in_flight" && site.method.as_deref() == Some("initialize") {
        return Some(
            "an initialize carries no session id: no session is in flight to expire (the session begins with its \
             reply); a session lost between initialize and the first call is session_lifecycle after the \
             initialize's reply, which stands for the class there"
                .into(),
        );
    }
    None
}

/// How the agent reaches the run's proxy: what decides whether the HTTP classes (`stream`, `session`) are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// `faultlab connect` (stdio): no response stream, no session.
    Stdio,
    /// The proxy's HTTP front (`server: {transport: http}`), with sessions: a server at `server.url` gives out
    /// its own, and a server the proxy starts (bridged over stdio) gets one from the front per `initialize`.
    Http,
}

impl Front {
    pub fn of(task: &faultlab_eval::task::Task) -> Self {
        match task.server.transport {
            faultlab_eval::task::Transport::Stdio => Front::Stdio,
            faultlab_eval::task::Transport::Http => Front::Http,
        }
    }
}

/// Single faults over stdio ([`singles_on`]).
pub fn singles(calls: &[CallFacts], classes: &[FaultClass], quick: bool) -> (Vec<Planned>, Vec<Pruned>) {
    singles_on(calls, classes, quick, Front::Stdio)
}

/// Single faults: at every healthy call, every class that applies, and under each class every catalogue fault
/// that applies there (`quick`: the class's representative only), in call order then class order. A fault applies
/// where the catalogue's own `apply` acts on the healthy reply (a list fault leaves a tool's reply unchanged);
/// what does not is listed with the catalogue's reason. The HTTP classes are tried at the tool calls of a task over
/// HTTP, where the proxy's HTTP front performs them (the engine's `apply` is what stdio does: not asked); on a
/// stdio task each is listed once as not tried.
pub fn singles_on(
    calls: &[CallFacts],
    classes: &[FaultClass],
    quick: bool,
    front: Front,
) -> (Vec<Planned>, Vec<Pruned>) {
    let mut planned = Vec::new();
    let mut pruned = Vec::new();
    if front == Front::Stdio {
        for class in classes.iter().filter(|c| c.http_only()) {
            pruned.push(Pruned {
                what: format!("{} faults (at every tool call)", class.name()),
                why: "the task is over stdio: a response stream and a session exist only over Streamable HTTP \
                      (server: {transport: http})"
                    .into(),
            });
        }
    }
    if front != Front::Stdio && classes.contains(&FaultClass::Stream) {
        pruned.push(Pruned {
            what: "faults at a resume other than the first resume of a cut stream".into(),
            why: "a fault at a resume is tried at the first resume of each site's resumable stream_cut (the timing \
                  \"while the stream resumes\"); a second resume, the resume of another stream fault's stream \
                  (stream_cut_again, stream_replay, empty_event_id, stream_retry, resume_refused act at their own \
                  resumes themselves, tried without --quick) and the standalone GET stream are not tried"
                .into(),
        });
    }
    for (site, call) in sites(calls).into_iter().zip(calls) {
        let earlier = earlier(calls, site.call);
        for &class in classes {
            if class.http_only() && front == Front::Stdio {
                continue;
            }
            let representative = Planned::of(site.clone(), class);
            let stand_in = representative.fault.clone();
            let why = match class.http_only() {
                true => not_on_the_wire(&representative.fault, &site, front),
                false => not_applicable(class, &site, call),
            };
            // A class that cannot matter at the call is listed once; an HTTP fault the front does not perform at
            // the site leaves the class's other faults to try.
            let cannot_matter = why.is_some() && !class.http_only();
            match why {
                Some(why) => pruned.push(Pruned { what: representative.label(), why }),
                None => planned.push(representative),
            }
            if quick || cannot_matter {
                continue;
            }
            // The deadline does not change which faults apply (only the latency class's delay).
            for member in class.members(1500).into_iter().filter(|m| m.name != stand_in) {
                let fault = Planned { site: site.clone(), class, fault: member.name.into(), timing: Timing::Nth };
                if class.http_only() {
                    match not_on_the_wire(member.name, &site, front) {
                        Some(why) => pruned.push(Pruned { what: fault.label(), why }),
                        None => planned.push(fault),
                    }
                    continue;
                }
                match skipped(&member, call, &earlier) {
                    Some(why) => pruned.push(Pruned { what: fault.label(), why }),
                    None => planned.push(fault),
                }
            }
        }
    }
    (planned, pruned)
}

/// Each class's representative at a site no healthy run made (a recovery call the search combines), where the
/// front can perform it: the HTTP classes only over HTTP, and only where their representative acts on the wire.
pub fn representatives_at(site: &Site, classes: &[FaultClass], front: Front) -> Vec<Planned> {
    classes
        .iter()
        .filter(|c| match c.http_only() {
            true => {
                front != Front::Stdio
                    && not_on_the_wire(c.representative_at(site.method.as_deref()), site, front).is_none()
            }
            false => true,
        })
        .map(|&class| Planned::of(site.clone(), class))
        .collect()
}

/// The timing dimension "after the first write": each single planned at the first tool call that follows the
/// first write of the healthy run (a call the ledger recorded as a change, or, without a ledger, an executed
/// call), again with that timing. Nothing when the healthy run wrote nothing or made no tool call after its
/// first write; that is listed.
pub fn after_first_write(calls: &[CallFacts], singles: &[Planned]) -> (Vec<Planned>, Vec<Pruned>) {
    let tools = || calls.iter().enumerate().filter(|(_, c)| c.method.is_none());
    let Some((write, _)) = tools().find(|(_, c)| c.wrote) else {
        let why = "the healthy run wrote nothing".to_owned();
        return (Vec::new(), vec![Pruned { what: "faults after the first write".into(), why }]);
    };
    let Some((next, _)) = tools().find(|(i, _)| *i > write) else {
        let why = format!("the healthy run made no tool call after its first write (#{})", write + 1);
        return (Vec::new(), vec![Pruned { what: "faults after the first write".into(), why }]);
    };
    let planned = singles
        .iter()
        .filter(|p| p.site.call == next && p.timing == Timing::Nth)
        .map(|p| Planned { timing: Timing::AfterFirstWrite, ..p.clone() })
        .collect();
    (planned, Vec::new())
}

/// The timing dimension "while the stream resumes": at each site where the stream class's resumable cut
/// (`stream_cut`) is planned, that cut and each fault at its resume ([`at_resume_members`]; `quick`: the
/// representative, `http_status` 503, with the others listed as not tried). Only where a stream is cut: a task
/// over stdio plans no cut, and gets nothing here.
pub fn at_resume(singles: &[Planned], quick: bool) -> (Vec<Planned>, Vec<Pruned>) {
    let cuts =
        singles.iter().filter(|p| p.class == FaultClass::Stream && p.fault == "stream_cut" && p.timing == Timing::Nth);
    let members = at_resume_members(1500);
    let mut planned = Vec::new();
    for cut in cuts {
        for member in members.iter().take(if quick { 1 } else { members.len() }) {
            planned.push(Planned { fault: member.name.into(), timing: Timing::AtResume, ..cut.clone() });
        }
    }
    let mut pruned = Vec::new();
    if quick && !planned.is_empty() {
        let others: Vec<&str> = members.iter().skip(1).map(|m| m.name).collect();
        pruned.push(Pruned {
            what: format!("{} while the stream resumes (at every cut stream)", others.join(", ")),
            why: "--quick tries http_status 503 alone at a resume, the answer a resume most often meets".into(),
        });
    }
    (planned, pruned)
}

/// The healthy replies before call `index`, as the engine remembers them for `stale` and `replayed`.
fn earlier(calls: &[CallFacts], index: usize) -> Earlier {
    let reply = |c: &CallFacts| c.reply.as_ref().map(|r| bytes::Bytes::from(r.clone().into_bytes()));
    let before = &calls[..index];
    Earlier {
        same_tool: before.iter().rev().find(|c| c.tool == calls[index].tool).and_then(reply),
        any_tool: before.last().and_then(reply),
        ..Earlier::default()
    }
}

/// Why the catalogue fault does not act on this call's healthy reply, when it does not (no recorded reply: it
/// is kept, rather than pruned on a guess).
fn skipped(member: &Member, call: &CallFacts, earlier: &Earlier) -> Option<String> {
    let reply = Frame::parse(call.reply.clone()?.into_bytes());
    let id = reply.value()?.get("id").cloned().unwrap_or(Value::from(1));
    let request = Frame::from_value(match &call.method {
        Some(method) => serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}),
        None => serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": call.tool, "arguments": call.arguments},
        }),
    });
    let applied = member.fault.apply_checked(Reply { frame: &reply, request: Some(&request) }, earlier);
    applied.skipped.map(|why| format!("{} does not act on this reply: {why}", member.name))
}

/// Lineage: the calls whose results reached the outcome. A call is in it when it changed the workspace, or when a
/// value of its result flows into a later call's arguments or into the agent's claim. A value is a word of a string
/// or number in the reply (letters, digits, `_ - . /`; 6 characters or more, so prose and JSON keys do not count)
/// that the agent did not know already: not in `known` (the task's goal and description, which name the files
/// it was given), nor in this or an earlier call's arguments, nor in an earlier reply. So a listing whose names the
/// goal already gave (`input.txt`) is not in the lineage, while a read whose nonce is written or claimed is.
pub fn lineage(calls: &[CallFacts], claim: &str, known: &str) -> Vec<bool> {
    let mut knew: BTreeSet<String> = words(known).map(str::to_owned).collect();
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        if call.method.is_some() {
            // Every call after it depends on the protocol's own requests (the session, the tools it listed).
            out.push(true);
            continue;
        }
        knew.extend(values(&call.arguments).iter().flat_map(|v| words(v)).map(str::to_owned));
        let Some(reply) = &call.reply else {
            // Nothing recorded to trace: keep the call rather than prune on a guess.
            out.push(true);
            continue;
        };
        let reply = serde_json::from_str(reply).unwrap_or_else(|_| Value::String(reply.clone()));
        let new: Vec<String> =
            values(&reply).iter().flat_map(|v| words(v)).filter(|w| !knew.contains(*w)).map(str::to_owned).collect();
        let later: Vec<String> = calls[i + 1..].iter().flat_map(|c| values(&c.arguments)).collect();
        let flows = new.iter().any(|w| claim.contains(w.as_str()) || later.iter().any(|l| l.contains(w.as_str())));
        out.push(call.wrote || flows);
        knew.extend(new);
    }
    out
}

/// The strings and numbers of a JSON value, as text (object keys left out).
fn values(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Number(n) => vec![n.to_string()],
        Value::Array(items) => items.iter().flat_map(values).collect(),
        Value::Object(map) => map.values().flat_map(values).collect(),
        Value::Null | Value::Bool(_) => Vec::new(),
    }
}

/// The distinctive words of a text: runs of letters, digits, `_`, `-`, `.`, `/` of 6 characters or more, without
/// a leading or trailing `.` (the end of a sentence).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
        .map(|w| w.trim_matches('.'))
        .filter(|w| w.chars().count() >= 6)
}

/// Pairs of faults at two different calls, each of which the agent survived alone, both calls in the lineage.
/// `survived` holds the singles the agent survived (every repeat passed).
pub fn pairs(calls: &[CallFacts], survived: &[Planned], in_lineage: &[bool]) -> (Vec<Vec<Planned>>, Vec<Pruned>) {
    let mut out = Vec::new();
    let mut pruned = Vec::new();
    for (call, _) in calls.iter().enumerate().filter(|(i, _)| !in_lineage.get(*i).copied().unwrap_or(true)) {
        let site = &sites(calls)[call];
        pruned.push(Pruned {
            what: format!("pairs with a fault at {}", site.label()),
            why: "its result did not reach the outcome (no write, its data used by no later call nor the claim)".into(),
        });
    }
    for (i, a) in survived.iter().enumerate() {
        for b in &survived[i + 1..] {
            let both_matter = in_lineage.get(a.site.call).copied().unwrap_or(true)
                && in_lineage.get(b.site.call).copied().unwrap_or(true);
            if a.site.call != b.site.call && both_matter {
                let mut pair = vec![a.clone(), b.clone()];
                pair.sort();
                out.push(pair);
            }
        }
    }
    out.sort();
    (out, pruned)
}

/// Numbers the variants (`v001`, …) after those already numbered, and keeps at most `budget` runs' worth
/// (`repeat` runs each) in all; the rest are listed as pruned by the budget.
pub fn number(
    sets: Vec<Vec<Planned>>,
    first: usize,
    budget: Option<usize>,
    repeat: u32,
    pruned: &mut Vec<Pruned>,
) -> Vec<Variant> {
    let room = budget.map(|b| (b / repeat.max(1) as usize).saturating_sub(first));
    let mut variants = Vec::new();
    for (i, faults) in sets.into_iter().enumerate() {
        if room.is_some_and(|room| i >= room) {
            let label = faults.iter().map(Planned::label).collect::<Vec<_>>().join(" + ");
            pruned.push(Pruned { what: label, why: "over the --budget of runs".into() });
            continue;
        }
        variants.push(Variant { id: format!("v{:03}", first + i + 1), faults });
    }
    variants
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultlab_engine::rules::Mode;
    use serde_json::json;

    fn call(tool: &str, arguments: Value, reply: &str, wrote: bool) -> CallFacts {
        CallFacts { tool: tool.into(), arguments, reply: Some(reply.into()), wrote, error: false, method: None }
    }

    /// The healthy run of the built-in tasks: read the nonce, list the folder (unused), write the nonce.
    fn healthy() -> Vec<CallFacts> {
        vec![
            call("read_file", json!({"path": "input.txt"}), "Release notes.\nnonce: 0123456789abcdef\n", false),
            call("list_dir", json!({"path": "."}), "input.txt\nnotes.md\n", false),
            call("write_file", json!({"path": "output.txt", "content": "0123456789abcdef"}), "wrote 16 bytes", true),
        ]
    }

    #[test]
    fn singles_try_each_class_at_each_call_except_where_it_cannot_matter() {
        let (planned, pruned) = singles(&healthy(), FaultClass::ALL, true);
        let at = |call: usize| planned.iter().filter(|p| p.site.call == call).map(|p| p.class).collect::<Vec<_>>();
        // Reads: no timeout-after (nothing executed matters), no stale (first call of the tool).
        assert!(!at(0).contains(&FaultClass::TimeoutAfter) && !at(0).contains(&FaultClass::Stale));
        // Over stdio, no stream and no session either: each listed once, as not tried.
        let http = FaultClass::ALL.iter().filter(|c| c.http_only()).count();
        assert_eq!(at(0).len(), FaultClass::ALL.len() - 2 - http);
        // The write: timeout-after applies.
        assert!(at(2).contains(&FaultClass::TimeoutAfter));
        assert_eq!(planned.len() + pruned.len(), 3 * (FaultClass::ALL.len() - http) + http);
        let over_stdio: Vec<&Pruned> = pruned.iter().filter(|p| p.why.contains("the task is over stdio")).collect();
        assert_eq!(over_stdio.len(), http, "{pruned:?}");
        assert!(over_stdio[0].what.starts_with("stream faults"), "{over_stdio:?}");
        assert!(pruned.iter().any(|p| p.what.starts_with("stale at #1 read_file") && p.why.contains("unchanged")));
        // A second call to the same tool is its call 2, and stale applies to it.
        let mut calls = healthy();
        calls.push(call("read_file", json!({"path": "output.txt"}), "0123456789abcdef", false));
        let (planned, _) = singles(&calls, &[FaultClass::Stale], true);
        assert_eq!(
            planned,
            vec![Planned::of(Site { call: 3, tool: "read_file".into(), nth: 2, method: None }, FaultClass::Stale)]
        );
    }

    #[test]
    fn over_http_the_stream_and_the_session_are_sites_of_every_tool_call_with_what_the_front_performs() {
        let classes = [FaultClass::Stream, FaultClass::Session];
        let (planned, pruned) = singles_on(&healthy(), &classes, false, Front::Http);
        let at = |call: usize| planned.iter().filter(|p| p.site.call == call).map(|p| p.fault.as_str()).collect();
        // The cut stream, resumable and not, the lost stream, the refused resume, the session that expires while
        // the call is in flight, and each way of losing it after the reply (the front has sessions, its own for a
        // server it bridges): at each call, the read as the write.
        for call in 0..3 {
            let faults: BTreeSet<&str> = at(call);
            for fault in [
                "stream_cut",
                "stream_cut.unresumable",
                "stream_lost",
                "resume_refused",
                "session_expired_in_flight",
                "session_lifecycle",
                "session_lifecycle.restart",
                "session_lifecycle.reinit_404",
            ] {
                assert!(faults.contains(fault), "#{}: {fault}: {faults:?}", call + 1);
            }
        }
        // Once, the resumes not tried (the first resume of a cut stream is: `at_resume`); nothing else is left out.
        let resume: Vec<&Pruned> = pruned.iter().filter(|p| p.what.contains("at a resume")).collect();
        assert!(resume.len() == 1 && resume[0].why.contains("a second resume"), "{pruned:?}");
        assert_eq!(pruned.len(), 1, "{pruned:?}");
        // Each is its own rule on its call, valid as the proxy reads it; the timing of the loss is the nth call.
        let rules: BTreeSet<String> = planned.iter().map(|p| p.rule(1500).name).collect();
        assert_eq!(rules.len(), planned.len());
        for p in &planned {
            let rule = p.rule(1500);
            rule.check().unwrap();
            assert_eq!(
                (rule.matcher.tool.as_deref(), rule.matcher.nth),
                (Some(p.site.tool.as_str()), Some(p.site.nth))
            );
        }
    }

    #[test]
    fn while_the_stream_resumes_each_resumable_cut_is_tried_with_each_fault_at_its_resume() {
        let classes = [FaultClass::Stream, FaultClass::Session];
        let (singles, _) = singles_on(&healthy(), &classes, false, Front::Http);
        let (planned, pruned) = at_resume(&singles, false);
        assert!(pruned.is_empty(), "{pruned:?}");
        let faults = ["http_status", "disconnect", "latency", "timeout", "session_expired_in_flight"];
        assert_eq!(planned.len(), 3 * faults.len(), "every call's cut, each fault: {planned:?}");
        for p in &planned {
            assert_eq!((p.class, p.timing), (FaultClass::Stream, Timing::AtResume));
            assert!(faults.contains(&p.fault.as_str()), "{p:?}");
            // Two rules: the site's resumable cut (resumed soon) and the fault at its resume, both on that call.
            let rules = p.rules(1500);
            assert_eq!(rules.len(), 2, "{rules:?}");
            for rule in &rules {
                rule.check().unwrap();
                assert_eq!(
                    (rule.matcher.tool.as_deref(), rule.matcher.nth),
                    (Some(p.site.tool.as_str()), Some(p.site.nth))
                );
            }
            assert_eq!((rules[0].fault.name(), rules[0].matcher.at), ("stream_cut", None));
            assert_eq!(serde_json::to_value(&rules[0].fault).unwrap()["retry_ms"], AT_RESUME_RETRY_MS);
            assert_eq!(rules[1].matcher.at, Some(At::Resume));
            assert_eq!(rules[1].fault.name(), p.member(1500).fault.name());
            assert_eq!(rules[1], p.rule(1500), "the rule whose name on the trajectory says it fired");
            assert!(p.label().contains("while the stream resumes, at #"), "{}", p.label());
        }
        let latency = planned.iter().find(|p| p.fault == "latency").unwrap().member(3000).fault;
        assert_eq!(serde_json::to_value(latency).unwrap()["delay_ms"], 1500, "half the deadline, as the latency class");
        // --quick: the 503 alone, the others listed; nothing over stdio, where no cut is planned.
        let (quick, pruned) = at_resume(&singles, true);
        assert!(quick.len() == 3 && quick.iter().all(|p| p.fault == "http_status"), "{quick:?}");
        assert!(pruned.len() == 1 && pruned[0].what.starts_with("disconnect, latency, timeout"), "{pruned:?}");
        let (stdio, _) = singles_on(&healthy(), &classes, false, Front::Stdio);
        assert_eq!(at_resume(&stdio, false), (Vec::new(), Vec::new()));
    }

    #[test]
    fn over_http_the_protocols_own_requests_get_the_stream_and_the_session_faults_that_act_there() {
        let classes = [FaultClass::Stream, FaultClass::Session];
        let protocol =
            |method: &str| CallFacts { method: Some(method.into()), ..call(method, Value::Null, "{}", false) };
        let mut calls = healthy();
        calls.push(protocol("initialize"));
        calls.push(protocol("tools/list"));
        let faults = |planned: &[Planned], call: usize| -> BTreeSet<String> {
            planned.iter().filter(|p| p.site.call == call).map(|p| p.fault.clone()).collect()
        };
        // At initialize every stream fault, and the session lost between it and the first call (the front has
        // sessions); not the expiry in flight: an initialize carries no session id.
        let (planned, pruned) = singles_on(&calls, &classes, false, Front::Http);
        let at_init = faults(&planned, 3);
        for fault in ["stream_cut", "stream_cut.unresumable", "stream_lost", "resume_refused", "stream_cut_again"] {
            assert!(at_init.contains(fault), "{fault}: {at_init:?}");
        }
        for fault in ["session_lifecycle", "session_lifecycle.restart", "session_lifecycle.reinit_404"] {
            assert!(at_init.contains(fault), "{fault}: {at_init:?}");
        }
        assert!(!at_init.contains("session_expired_in_flight"), "{at_init:?}");
        let expired = pruned.iter().find(|p| p.what == "session at #4 initialize (call 1 of it)").unwrap();
        assert!(expired.why.contains("no session is in flight"), "{expired:?}");
        // At tools/list, made in a session: the stream faults and the expiry in flight, as at a tool call.
        let at_list = faults(&planned, 4);
        assert!(at_list.contains("stream_cut") && at_list.contains("session_expired_in_flight"), "{at_list:?}");
        // Each faults its request by method and occurrence, named apart from the tool calls' rules.
        let rules: Vec<Rule> = planned.iter().filter(|p| p.site.method.is_some()).map(|p| p.rule(1500)).collect();
        for rule in &rules {
            rule.check().unwrap();
            assert!(rule.matcher.tool.is_none() && rule.matcher.nth == Some(1), "{rule:?}");
        }
        let names: BTreeSet<&str> = rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names.len(), rules.len());
        assert!(names.contains("explore-stream-initialize-1") && names.contains("explore-session-tools/list-1"));
        // --quick: the representatives, where they act, and at initialize the session lost after its reply,
        // which stands for the class there; over stdio, neither class anywhere.
        let (planned, _) = singles_on(&calls, &classes, true, Front::Http);
        let shown: Vec<String> = planned.iter().filter(|p| p.site.method.is_some()).map(Planned::label).collect();
        assert_eq!(
            shown,
            [
                "stream at #4 initialize (call 1 of it)",
                "session/session_lifecycle at #4 initialize (call 1 of it)",
                "stream at #5 tools/list (call 1 of it)",
                "session at #5 tools/list (call 1 of it)"
            ]
        );
        let (planned, _) = singles_on(&calls, &classes, true, Front::Stdio);
        assert!(planned.is_empty(), "{planned:?}");
    }

    #[test]
    fn a_recovery_call_gets_the_representatives_the_front_performs_there() {
        let classes = [FaultClass::Error, FaultClass::Stream, FaultClass::Session];
        let shown = |site: &Site, front| -> Vec<FaultClass> {
            representatives_at(site, &classes, front).into_iter().map(|p| p.class).collect()
        };
        let read = Site { call: 5, tool: "read_file".into(), nth: 2, method: None };
        let init = Site { call: 6, tool: "initialize".into(), nth: 2, method: Some("initialize".into()) };
        // Over stdio the HTTP classes would never fire (the engine's stdio apply skips them): not combined.
        assert_eq!(shown(&read, Front::Stdio), [FaultClass::Error]);
        assert_eq!(shown(&read, Front::Http), classes);
        // A second initialize (a new session) has no session in flight to expire: the session it opens is lost
        // after its reply instead.
        assert_eq!(shown(&init, Front::Http), classes);
        let at_init = representatives_at(&init, &classes, Front::Http);
        assert_eq!(at_init[2].fault, "session_lifecycle");
    }

    #[test]
    fn without_quick_every_fault_of_a_class_that_acts_on_the_reply_is_tried() {
        let calls: Vec<CallFacts> = healthy()
            .into_iter()
            .map(|c| CallFacts { reply: Some(frame(c.reply.as_deref().unwrap_or_default())), ..c })
            .collect();
        let (quick, _) = singles(&calls, &[FaultClass::WrongData, FaultClass::Error], true);
        let (full, pruned) = singles(&calls, &[FaultClass::WrongData, FaultClass::Error], false);
        assert!(full.len() > quick.len() && quick.iter().all(|p| full.contains(p)), "{full:?}");
        let at_read: Vec<&str> = full.iter().filter(|p| p.site.call == 0).map(|p| p.fault.as_str()).collect();
        for fault in ["empty", "partial_result", "http_status", "forbidden", "auth_expired"] {
            assert!(at_read.contains(&fault), "{fault}: {at_read:?}");
        }
        // A list fault leaves a tool's reply unchanged: pruned with the catalogue's reason, never run.
        assert!(!at_read.contains(&"list_drift"));
        let drift = pruned.iter().find(|p| p.what.starts_with("wrong-data/list_drift at #1 read_file")).unwrap();
        assert!(drift.why.contains("tools/list"), "{drift:?}");
        // Every fault tried at a site is named apart in its label and its rule.
        let labels: BTreeSet<String> = full.iter().map(Planned::label).collect();
        let rules: BTreeSet<String> = full.iter().map(|p| p.rule(1500).name).collect();
        assert_eq!((labels.len(), rules.len()), (full.len(), full.len()));
    }

    #[test]
    fn protocol_sites_are_faulted_by_method_and_the_tool_surface_faults_act_on_the_tool_list() {
        let list = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "read_file", "inputSchema": {"type": "object"}},
            {"name": "write_file", "inputSchema": {"type": "object"}},
        ]}});
        let init = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"}}});
        let protocol = |method: &str, reply: &Value| CallFacts {
            tool: method.into(),
            arguments: Value::Null,
            reply: Some(reply.to_string()),
            wrote: false,
            error: false,
            method: Some(method.into()),
        };
        let mut calls = healthy();
        calls.push(protocol("initialize", &init));
        calls.push(protocol("tools/list", &list));
        // The tool calls keep their positions; the protocol's requests come after them, always in the lineage.
        let sites = sites(&calls);
        assert_eq!(
            (sites[3].label(), sites[4].method.as_deref()),
            ("#4 initialize (call 1 of it)".into(), Some("tools/list"))
        );
        assert_eq!(lineage(&calls, "", GOAL), vec![true, false, true, true, true]);
        let (planned, pruned) = singles(&calls, &[FaultClass::WrongData, FaultClass::Error], false);
        let at =
            |call: usize| planned.iter().filter(|p| p.site.call == call).map(|p| p.fault.as_str()).collect::<Vec<_>>();
        assert!(at(4).contains(&"list_drift") && !at(3).contains(&"list_drift"), "{:?} {:?}", at(3), at(4));
        assert!(at(3).contains(&"http_status") && at(4).contains(&"page_error"), "{:?}", at(4));
        assert!(pruned.iter().any(|p| p.what.starts_with("wrong-data/list_drift at #4 initialize")));
        let rule = planned.iter().find(|p| p.site.call == 4 && p.fault == "list_drift").unwrap().rule(1500);
        rule.check().unwrap();
        assert_eq!(
            (rule.matcher.method.as_deref(), rule.matcher.tool.as_deref(), rule.matcher.nth),
            (Some("tools/list"), None, Some(1))
        );
        // A recovery's second initialize is named by its key, apart from any tool.
        let key = crate::search::key(&sites[3]);
        assert_eq!(crate::search::site_of(&key, 9).method.as_deref(), Some("initialize"));
    }

    #[test]
    fn a_rule_targets_the_nth_call_of_its_tool_with_the_classes_fault_and_mode() {
        let fault =
            Planned::of(Site { call: 2, tool: "write_file".into(), nth: 1, method: None }, FaultClass::TimeoutAfter);
        let rule = fault.rule(1500);
        rule.check().unwrap();
        assert_eq!(
            (rule.matcher.tool.as_deref(), rule.matcher.nth, rule.mode),
            (Some("write_file"), Some(1), Mode::After)
        );
        assert_eq!(rule.fault.name(), "timeout");
        for &class in FaultClass::ALL {
            Planned::of(fault.site.clone(), class).rule(1500).check().unwrap();
            // Every member of the class makes a valid rule too, named apart from the others.
            for member in class.members(1500) {
                let planned = Planned { fault: member.name.into(), ..Planned::of(fault.site.clone(), class) };
                let rule = planned.rule(1500);
                rule.check().unwrap();
                assert_eq!((rule.fault, rule.mode), (member.fault, member.mode));
            }
        }
    }

    #[test]
    fn after_the_first_write_the_next_tool_call_is_faulted_by_its_position_whichever_tool() {
        // Read, write, then a check read: the check read is the first call after the first write.
        let mut calls = healthy();
        calls.push(call("read_file", json!({"path": "output.txt"}), "0123456789abcdef", false));
        let (single, _) = singles(&calls, &[FaultClass::Error, FaultClass::Stale], true);
        let (timed, pruned) = after_first_write(&calls, &single);
        assert!(pruned.is_empty(), "{pruned:?}");
        assert_eq!(
            timed.iter().map(|p| (p.site.call, p.class)).collect::<Vec<_>>(),
            [(3, FaultClass::Error), (3, FaultClass::Stale)]
        );
        assert!(timed.iter().all(|p| p.timing == Timing::AfterFirstWrite));
        let error = &timed[0];
        assert_eq!(error.label(), "error after the first write, at #4 read_file (call 2 of it)");
        // The rule counts every tool call (4th), not the 2nd read_file: a retry of the write before it moves it.
        let rule = error.rule(1500);
        rule.check().unwrap();
        assert_eq!(
            (rule.matcher.method.as_deref(), rule.matcher.tool.as_deref(), rule.matcher.nth),
            (Some("tools/call"), None, Some(4))
        );
        let nth = Planned::of(error.site.clone(), FaultClass::Error);
        assert_ne!(rule.name, nth.rule(1500).name);
        assert!(rule.name.ends_with("-after-first-write"), "{}", rule.name);
        // Timed and untimed are different faults of a set, and the timing survives report.json.
        assert_ne!(*error, nth);
        let json = serde_json::to_value(error).unwrap();
        assert_eq!(json["timing"], "after-first-write");
        assert_eq!(serde_json::from_value::<Planned>(json).unwrap(), *error);
        assert!(serde_json::to_value(&nth).unwrap().get("timing").is_none());
        // A protocol request after the write is not a tool call: the write was the last one, and that is listed.
        let mut protocol = healthy();
        protocol.push(CallFacts { method: Some("tools/list".into()), ..call("tools/list", Value::Null, "{}", false) });
        let (single, _) = singles(&protocol, &[FaultClass::Error], true);
        let (timed, pruned) = after_first_write(&protocol, &single);
        assert!(timed.is_empty());
        assert!(pruned[0].why.contains("no tool call after its first write (#3)"), "{pruned:?}");
        // Nothing written: nothing to time after, listed too.
        let reads: Vec<CallFacts> = healthy().into_iter().take(2).collect();
        let (single, _) = singles(&reads, &[FaultClass::Error], true);
        let (timed, pruned) = after_first_write(&reads, &single);
        assert!(timed.is_empty() && pruned[0].why.contains("wrote nothing"), "{pruned:?}");
    }

    /// A reply as the trajectory records it: the JSON-RPC frame.
    fn frame(text: &str) -> String {
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}}).to_string()
    }

    const GOAL: &str = "Read input.txt, find the line \"nonce: <value>\", and write exactly that value to output.txt.";

    #[test]
    fn lineage_keeps_writes_and_reads_whose_data_is_used_and_drops_unused_reads() {
        assert_eq!(lineage(&healthy(), "", GOAL), vec![true, false, true]);
        // A read whose content only the claim repeats is in the lineage too.
        let calls = vec![call("read_file", json!({"path": "a"}), "the answer is 4242424242", false)];
        assert_eq!(lineage(&calls, "4242424242", GOAL), vec![true]);
        assert_eq!(lineage(&calls, "no idea", GOAL), vec![false]);
    }

    #[test]
    fn a_listing_of_names_the_agent_already_knew_is_not_in_the_lineage() {
        // The agent lists the folder, then reads input.txt (named by the goal) and writes the nonce it read: the
        // listing's input.txt reappears in a later call, but the agent knew it before listing.
        let calls = vec![
            call("list_dir", json!({"path": "."}), &frame("input.txt\nnotes.md\n"), false),
            call(
                "read_file",
                json!({"path": "input.txt"}),
                &frame("Release notes draft.\nnonce: 0123456789abcdef\n"),
                false,
            ),
            call("read_file", json!({"path": "notes.md"}), &frame("Keep this file.\n"), false),
            call(
                "write_file",
                json!({"path": "output.txt", "content": "0123456789abcdef"}),
                &frame("wrote 16 bytes"),
                true,
            ),
            call("read_file", json!({"path": "output.txt"}), &frame("0123456789abcdef"), false),
        ];
        let claim = "wrote the nonce to output.txt 0123456789abcdef";
        // notes.md came from the listing and was read next: the listing is in the lineage then; the notes' content
        // went nowhere; the check read after the write repeats a value the agent already had.
        assert_eq!(lineage(&calls, claim, GOAL), vec![true, true, false, true, false]);
        // Without the read of notes.md, the listing gave nothing the agent used.
        let mut without = calls.clone();
        without.remove(2);
        assert_eq!(lineage(&without, claim, GOAL), vec![false, true, true, false]);
    }

    #[test]
    fn pairs_combine_survived_faults_at_two_calls_of_the_lineage_only() {
        let calls = healthy();
        let at = |call: usize, class| Planned::of(sites(&calls)[call].clone(), class);
        let survived = vec![
            at(0, FaultClass::Error),
            at(0, FaultClass::Timeout),
            at(1, FaultClass::Error),
            at(2, FaultClass::Error),
            at(2, FaultClass::TimeoutAfter),
        ];
        let (pairs, pruned) = pairs(&calls, &survived, &lineage(&calls, "", GOAL));
        // 2 at the read × 2 at the write; none with the unused list_dir, none within one call.
        assert_eq!(pairs.len(), 4, "{pairs:?}");
        assert!(pairs.iter().all(|p| p[0].site.call == 0 && p[1].site.call == 2));
        assert_eq!(pruned.len(), 1);
        assert!(pruned[0].what.contains("list_dir") && pruned[0].why.contains("did not reach the outcome"));
    }

    #[test]
    fn the_budget_keeps_the_first_variants_and_lists_the_rest() {
        let (planned, _) = singles(&healthy(), &[FaultClass::Error], true);
        let sets: Vec<Vec<Planned>> = planned.into_iter().map(|p| vec![p]).collect();
        let mut pruned = Vec::new();
        let kept = number(sets.clone(), 0, Some(4), 2, &mut pruned);
        assert_eq!(kept.iter().map(|v| v.id.as_str()).collect::<Vec<_>>(), ["v001", "v002"]);
        assert_eq!(pruned.len(), 1);
        assert!(pruned[0].what.contains("write_file") && pruned[0].why.contains("--budget"));
        // Numbering continues after earlier variants, and the budget counts them.
        let mut pruned = Vec::new();
        let kept = number(sets, 2, Some(4), 1, &mut pruned);
        assert_eq!(kept.iter().map(|v| v.id.as_str()).collect::<Vec<_>>(), ["v003", "v004"]);
        assert_eq!(pruned.len(), 1);
    }
}
