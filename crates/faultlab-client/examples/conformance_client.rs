//! The reference client as the client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance client --command ... --scenario ...`); `scripts/conformance-client.sh` runs it.
//!
//! The suite starts a test server for the scenario, then runs this command with the server's URL appended as the
//! last argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`; it judges the scenario by what its server
//! saw, and fails it when this command exits non-zero or outlives the suite's timeout.
//!
//! ```text
//! conformance_client <server-url>        (MCP_CONFORMANCE_SCENARIO=initialize|tools_call)
//! ```
//!
//! - `initialize`: the 2025-11-25 handshake (`initialize`, then `notifications/initialized`), then close.
//! - `tools_call`: the handshake, then `tools/call` of `add_numbers` with `{"a": 5, "b": 3}`, which must succeed
//!   with a text that gives the sum 8; then close (DELETE when the server minted a session).
//!
//! Every step has a deadline. Exits 0 when the scenario's steps succeeded, 1 when one failed, 2 on a usage error;
//! what went wrong is on stderr, one line per step on stdout.

use faultlab_client::{Connection, Era, Outcome, Target};
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;

/// The longest any one step (handshake, call, close) may take. The suite's own timeout (30 s by default) is larger
/// than the sum of these, so a stuck step is reported here rather than as a suite timeout.
const STEP: Duration = Duration::from_secs(8);

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url] = args.as_slice() else {
        eprintln!("conformance_client: usage: conformance_client <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)");
        eprintln!("conformance_client: got {} arguments: {args:?}", args.len());
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let run = match scenario.as_str() {
        "initialize" => initialize(url).await,
        "tools_call" => tools_call(url).await,
        "" => {
            eprintln!("conformance_client: MCP_CONFORMANCE_SCENARIO is not set (the conformance suite sets it)");
            return ExitCode::from(2);
        }
        other => {
            eprintln!("conformance_client: scenario {other:?} is not supported (supported: initialize, tools_call)");
            return ExitCode::from(2);
        }
    };
    match run {
        Ok(()) => {
            println!("conformance_client: scenario {scenario}: done");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("conformance_client: scenario {scenario:?} against {url}: {why}");
            ExitCode::FAILURE
        }
    }
}

async fn initialize(url: &str) -> Result<(), String> {
    let connection = open(url).await?;
    close(&connection).await
}

async fn tools_call(url: &str) -> Result<(), String> {
    let connection = open(url).await?;
    let called = call_add_numbers(&connection).await;
    // Close even when the call failed; the call's failure is the one reported.
    let closed = close(&connection).await;
    called.and(closed)
}

async fn call_add_numbers(connection: &Connection) -> Result<(), String> {
    let (a, b) = (5, 3);
    let obs = connection.call_tool("add_numbers", json!({"a": a, "b": b}), STEP).await;
    if obs.outcome != Outcome::Success {
        let kind = obs.error_kind.map(|k| format!(" ({k:?})")).unwrap_or_default();
        return Err(format!("tools/call add_numbers: {:?}{kind}: {}", obs.outcome, obs.message()));
    }
    let text = obs.text();
    let sum = (a + b).to_string();
    if !text.split(|c: char| !c.is_ascii_digit()).any(|number| number == sum) {
        return Err(format!("tools/call add_numbers({a}, {b}) succeeded but its text does not give {sum}: {text:?}"));
    }
    println!("conformance_client: tools/call add_numbers({a}, {b}) -> {text:?} in {:.0} ms", obs.duration_ms);
    Ok(())
}

async fn open(url: &str) -> Result<Connection, String> {
    let target = Target::Http { url: url.to_owned(), headers: Default::default() };
    let connection = Connection::open(&target, Era::Legacy, STEP).await.map_err(|e| format!("handshake: {e}"))?;
    println!("conformance_client: initialized ({} handshake with {url})", Era::Legacy.version());
    Ok(connection)
}

async fn close(connection: &Connection) -> Result<(), String> {
    tokio::time::timeout(STEP, connection.close())
        .await
        .map_err(|_| format!("close: not done within {} ms", STEP.as_millis()))?;
    let anomalies = connection.anomalies();
    if anomalies != Default::default() {
        // Informational: what the reference client counts is no conformance failure by itself.
        eprintln!("conformance_client: note: anomalies seen: {}", json!(anomalies));
    }
    println!("conformance_client: closed");
    Ok(())
}
