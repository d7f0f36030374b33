//! The model hop as a site of exploration, for a task with a `model` (eval serves it, see
//! `faultlab_eval::model_hop`): each request the healthy run made to the model (its `model.jsonl`) is a site,
//! "the nth request of an API" (`#k model chat.completions (request n)`), numbered after the tool calls and the
//! protocol's sites so those keep their numbers. The class there is [`FaultClass::Model`]: the model hop's own
//! faults and the wire's faults the model endpoint performs, each with its catalogue first example. A variant puts
//! its rule (`match: {method: API, nth: n}`) into the run's model rules instead of the task's MCP rules.
//!
//! A fault the answer's shape cannot carry there (`tool_arguments_invalid` on a text answer, …) is decided by the
//! model endpoint's own `Shape::apply` on the healthy turn and listed as pruned; one that still could not change
//! the answer in a variant's run is recorded `skipped` in its `model.jsonl`, and the variant reads as not fired.

use crate::class::{FaultClass, Member};
use crate::synth::{Planned, Pruned, Site, Timing};
use faultlab_engine::FaultKind;
use faultlab_engine::rules::Mode;
use faultlab_model::api::{Api, Output};
use faultlab_model::hop::{HopFault, Shape};
use std::path::Path;

/// The representative of the model class: a cut answer (`finish_reason: "length"`, a tool call's arguments cut
/// halfway) looks like an answer and fails nothing loudly, so an agent that does not check how the answer ended
/// acts on half a call. An error status (`overloaded`, `rate_limit`) is loud: every client retries or stops.
pub const REPRESENTATIVE: &str = "tool_call_cut";

/// The prefix of a model site's `tool` (`model chat.completions`): a tool's name has no space.
const PREFIX: &str = "model ";

/// The faults the model class tries, the representative first, then in catalogue order: every catalogue fault
/// whose first example the model endpoint performs (its own and the wire's), with that example.
pub fn faults() -> Vec<(&'static str, FaultKind)> {
    let mut faults: Vec<(&'static str, FaultKind)> = FaultKind::examples()
        .into_iter()
        .filter_map(|(name, examples)| {
            let fault: FaultKind = serde_json::from_str(examples.first()?).ok()?;
            (HopFault::of(&fault).is_some() && fault.serve_only().is_none()).then_some((name, fault))
        })
        .collect();
    faults.sort_by_key(|(name, _)| *name != REPRESENTATIVE);
    faults
}

/// The model class's members (the model hop takes no mode: `after` for all).
pub fn members() -> Vec<Member> {
    faults().into_iter().map(|(name, fault)| Member { name, fault, mode: Mode::After }).collect()
}

/// The API of a model site's `tool` (`model chat.completions`), if it is one.
pub fn api_of(tool: &str) -> Option<&str> {
    tool.strip_prefix(PREFIX)
}

/// Whether a site's request `method` is a model API's (`chat.completions`, `messages`, …): a model site, not one
/// of the protocol's requests.
pub fn is_api(method: &str) -> bool {
    [Api::ChatCompletions, Api::Responses, Api::Messages, Api::Gemini].iter().any(|api| api.name() == method)
}

/// Whether a run's model endpoint fired the rule `rule` and it changed the answer (a fault recorded `skipped`
/// changed nothing: not fired).
pub fn fired(run: &faultlab_eval::runner::RunRecord, rule: &str) -> bool {
    run.model.as_ref().is_some_and(|hop| hop.fired.iter().any(|f| f.rule == rule && f.skipped.is_none()))
}

/// The model sites of the healthy run `run` (after every site in `exploration.calls`, each in the lineage: the
/// model's answer is what the agent acts on) and the model class's faults at them; nothing for a task without a
/// model or when the model class is not asked for.
pub(crate) fn explore_sites(
    explore: &crate::Explore,
    run: &faultlab_eval::runner::RunRecord,
    exploration: &mut crate::Exploration,
) -> Result<(Vec<Planned>, Vec<Pruned>), crate::ExploreError> {
    if !explore.classes.contains(&FaultClass::Model) {
        return Ok((Vec::new(), Vec::new()));
    }
    if explore.task.model.is_none() {
        let why = "the task has no model: its agent's model is not one eval serves (model: {script, faults})";
        return Ok((Vec::new(), vec![Pruned { what: "model faults".into(), why: why.into() }]));
    }
    let requests = run_requests(explore, run)?;
    let sites = sites(&requests, exploration.calls.len());
    exploration.calls.extend(sites.iter().cloned());
    exploration.lineage.extend(sites.iter().map(|_| true));
    Ok(singles(&requests, &sites, explore.quick))
}

/// The model requests a survived run `run` made, as search keys: every one is in its lineage (the agent acted on
/// each answer), and a request the healthy run did not make (one asked again after a fault) is a recovery the
/// search extends sets at, as a recovery call. Nothing when the model class is not explored.
pub(crate) fn support(
    explore: &crate::Explore,
    run: &faultlab_eval::runner::RunRecord,
) -> Result<Vec<crate::search::CallKey>, crate::ExploreError> {
    if !explore.classes.contains(&FaultClass::Model) || explore.task.model.is_none() {
        return Ok(Vec::new());
    }
    let requests = run_requests(explore, run)?;
    Ok(sites(&requests, 0).iter().map(crate::search::key).collect())
}

/// The model class's representative at a model site the healthy run did not have (a request asked again).
pub(crate) fn representative_at(site: &Site) -> Planned {
    Planned { site: site.clone(), class: FaultClass::Model, fault: REPRESENTATIVE.into(), timing: Timing::Nth }
}

/// The requests run `run` made to the model, read from its `model.jsonl` (an unreadable one is an evidence error
/// naming the file).
fn run_requests(
    explore: &crate::Explore,
    run: &faultlab_eval::runner::RunRecord,
) -> Result<Vec<Request>, crate::ExploreError> {
    let path = explore.settings.out.join(&run.dir).join("model.jsonl");
    requests(&path).map_err(|message| crate::ExploreError::Evidence { path: path.display().to_string(), message })
}

/// Whether a site is a model request.
pub fn is_model(site: &Site) -> bool {
    site.method.is_some() && site.tool.starts_with(PREFIX)
}

/// One request of the healthy run to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The API's name (`chat.completions`), as a rule's `match.method` takes it.
    pub api: String,
    pub stream: bool,
    /// The scripted answer was a tool call (else text).
    pub call: bool,
}

