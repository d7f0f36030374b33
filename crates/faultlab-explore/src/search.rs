//! Beyond single faults, after lineage-driven fault injection (LDFI): the fault sets of size k are built from the
//! sets of size k - 1 the agent survived, each extended only by a fault at a call that run's success depended on
//! (its lineage, recovery calls included), and never past a set already known to fail. So every set tried could
//! remove a support the agent used, and every failing set found is minimal. `--exhaustive` tries every
//! combination instead: the baseline the search is measured against.
//!
//! Pure functions of the verdicts so far: the runs are the caller's (the exploration runs each level as eval runs;
//! the tests run a planted agent).

use super::synth::{Planned, Site};
use std::collections::BTreeSet;

/// A call as a run names it: the nth call to a tool (1-based). A run's lineage is a set of these, so a recovery
/// call (the second `write_file` of a retry) is named even though the healthy run never made it.
pub type CallKey = (String, u64);

/// The key of a site (a protocol request's names its method, marked apart from any tool's name).
pub fn key(site: &Site) -> CallKey {
    // A model request's `tool` (`model chat.completions`) has a space: no tool's or protocol key's.
    if crate::model_sites::is_model(site) {
        return (site.tool.clone(), site.nth);
    }
    match &site.method {
        Some(method) => (format!("{method}{PROTOCOL}"), site.nth),
        None => (site.tool.clone(), site.nth),
    }
}

/// What marks a protocol request's key (a tool's name has no space).
const PROTOCOL: &str = " (protocol)";

/// The site a key names, at position `call`.
pub fn site_of(key: &CallKey, call: usize) -> Site {
    if let Some(api) = crate::model_sites::api_of(&key.0) {
        return Site { call, tool: key.0.clone(), nth: key.1, method: Some(api.to_owned()) };
    }
    match key.0.strip_suffix(PROTOCOL) {
        Some(method) => Site { call, tool: method.into(), nth: key.1, method: Some(method.into()) },
        None => Site { call, tool: key.0.clone(), nth: key.1, method: None },
    }
}

/// A fault set tried, and what its runs said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    pub faults: Vec<Planned>,
    /// A repeat broke the agent.
    pub failed: bool,
    /// Every repeat survived; then the calls its (first) run's success depended on.
    pub support: Option<BTreeSet<CallKey>>,
    /// Each fault is at a call the run without it depended on (a single: a call of the healthy lineage; a larger
    /// set: by construction). Only such a set is extended: a fault at a call nothing depended on removes no
    /// support, and every set holding it would repeat the set without it.
    pub relevant: bool,
}

/// The fault sets of size `k` to try next, in order: each a survived set of size `k - 1` extended by one fault of
/// `faults` at a call in that set's support and at a call none of its faults is at; none holding a set known to
/// fail (it would not be minimal), none tried before.
pub fn next_level(tried: &[Tried], faults: &[Planned], k: usize) -> Vec<Vec<Planned>> {
    let failing: Vec<BTreeSet<&Planned>> =
        tried.iter().filter(|t| t.failed).map(|t| t.faults.iter().collect()).collect();
    let seen: BTreeSet<Vec<Planned>> = tried.iter().map(|t| sorted(t.faults.clone())).collect();
    let mut out: BTreeSet<Vec<Planned>> = BTreeSet::new();
    for parent in tried.iter().filter(|t| t.faults.len() + 1 == k && !t.failed && t.relevant) {
        let Some(support) = &parent.support else { continue };
        let taken: BTreeSet<CallKey> = parent.faults.iter().map(|f| key(&f.site)).collect();
        for fault in faults {
            let at = key(&fault.site);
            if taken.contains(&at) || !support.contains(&at) {
                continue;
            }
            let set = sorted(parent.faults.iter().cloned().chain([fault.clone()]).collect());
            let holds_failing = failing.iter().any(|f| f.iter().all(|x| set.contains(x)));
            if !holds_failing && !seen.contains(&set) {
                out.insert(set);
            }
        }
    }
    out.into_iter().collect()
}

