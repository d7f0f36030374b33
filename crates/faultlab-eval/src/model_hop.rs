//! A task's model (`model: {script, faults}`): eval serves the scripted model endpoint (`faultlab-model`) for each
//! run, outside the sandbox, in its own process on the in-process proxies' runtime (so eval's blocking file work
//! never delays an answer), with the task's model rules and the run's seed, recording every request to the run's
//! `model.jsonl`. The endpoint listens on the machine's loopback at a port of the kernel's choice; a sealed agent,
//! in a network namespace of its own, reaches the same port number there through the sandbox's second relay (over
//! the Unix socket `model.sock` in its scratch folder, forwarded here by [`crate::http_front::relay`]), so
//! `FAULTLAB_MODEL_URL` means the same inside and out. With `--network host` it reaches the endpoint directly.
//!
//! The recording is evidence as the trajectory is: in the run folder, which the agent cannot see, hashed into the
//! report, and read back ([`summary`]) into how many requests the model got and which faults fired at which.

use crate::task::Model;
use faultlab_engine::rules::RulesFile;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long the endpoint gets to end once asked (its HTTP shutdown grace, 2 s, and a margin): past it, its task is
/// aborted. An answer held open by a `timeout` fault is closed within the grace.
const STOP_LIMIT: Duration = Duration::from_secs(4);
/// The largest recording read back for the report (64 MiB; the file itself is hashed whole).
const RECORDING_LIMIT: u64 = 64 * 1024 * 1024;

/// The run's model endpoint, serving.
pub struct Hosted {
    /// Its loopback port (the same inside the sandbox, through the relay).
    pub port: u16,
    stop: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
    relay: Option<JoinHandle<()>>,
}

impl Hosted {
    /// Starts the endpoint for `model` (the script read, the rules checked, with `seed`), recording to `record`;
    /// with `socket`, also relays each connection made to that Unix socket (the sandbox's relay) to it. Says why
    /// it could not start.
    pub fn start(model: &Model, seed: u64, record: &Path, socket: Option<&Path>) -> Result<Self, String> {
        let script = model.load_script().map_err(|e| format!("the task's model: {e}"))?;
        let rules = RulesFile { seed: Some(seed), rules: model.faults.clone(), auth: None };
        let rules = faultlab_model::rules(rules).map_err(|e| format!("the task's model.faults: {e}"))?;
        let file = std::fs::File::create(record)
            .map_err(|e| format!("cannot create the model recording {}: {e}", record.display()))?;
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| format!("cannot listen for the model endpoint: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("the model endpoint's address: {e}"))?;
        let runtime = crate::in_process::runtime()?;
        // Registered with the proxies' runtime, whose reactor serves it.
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|e| format!("the model endpoint's socket: {e}"))?
        };
        let options = faultlab_model::Options {
            script,
            rules,
            record: Some(Box::new(file)),
            allowed: faultlab_http::guard::AllowedHosts::for_bind(addr.ip()),
            limits: faultlab_http::server::Limits::default(),
            max_request_bytes: faultlab_model::MAX_REQUEST_BYTES,
            request_budget: faultlab_model::REQUEST_MEMORY_BUDGET,
            upstream: None,
            replay: None,
        };
        let stop = CancellationToken::new();
        let task = runtime.spawn(faultlab_model::serve(listener, options, stop.clone()));
        let relay = match socket {
            Some(socket) => {
                let listener = crate::http_front::bind(socket)
                    .map_err(|e| format!("cannot bind the model relay's socket {}: {e}", socket.display()))?;
                // The deadline counts from the agent's first MCP connection; a model request does not start it.
                let unheard = Arc::new(tokio::sync::Notify::new());
                Some(crate::http_front::relay(listener, addr, unheard))
            }
            None => None,
        };
        Ok(Self { port: addr.port(), stop, task, relay })
    }

    /// The base URL the agent is given (`FAULTLAB_MODEL_URL`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Ends the endpoint (every connection closed within its grace) and the relay; says why when it failed or
    /// did not end in time.
    pub async fn finish(mut self) -> Option<String> {
        if let Some(relay) = self.relay.take() {
            relay.abort();
        }
        self.stop.cancel();
        match tokio::time::timeout(STOP_LIMIT, &mut self.task).await {
            Ok(Ok(Ok(()))) => None,
            Ok(Ok(Err(e))) => Some(format!("the model endpoint failed: {e}")),
            Ok(Err(e)) => {
                Some(format!("the model endpoint {}", if e.is_panic() { "panicked" } else { "was cancelled" }))
            }
            Err(_) => {
                self.task.abort();
                Some(format!("the model endpoint did not end within {} s of the agent's end", STOP_LIMIT.as_secs()))
            }
        }
    }
}

/// A run that ended early (an error of its own) still stops its endpoint: nothing outlives the run.
impl Drop for Hosted {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(relay) = self.relay.take() {
            relay.abort();
        }
    }
}