/// The requests of a `model.jsonl` that reached the rules (a request refused as unreadable never did).
pub fn requests(path: &Path) -> Result<Vec<Request>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut requests = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let line: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        if line.get("error").is_some() {
            continue;
        }
        requests.push(Request {
            api: line["api"].as_str().unwrap_or_default().to_owned(),
            stream: line["stream"].as_bool().unwrap_or(false),
            call: line["turn"].get("call").is_some(),
        });
    }
    Ok(requests)
}

/// The model requests as sites, numbered from `first` (after every other site).
pub fn sites(requests: &[Request], first: usize) -> Vec<Site> {
    let mut seen: std::collections::BTreeMap<&str, u64> = Default::default();
    requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let nth = seen.entry(&r.api).or_default();
            *nth += 1;
            Site { call: first + i, tool: format!("{PREFIX}{}", r.api), nth: *nth, method: Some(r.api.clone()) }
        })
        .collect()
}

/// The model class at every model site: its representative (`quick`) or every member, each where the healthy
/// answer's shape can carry it (else pruned with the endpoint's own reason).
pub fn singles(requests: &[Request], sites: &[Site], quick: bool) -> (Vec<Planned>, Vec<Pruned>) {
    let (mut planned, mut pruned) = (Vec::new(), Vec::new());
    for (site, request) in sites.iter().zip(requests) {
        for member in members() {
            if quick && member.name != REPRESENTATIVE {
                continue;
            }
            let fault = Planned {
                site: site.clone(),
                class: FaultClass::Model,
                fault: member.name.into(),
                timing: Timing::Nth,
            };
            match cannot_carry(&member.fault, request) {
                Some(why) => pruned.push(Pruned { what: fault.label(), why }),
                None => planned.push(fault),
            }
        }
    }
    (planned, pruned)
}