/// Every combination of `k` faults of `faults` at `k` different calls (`--exhaustive`).
pub fn combinations(faults: &[Planned], k: usize) -> Vec<Vec<Planned>> {
    fn go(faults: &[Planned], k: usize, from: usize, set: &mut Vec<Planned>, out: &mut Vec<Vec<Planned>>) {
        if set.len() == k {
            out.push(set.clone());
            return;
        }
        for i in from..faults.len() {
            if set.iter().any(|f| key(&f.site) == key(&faults[i].site)) {
                continue;
            }
            set.push(faults[i].clone());
            go(faults, k, i + 1, set, out);
            set.pop();
        }
    }
    let mut out = Vec::new();
    go(faults, k, 0, &mut Vec::new(), &mut out);
    out
}

/// The failing sets none of whose proper subsets failed, smallest first.
pub fn minimal(tried: &[Tried]) -> Vec<Vec<Planned>> {
    let failing: Vec<BTreeSet<&Planned>> =
        tried.iter().filter(|t| t.failed).map(|t| t.faults.iter().collect()).collect();
    let mut out: Vec<Vec<Planned>> = failing
        .iter()
        .filter(|set| !failing.iter().any(|o| o.len() < set.len() && o.is_subset(set)))
        .map(|set| set.iter().map(|f| (*f).clone()).collect())
        .collect();
    out.sort_by(|a: &Vec<Planned>, b| (a.len(), a).cmp(&(b.len(), b)));
    out.dedup();
    out
}

/// The faults a recorded trajectory shows acting on tool calls (`--from-trajectory`), each as the class member of
/// its name at the nth call of its tool, and a fault at the resume of a call's stream as the stream class's
/// `AtResume` timing of it at that call; a fault no class holds (a model-hop fault) is an error naming it.
pub fn recorded(trajectory: &faultlab_engine::trajectory::Trajectory) -> Result<Vec<(CallKey, Planned)>, String> {
    let mut seen: std::collections::BTreeMap<String, u64> = Default::default();
    let mut out = Vec::new();
    // A fault a rule timed at a resume (`match.at: resume`) acted on the resume `GET` of the stream a call's
    // request opened, which a stream fault had cut: its `resume_faulted` event names that request. The explorer
    // performs it as the `AtResume` timing at the call (the cut, then the fault at the first resume).
    let at_resume: std::collections::BTreeMap<String, &str> = trajectory
        .lines
        .iter()
        .filter_map(|line| match &line.record.event {
            faultlab_engine::Event::ResumeFaulted { fault, request_id, .. } => {
                Some((request_id.to_string(), fault.as_str()))
            }
            _ => None,
        })
        .collect();
    // A call the authorization refused (`--auth`) never reached the rules, which count a tool's calls: not counted.
    for exchange in trajectory.tool_calls().into_iter().filter(|e| e.refused().is_none()) {
        let tool = exchange.tool().unwrap_or_default().to_owned();
        let nth = seen.entry(tool.clone()).or_default();
        *nth += 1;
        let resumed = exchange.request.frame.id.as_ref().and_then(|id| at_resume.get(&id.to_string()));
        if let Some(resume_fault) = resumed {
            let members = crate::synth::at_resume_members(1500);
            if !members.iter().any(|m| m.name == *resume_fault) {
                return Err(format!(
                    "fault {resume_fault:?} at a resume of {tool} call {nth}: explore does not try it there"
                ));
            }
            let site = Site { call: 0, tool: tool.clone(), nth: *nth, method: None };
            let timing = crate::synth::Timing::AtResume;
            let planned =
                Planned { site, class: crate::class::FaultClass::Stream, fault: (*resume_fault).into(), timing };
            out.push(((tool, *nth), planned));
            continue;
        }
        let Some((_, fault)) = exchange.fault() else { continue };
        // The class whose member has the fault's name and, of those, the one whose mode agrees with whether the
        // server executed the call (`timeout` after executing it is `timeout-after`).
        let executed = exchange.executed();
        let classes: Vec<(crate::class::FaultClass, faultlab_engine::rules::Mode)> =
            crate::class::FaultClass::ALL.iter().filter_map(|c| c.member(fault, 1500).map(|m| (*c, m.mode))).collect();
        let agrees = |mode: faultlab_engine::rules::Mode| {
            executed.is_none_or(|executed| executed == (mode == faultlab_engine::rules::Mode::After))
        };
        let class = classes
            .iter()
            .find(|(_, mode)| agrees(*mode))
            .or(classes.first())
            .map(|(c, _)| *c)
            .ok_or_else(|| format!("fault {fault:?} at {tool} call {nth}: no fault class tries it"))?;
        let site = Site { call: 0, tool: tool.clone(), nth: *nth, method: None };
        out.push(((tool, *nth), Planned { site, class, fault: fault.into(), timing: Default::default() }));
    }
    if out.is_empty() {
        return Err("no fault acted on a tool call in it: nothing to reproduce".into());
    }
    Ok(out)
}