/// What the model hop saw in a run, for `report.json` and the Markdown report (`model.jsonl` holds every request).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHop {
    /// The requests the model endpoint received (answered, faulted or refused).
    pub requests: u64,
    /// Each model fault that fired, in order.
    #[serde(default)]
    pub fired: Vec<ModelFault>,
}

/// A fault that fired on a model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFault {
    /// The rule's name (as the task's `model.faults` names it).
    pub rule: String,
    /// The catalogue fault.
    pub fault: String,
    /// The model request it fired at, counted from 1.
    pub request: u64,
    /// Why it changed nothing: the answer's shape could not carry it, and it went out unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl ModelHop {
    /// The faults that reached the agent (not [`ModelFault::skipped`]), by catalogue name, each once in order.
    pub fn fault_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for fired in self.fired.iter().filter(|f| f.skipped.is_none()) {
            if !names.contains(&fired.fault) {
                names.push(fired.fault.clone());
            }
        }
        names
    }
}

/// One line of `model.jsonl`, as far as the report and the grader read it.
#[derive(Deserialize)]
struct Line {
    seq: u64,
    #[serde(default)]
    fault: Option<Fired>,
    #[serde(default)]
    skipped: Option<String>,
    /// The request as the agent sent it (absent on a request refused as unreadable).
    #[serde(default)]
    request: serde_json::Value,
}

/// One request of the run to its model, as the recovery layer reads it: the fault that reached the agent there, and
/// whether the agent asked exactly the same as the request before (asked again).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// Counted from 1, as `model.jsonl`'s `seq`.
    pub seq: u64,
    /// The rule and catalogue fault that changed the answer (a fault recorded `skipped` changed nothing: `None`).
    pub fault: Option<(String, String)>,
    /// Its body is the request before's, to the byte of its JSON: the agent asked the same again.
    pub same_as_before: bool,
}

/// The run's model requests read from its recording (bounded as [`summary`]; a line that does not parse is left
/// out).
pub fn requests(path: &Path) -> Vec<ModelRequest> {
    let Some(text) = recording(path) else { return Vec::new() };
    let mut out = Vec::new();
    let mut before: Option<serde_json::Value> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(line) = serde_json::from_str::<Line>(line) else { continue };
        let fault = match (line.fault, line.skipped) {
            (Some(fired), None) => Some((fired.rule, fault_name(&fired.fault))),
            _ => None,
        };
        let same_as_before = !line.request.is_null() && before.as_ref() == Some(&line.request);
        out.push(ModelRequest { seq: line.seq, fault, same_as_before });
        before = Some(line.request);
    }
    out
}

/// The recording's first [`RECORDING_LIMIT`] bytes as text (a regular file only: no link, no FIFO); `None` when
/// there is none.
fn recording(path: &Path) -> Option<String> {
    let file = crate::guard::open_regular(path).ok()?;
    let mut bytes = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, RECORDING_LIMIT), &mut bytes);
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A recorded fault's catalogue name (its `type`).
fn fault_name(fault: &serde_json::Value) -> String {
    fault.get("type").and_then(|t| t.as_str()).unwrap_or("unknown").to_owned()
}

#[derive(Deserialize)]
struct Fired {
    rule: String,
    fault: serde_json::Value,
}

/// The run's model hop read from its recording (up to [`RECORDING_LIMIT`]; a line that does not parse is left out
/// of the fired faults but still counted as a request).
pub fn summary(path: &Path) -> ModelHop {
    let Some(text) = recording(path) else { return ModelHop::default() };
    let mut hop = ModelHop::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        hop.requests += 1;
        let Ok(line) = serde_json::from_str::<Line>(line) else { continue };
        if let Some(fired) = line.fault {
            let fault = fault_name(&fired.fault);
            hop.fired.push(ModelFault { rule: fired.rule, fault, request: line.seq, skipped: line.skipped });
        }
    }
    hop
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_every_request_and_names_each_fault_with_its_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.jsonl");
        let lines = [
            r#"{"seq":1,"at_ms":0,"api":"chat.completions","fault":{"rule":"busy","mode":"after","fault":{"type":"overloaded"}},"request":{}}"#,
            r#"{"seq":2,"at_ms":5,"api":"chat.completions","request":{}}"#,
            r#"{"seq":3,"at_ms":9,"api":"chat.completions","fault":{"rule":"cut","mode":"after","fault":{"type":"duplicate_call_id"}},"skipped":"a text answer","request":{}}"#,
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let hop = summary(&path);
        assert_eq!(hop.requests, 3);
        assert_eq!(hop.fired.len(), 2);
        assert_eq!(
            (hop.fired[0].rule.as_str(), hop.fired[0].fault.as_str(), hop.fired[0].request),
            ("busy", "overloaded", 1)
        );
        assert_eq!(hop.fired[1].skipped.as_deref(), Some("a text answer"));
        assert_eq!(hop.fault_names(), ["overloaded"], "a skipped fault did not reach the agent");
        assert_eq!(summary(&dir.path().join("absent.jsonl")), ModelHop::default());
    }
}