/// Why the healthy answer at this request cannot carry `fault`, as the model endpoint decides it.
fn cannot_carry(fault: &FaultKind, request: &Request) -> Option<String> {
    let Some(HopFault::Shape(shape)) = HopFault::of(fault) else { return None };
    let api = [Api::ChatCompletions, Api::Responses, Api::Messages, Api::Gemini]
        .into_iter()
        .find(|api| api.name() == request.api)?;
    let healthy = match request.call {
        true => Output::call("call_1".into(), "tool".into(), r#"{"path":"a"}"#.into()),
        false => Output::text("an answer".into()),
    };
    apply(&shape, api, request.stream, healthy).err().map(|why| format!("the answer's shape cannot carry it: {why}"))
}

fn apply(shape: &Shape, api: Api, stream: bool, out: Output) -> Result<Output, String> {
    shape.apply(api, stream, out, "call_2".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_class_is_the_hops_faults_with_the_cut_answer_first_and_no_mcp_fault() {
        let names: Vec<&str> = faults().into_iter().map(|(name, _)| name).collect();
        assert_eq!(names[0], REPRESENTATIVE);
        for name in ["overloaded", "refusal", "token_quota", "tool_arguments_invalid", "latency", "rate_limit"] {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
        for name in ["duplicate", "wrong_id", "stale", "ask_back"] {
            assert!(!names.contains(&name), "{name}");
        }
        assert_eq!(FaultClass::Model.representative(), REPRESENTATIVE);
    }

    /// docs/explore.md's row of the model class: its representative and its members, as the code has them.
    #[test]
    fn the_model_row_in_docs_explore_md_matches_the_class() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/explore.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let row = doc.lines().find(|l| l.starts_with("| `model` |")).expect("docs/explore.md has the model row");
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let names = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(str::to_owned).collect() };
        assert_eq!(names(cells[1]), [REPRESENTATIVE]);
        let members: Vec<String> = members().iter().map(|m| m.name.to_owned()).collect();
        assert_eq!(names(cells[3]), members, "docs/explore.md's model row: write the members in this order");
    }

    /// A model fault the run's `model.jsonl` records as skipped changed nothing: it did not fire.
    #[test]
    fn a_skipped_model_fault_did_not_fire() {
        use faultlab_eval::model_hop::{ModelFault, ModelHop};
        let mut run = faultlab_eval::runner::RunRecord::sample("t", "a", 0, faultlab_eval::task::Category::Data, true);
        assert!(!fired(&run, "r"), "a run without a model");
        let fault = |skipped: Option<&str>| ModelFault {
            rule: "r".into(),
            fault: "duplicate_call_id".into(),
            request: 2,
            skipped: skipped.map(str::to_owned),
        };
        run.model = Some(ModelHop { requests: 3, fired: vec![fault(Some("a text answer"))] });
        assert!(!fired(&run, "r"));
        run.model = Some(ModelHop { requests: 3, fired: vec![fault(None)] });
        assert!(fired(&run, "r") && !fired(&run, "other"));
    }

    #[test]
    fn a_fault_a_text_answer_cannot_carry_is_pruned_with_the_endpoints_reason() {
        let requests = [
            Request { api: "chat.completions".into(), stream: false, call: true },
            Request { api: "chat.completions".into(), stream: false, call: false },
        ];
        let sites = sites(&requests, 3);
        assert_eq!(sites[1].label(), "#5 model chat.completions (request 2)");
        let (planned, pruned) = singles(&requests, &sites, false);
        let at = |site: usize, fault: &str| planned.iter().any(|p| p.site.call == site && p.fault == fault);
        assert!(at(3, "tool_arguments_invalid") && !at(4, "tool_arguments_invalid"));
        assert!(at(4, "tool_call_cut") && at(4, "refusal"));
        assert!(
            pruned.iter().any(|p| p.what.contains("request 2") && p.why.contains("no tool call to change")),
            "{pruned:?}"
        );
        let (quick, _) = singles(&requests, &sites, true);
        assert_eq!(quick.len(), 2);
        let rule = quick[0].rule(1500);
        assert_eq!((rule.matcher.method.as_deref(), rule.matcher.nth), (Some("chat.completions"), Some(1)));
    }
}