fn sorted(mut set: Vec<Planned>) -> Vec<Planned> {
    set.sort();
    set
}

/// The whole search run synchronously over `run` (a set's verdict and, when it survived, its support): singles,
/// then each level up to `max_faults`, at most `budget` sets in all. `exhaustive` tries every combination instead.
/// What the tests and the efficiency figure use; the exploration runs the same levels as eval runs.
pub fn search(
    faults: &[Planned],
    max_faults: usize,
    budget: Option<usize>,
    exhaustive: bool,
    mut run: impl FnMut(&[Planned]) -> (bool, BTreeSet<CallKey>),
) -> Vec<Tried> {
    let mut tried: Vec<Tried> = Vec::new();
    // The healthy run: what the singles' relevance is read from (not counted as a run of the search).
    let (_, healthy) = run(&[]);
    for k in 1..=max_faults {
        let sets = match (k, exhaustive) {
            (1, _) => faults.iter().map(|f| vec![f.clone()]).collect(),
            (_, true) => combinations(faults, k),
            (_, false) => next_level(&tried, faults, k),
        };
        for set in sets {
            if budget.is_some_and(|b| tried.len() >= b) {
                return tried;
            }
            let (failed, support) = run(&set);
            let relevant = k > 1 || healthy.contains(&key(&set[0].site));
            tried.push(Tried { faults: set, failed, support: (!failed).then_some(support), relevant });
        }
    }
    tried
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::FaultClass;

    /// Faults of two classes at each of `calls` calls of tools t0, t1, ….
    fn universe(calls: usize) -> Vec<Planned> {
        let mut out = Vec::new();
        for call in 0..calls {
            for class in [FaultClass::Error, FaultClass::Timeout] {
                out.push(Planned::of(Site { call, tool: format!("t{call}"), nth: 1, method: None }, class));
            }
        }
        out
    }

    /// A planted agent: it fails exactly when a planted set is wholly among the faults; its success depends on
    /// every call but `idle` (which it makes, but whose result it never uses).
    fn planted(
        planted: Vec<Vec<usize>>,
        calls: usize,
        idle: usize,
    ) -> impl FnMut(&[Planned]) -> (bool, BTreeSet<CallKey>) {
        move |set: &[Planned]| {
            let hit: BTreeSet<usize> =
                set.iter().filter(|f| f.class == FaultClass::Timeout).map(|f| f.site.call).collect();
            let failed = planted.iter().any(|p| p.iter().all(|c| hit.contains(c)));
            let support = (0..calls).filter(|c| *c != idle).map(|c| (format!("t{c}"), 1)).collect();
            (failed, support)
        }
    }

    /// A recorded run over `--auth`: the write the authorization refused never reached the rules, so the faulted
    /// write after it is the tool's first call, the one a rule counting `write_file` calls acts on.
    #[test]
    fn a_call_the_authorization_refused_is_not_counted_among_a_tools_calls() {
        let frame = |id: u32, action: &str, extra: &str| {
            format!(
                r#"{{"tsMs":{id},"scope":"","event":"frame","direction":"client_to_server","action":"{action}","id":{id},"method":"tools/call","tool":"write_file","bytes":9{extra}}}"#
            )
        };
        let refused = r#","executed":false,"refused":{"status":401,"error":"invalid_token","httpMethod":"POST"}"#;
        let text = [
            frame(1, "refused", refused),
            frame(2, "forwarded", r#","rule":"r","fault":"timeout","effect":"timeout""#),
            r#"{"tsMs":3,"scope":"","event":"frame","direction":"server_to_client","action":"consumed","id":2,"rule":"r","fault":"timeout","effect":"timeout","executed":true,"bytes":9}"#.to_owned(),
        ]
        .join("\n");
        let trajectory = faultlab_engine::trajectory::Trajectory::parse(&text).unwrap();
        let found = recorded(&trajectory).unwrap();
        let keys: Vec<&CallKey> = found.iter().map(|(key, _)| key).collect();
        assert_eq!(keys, [&("write_file".to_owned(), 1)]);
    }

    /// A recorded run whose read's stream was cut and whose resume a rule answered 503: the fault the explorer
    /// replays is that 503 while the stream resumes at the read, not the bare cut (which a client resuming
    /// survives), and a call whose cut stream resumed cleanly is the cut alone.
    #[test]
    fn a_fault_at_a_resume_is_replayed_at_the_resume_of_its_calls_stream() {
        let request = |id: u32, tool: &str| {
            format!(
                r#"{{"tsMs":{id},"scope":"","event":"frame","direction":"client_to_server","action":"forwarded","id":{id},"method":"tools/call","tool":"{tool}","bytes":9}}"#
            )
        };
        let cut = r#"{"tsMs":3,"scope":"","event":"frame","direction":"server_to_client","action":"forwarded","id":1,"bytes":9,"rule":"cut","fault":"stream_cut","effect":"transport_loss"}"#;
        let resumed = r#"{"tsMs":5,"scope":"","event":"resume_faulted","rule":"busy","fault":"http_status","effect":"error","requestId":2,"method":"tools/call","tool":"read_file","lastEventId":"s1-3","answer":{"kind":"status","status":503}}"#;
        let text = [request(1, "list_dir"), cut.to_owned(), request(2, "read_file"), resumed.to_owned()].join("\n");
        let trajectory = faultlab_engine::trajectory::Trajectory::parse(&text).unwrap();
        let found = recorded(&trajectory).unwrap();
        let faults: Vec<(&str, &str, crate::synth::Timing)> =
            found.iter().map(|(key, p)| (key.0.as_str(), p.fault.as_str(), p.timing)).collect();
        assert_eq!(
            faults,
            [
                ("list_dir", "stream_cut", crate::synth::Timing::Nth),
                ("read_file", "http_status", crate::synth::Timing::AtResume)
            ]
        );
        assert_eq!(found[1].1.class, FaultClass::Stream);
        assert_eq!(found[1].1.label(), "stream/http_status while the stream resumes, at #1 read_file (call 1 of it)");
    }

    fn calls_of(sets: &[Vec<Planned>]) -> Vec<Vec<usize>> {
        sets.iter().map(|s| s.iter().map(|f| f.site.call).collect()).collect()
    }

    #[test]
    fn a_planted_failing_set_of_three_is_always_found_with_fewer_runs_than_exhaustive() {
        // Seven calls; the agent never uses the result of the last (a listing whose names it knew).
        let faults = universe(7);
        for planted_set in [vec![0, 1, 2], vec![1, 3, 5], vec![2, 4, 5]] {
            let found = search(&faults, 3, None, false, planted(vec![planted_set.clone()], 7, 6));
            let exhaustive = search(&faults, 3, None, true, planted(vec![planted_set.clone()], 7, 6));
            assert_eq!(calls_of(&minimal(&found)), vec![planted_set.clone()]);
            assert_eq!(minimal(&found), minimal(&exhaustive));
            // Every failing set found is minimal: nothing past a failing set is tried.
            assert_eq!(found.iter().filter(|t| t.failed).count(), 1);
            assert!(found.len() < exhaustive.len(), "{} vs {}", found.len(), exhaustive.len());
        }
    }

    /// Over HTTP the session is a site like any: an agent that fails only when its session is lost at the read
    /// and the write then times out (a pair no single shows) has that pair found, among the sites and classes
    /// synthesis gives a task over HTTP, as exhaustive search finds it, with fewer runs.
    #[test]
    fn a_planted_failing_set_at_a_session_site_is_found_over_http() {
        use crate::synth::{CallFacts, Front, singles_on};
        let call = |tool: &str, wrote: bool| CallFacts {
            tool: tool.into(),
            arguments: serde_json::json!({"path": "output.txt"}),
            reply: None,
            wrote,
            error: false,
            method: None,
        };
        let calls = [call("read_file", false), call("list_dir", false), call("write_file", true)];
        let classes = [FaultClass::Error, FaultClass::Timeout, FaultClass::Stream, FaultClass::Session];
        let (faults, _) = singles_on(&calls, &classes, true, Front::Http);
        assert!(faults.iter().any(|f| f.class == FaultClass::Session && f.site.call == 0), "{faults:?}");
        let planted_set = [(FaultClass::Session, 0), (FaultClass::Timeout, 2)];
        // Its success depends on the read and the write, not on the listing (whose names it knew).
        let support: BTreeSet<CallKey> =
            calls.iter().filter(|c| c.tool != "list_dir").map(|c| (c.tool.clone(), 1)).collect();
        let agent = || {
            let support = support.clone();
            move |set: &[Planned]| {
                let failed = planted_set.iter().all(|p| set.iter().any(|f| (f.class, f.site.call) == *p));
                (failed, support.clone())
            }
        };
        let found = search(&faults, 3, None, false, agent());
        let exhaustive = search(&faults, 3, None, true, agent());
        let sets: Vec<Vec<(FaultClass, usize)>> =
            minimal(&found).iter().map(|s| s.iter().map(|f| (f.class, f.site.call)).collect()).collect();
        assert_eq!(sets, vec![planted_set.to_vec()]);
        assert_eq!(minimal(&found), minimal(&exhaustive));
        assert!(found.len() < exhaustive.len(), "{} vs {}", found.len(), exhaustive.len());
    }

    #[test]
    fn sets_of_different_sizes_are_each_found_once_and_a_call_outside_the_lineage_is_not_combined() {
        let faults = universe(5);
        // A single, a pair and a triple, disjoint.
        let agent = || planted(vec![vec![4], vec![0, 1], vec![0, 2, 3]], 5, 9);
        let found = search(&faults, 3, None, false, agent());
        assert_eq!(calls_of(&minimal(&found)), vec![vec![4], vec![0, 1], vec![0, 2, 3]]);
        assert_eq!(minimal(&found), minimal(&search(&faults, 3, None, true, agent())));
        // A call whose result the agent never uses: no set combines a fault there with another.
        let found = search(&faults, 2, None, false, planted(Vec::new(), 5, 3));
        assert!(found.iter().filter(|t| t.faults.len() > 1).all(|t| t.faults.iter().all(|f| f.site.call != 3)));
        assert!(found.iter().any(|t| t.faults.len() == 1 && t.faults[0].site.call == 3));
    }

    #[test]
    fn the_budget_stops_the_search_and_a_recovery_call_is_combined_by_its_key() {
        let faults = universe(4);
        assert_eq!(search(&faults, 3, Some(5), false, planted(Vec::new(), 4, 9)).len(), 5);
        // The parent's support names a call the healthy run never made (a retry: t1's second call); a fault
        // planned at that key extends it.
        let retry = Planned::of(Site { call: 4, tool: "t1".into(), nth: 2, method: None }, FaultClass::Timeout);
        let parent = Tried {
            faults: vec![faults[2].clone()],
            failed: false,
            support: Some([("t1".to_owned(), 2)].into_iter().collect()),
            relevant: true,
        };
        let next = next_level(&[parent], &[faults[0].clone(), retry.clone()], 2);
        assert_eq!(next, vec![vec![faults[2].clone(), retry]]);
    }
}
