//! AgentBreak (PyPI `agentbreak serve`), the peer of figure 5, as its documentation runs it in front of an MCP
//! server: `agentbreak inspect` (writes the tool registry `serve` requires, from the upstream's `tools/list`), then
//! `agentbreak serve` with the MCP side in proxy mode, the LLM side off and no scenarios (no faults, as the proxy
//! runs without rules). Files live in the scratch folder; its log (every upstream request at INFO, its default)
//! goes to a file there.

use crate::procs::{Proc, free_port};
use std::path::Path;
use std::process::{Command, Stdio};

/// Printed on stderr by [`READY`] once AgentBreak's server listens.
const READY_LINE: &str = "faultlab-bench: agentbreak listening";

/// `agentbreak`'s own entry point (`agentbreak.main:cli`, as its console script calls it), with uvicorn's
/// `Server.startup` (which binds and listens) followed by [`READY_LINE`].
const READY: &str = r#"
import sys
import uvicorn
from agentbreak.main import cli

bind_and_listen = uvicorn.Server.startup

async def startup(self, sockets=None):
    await bind_and_listen(self, sockets)
    print("faultlab-bench: agentbreak listening", file=sys.stderr, flush=True)

uvicorn.Server.startup = startup
sys.argv[0] = "agentbreak"
sys.exit(cli())
"#;

/// The last lines of a text, on one line (for an error message).
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// AgentBreak in front of `upstream`: the process and its endpoint URL.
pub(super) fn start(bin: &Path, upstream: &str, scratch: &Path) -> Result<(Proc, String), String> {
    let dir = scratch.join("agentbreak");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let port = free_port();
    let (app, scenarios, registry) =
        (dir.join("application.yaml"), dir.join("scenarios.yaml"), dir.join("registry.json"));
    let config = format!(
        "llm:\n  enabled: false\nmcp:\n  enabled: true\n  mode: proxy\n  upstream_url: {upstream}\n\
         serve:\n  host: 127.0.0.1\n  port: {port}\nhistory:\n  enabled: false\n"
    );
    std::fs::write(&app, config).map_err(|e| format!("{}: {e}", app.display()))?;
    std::fs::write(&scenarios, "scenarios: []\n").map_err(|e| format!("{}: {e}", scenarios.display()))?;
    let inspect = Command::new(bin)
        .arg("inspect")
        .arg("--config")
        .arg(&app)
        .arg("--registry")
        .arg(&registry)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} inspect: {e}", bin.display()))?;
    if !inspect.status.success() || !registry.is_file() {
        let said = String::from_utf8_lossy(if inspect.stderr.is_empty() { &inspect.stdout } else { &inspect.stderr });
        let said = if said.trim().is_empty() { "no output".to_owned() } else { tail(&said) };
        return Err(format!("agentbreak inspect failed ({}): {said}", inspect.status));
    }
    let log_path = dir.join("serve.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    // AgentBreak logs "starting on" before uvicorn binds, and runs uvicorn at log level warning, so nothing it
    // prints says the port is open. Run its own command line through its own Python with uvicorn's startup
    // wrapped to print one line once the sockets listen: an event to wait for, with nothing changed per request.
    let python = bin.with_file_name("python");
    let mut cmd = Command::new(&python);
    cmd.arg("-c")
        .arg(READY)
        .arg("serve")
        .arg("--config")
        .arg(&app)
        .arg("--scenarios")
        .arg(&scenarios)
        .arg("--registry")
        .arg(&registry)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = Proc::spawn(&mut cmd, "agentbreak serve")?;
    let listening =
        server.ready_line("agentbreak serve", Some(log), |line| line.strip_prefix(READY_LINE).map(str::to_owned));
    if let Err(e) = listening {
        return Err(format!("{e}: {}", tail(&std::fs::read_to_string(&log_path).unwrap_or_default())));
    }
    Ok((server, format!("http://127.0.0.1:{port}/mcp")))
}
