//! Each peer compared with the proxy directly on the same workload, per round ("faultlab proxy / peer"),
//! informational: the stdio relays on figures 1 and 2, AgentBreak on figure 5.

use super::http::{AGENTBREAK_PROXY, Http};
use super::rounds::Rounds;
use super::{Config, Skipped, Via};
use crate::stats::{Stats, fmt, per_round, ratio_json};
use serde_json::{Value, json};

/// "faultlab proxy / peer" on one workload, per round: ours and theirs paired round by round; null when the peer
/// has no round.
fn versus_json(workload: &str, unit: &str, ours: &[f64], theirs: &[f64]) -> Value {
    let k = ours.len().min(theirs.len());
    if k == 0 {
        return Value::Null;
    }
    let (ours, theirs) = (&ours[..k], &theirs[..k]);
    json!({"workload": workload, "unit": unit, "ours_median": Stats::of(ours).median,
        "theirs_median": Stats::of(theirs).median, "ours_over_theirs": ratio_json(&per_round(ours, theirs))})
}

/// The report's "peers".
pub(super) fn json(cfg: &Config, rounds: &Rounds, http: &Http, skipped: &Skipped) -> Value {
    let seq_workload = format!("median round trip, {} sequential tools/call echo over stdio per round", cfg.seq_calls);
    let pipe_workload = format!("requests/s, bursts of {} pipelined tools/call echo over stdio", cfg.pipe_count);
    let figures = |via: Via, pipelined: bool| rounds.round_figures(via, pipelined);
    let stdio_peer = |via: Via| {
        json!({"name": via.name(), "transport": "stdio", "error": skipped.get(&via),
            "median_round_trip": versus_json(&seq_workload, "µs", &figures(Via::Proxy, false), &figures(via, false)),
            "throughput": versus_json(&pipe_workload, "req/s", &figures(Via::Proxy, true), &figures(via, true))})
    };
    // Both in 2024-11-05 sessions (see `super::http`).
    let agentbreak = json!({"name": "agentbreak serve (MCP proxy mode, no scenarios)",
        "transport": "Streamable HTTP", "error": http.agentbreak_error,
        "median_round_trip": versus_json(
            &format!("median latency, tools/call echo over Streamable HTTP, 1 in flight for {:?}", cfg.http_window),
            "µs", &http.rounds(AGENTBREAK_PROXY, true), &http.rounds("agentbreak", true)),
        "throughput": versus_json(
            &format!("requests/s, tools/call echo over Streamable HTTP, {} in flight for {:?}",
                cfg.http_in_flight, cfg.http_window),
            "req/s", &http.rounds(AGENTBREAK_PROXY, false), &http.rounds("agentbreak", false))});
    json!({"ts_sdk_relay": stdio_peer(Via::TsRelay), "mcp_drill": stdio_peer(Via::Drill), "agentbreak": agentbreak})
}

/// The peers' table, from their JSON.
pub(super) fn print(peers: &Value) {
    println!(
        "\nPeers on the same workload, faultlab proxy / peer per round (informational; median round trip: below 1 = the proxy is faster; req/s: above 1 = the proxy is faster):\n"
    );
    println!(
        "| peer | transport | workload | faultlab proxy (median) | peer (median) | faultlab proxy / peer (min / median / max) |"
    );
    println!("|---|---|---|---|---|---|");
    for key in ["ts_sdk_relay", "mcp_drill", "agentbreak"] {
        let p = &peers[key];
        let (name, transport) = (p["name"].as_str().unwrap_or(key), p["transport"].as_str().unwrap_or("-"));
        let mut rows = 0;
        for measure in ["median_round_trip", "throughput"] {
            let m = &p[measure];
            if m.is_null() {
                continue;
            }
            rows += 1;
            let (unit, r) = (m["unit"].as_str().unwrap_or(""), &m["ours_over_theirs"]);
            let num = |v: &Value| fmt(v.as_f64().unwrap_or(f64::NAN));
            println!(
                "| {name} | {transport} | {} | {} {unit} | {} {unit} | {}x / {}x / {}x |",
                m["workload"].as_str().unwrap_or("-"),
                num(&m["ours_median"]),
                num(&m["theirs_median"]),
                num(&r["min"]),
                num(&r["median"]),
                num(&r["max"])
            );
        }
        if let Some(e) = p["error"].as_str() {
            println!(
                "| {name} | {transport} | {} | - | - | - |",
                if rows == 0 { e.to_owned() } else { format!("(then) {e}") }
            );
        }
    }
}
