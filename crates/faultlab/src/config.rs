//! `faultlab config --client NAME`: the drop-in server entry for an MCP host's configuration, running `faultlab
//! serve`, or `faultlab proxy` with rules in front of a given server. The snippet (JSON) goes to stdout, where to
//! put it to stderr. The proxy's upstream is written as `--upstream-command`/`--upstream-arg`, never after `--`,
//! which some hosts swallow.
//!
//! Exit codes: 0 printed; 1 bad input (an unreadable or invalid rules file, one with `auth`, an invalid --fault).

use crate::exit::Failure;
use anyhow::Context as _;
use clap::ValueEnum;
use faultlab_engine::rules::RulesFile;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
    Inspector,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  faultlab config --client cursor\n      faultlab serve, the faulty server, for \
Cursor\n  faultlab config --client vscode --rules faults.yaml -- npx -y @modelcontextprotocol/server-everything\n      \
the proxy with your rules in front of your server, for VS Code\n\
Exit codes: 0 printed; 1 bad input (an unreadable or invalid rules file, one with `auth`, an invalid --fault).")]
pub struct ConfigArgs {
    /// The MCP host the entry is for.
    #[arg(long, value_enum, value_name = "NAME")]
    pub client: Host,
    /// The server's name in the host's list.
    #[arg(long, default_value = "faultlab")]
    pub name: String,
    /// Put `faultlab proxy` with this rules file in front of the server (written as an absolute path: hosts start
    /// servers in a folder of their own).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// One rule inline, as `faultlab proxy --fault SPEC` (repeatable); puts the proxy in front.
    #[arg(long = "fault", value_name = "SPEC")]
    pub faults: Vec<String>,
    /// Where the proxy appends its trajectory (absolute path); puts the proxy in front.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// The faultlab program the host starts [default: the absolute path of this faultlab].
    #[arg(long, value_name = "PATH")]
    pub program: Option<String>,
    /// The server to put the proxy in front of, after `--` [default: faultlab serve].
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub fn run(args: ConfigArgs) -> Result<(), Failure> {
    let program = match &args.program {
        Some(program) => program.clone(),
        None => std::env::current_exe()
            .context("cannot find this faultlab's path; give it with --program")
            .map_err(Failure::runtime)?
            .display()
            .to_string(),
    };
    let proxied = !args.command.is_empty() || args.rules.is_some() || !args.faults.is_empty() || args.record.is_some();
    let arguments = if proxied { proxy_arguments(&args, &program)? } else { vec!["serve".to_owned()] };
    let (snippet, hint) = snippet(args.client, &args.name, &program, &arguments);
    outln!("{}", serde_json::to_string_pretty(&snippet).expect("plain data serialises"));
    errln!("faultlab: {hint}");
    Ok(())
}

/// `proxy` with the rules (checked now, so a mistake shows here and not in the host's log) in front of the server.
fn proxy_arguments(args: &ConfigArgs, program: &str) -> Result<Vec<String>, Failure> {
    let mut out = vec!["proxy".to_owned()];
    if let Some(rules) = &args.rules {
        let file = RulesFile::load(rules).map_err(Failure::usage)?;
        // The entry runs the proxy over stdio, where no authorization server plays the file's auth fault.
        if let Some(auth) = &file.auth {
            return Err(Failure::usage(anyhow::anyhow!(
                "rules file {}: `auth` ({}) needs `faultlab proxy --listen ADDR --auth` (an HTTP endpoint); the entry \
                 this writes runs the proxy over stdio. Drop `auth`, or connect the host to the HTTP proxy by URL",
                rules.display(),
                auth.fault.name()
            )));
        }
        out.extend(["--rules".to_owned(), absolute(rules)?]);
    }
    for (i, spec) in args.faults.iter().enumerate() {
        RulesFile::parse_spec(spec, i + 1).map_err(Failure::usage)?;
        out.extend(["--fault".to_owned(), spec.clone()]);
    }
    if let Some(record) = &args.record {
        out.extend(["--record".to_owned(), absolute(record)?]);
    }
    let server =
        if args.command.is_empty() { vec![program.to_owned(), "serve".to_owned()] } else { args.command.clone() };
    let (command, rest) = server.split_first().expect("never empty");
    out.extend(["--upstream-command".to_owned(), command.clone()]);
    for arg in rest {
        // `--upstream-arg=-y`: an argument that starts with a dash cannot be taken for a flag of the proxy's.
        if arg.starts_with('-') {
            out.push(format!("--upstream-arg={arg}"));
        } else {
            out.extend(["--upstream-arg".to_owned(), arg.clone()]);
        }
    }
    Ok(out)
}

fn absolute(path: &Path) -> Result<String, Failure> {
    std::path::absolute(path)
        .with_context(|| format!("cannot make {} an absolute path", path.display()))
        .map(|p| p.display().to_string())
        .map_err(Failure::usage)
}

/// The host's configuration holding one server entry, and where it goes.
fn snippet(host: Host, name: &str, program: &str, arguments: &[String]) -> (Value, String) {
    let plain = json!({"command": program, "args": arguments});
    let typed = json!({"type": "stdio", "command": program, "args": arguments});
    match host {
        Host::ClaudeDesktop => (
            json!({"mcpServers": {name: plain}}),
            "merge into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows: \
             %APPDATA%\\Claude\\), then restart Claude Desktop"
                .into(),
        ),
        Host::ClaudeCode => (
            json!({"mcpServers": {name: typed.clone()}}),
            format!("merge into .mcp.json at your project's root, or run: claude mcp add-json {name} '{typed}'"),
        ),
        Host::Cursor => (
            json!({"mcpServers": {name: plain}}),
            "merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project)".into(),
        ),
        Host::Vscode => (json!({"servers": {name: typed}}), "merge into .vscode/mcp.json in your workspace".into()),
        Host::Windsurf => {
            (json!({"mcpServers": {name: plain}}), "merge into ~/.codeium/windsurf/mcp_config.json".into())
        }
        Host::Inspector => (
            json!({"mcpServers": {name: typed}}),
            format!(
                "save as faultlab-inspector.json, then run: npx @modelcontextprotocol/inspector --config \
                 faultlab-inspector.json --server {name}"
            ),
        ),
    }
}
