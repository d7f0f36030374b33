//! Command-line definitions.

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "faultlab", version, about = "MCP Failure Lab: prove whether an MCP client or agent survives failure")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the deliberately faulty MCP server (stdio by default, or Streamable HTTP).
    Serve(ServeArgs),
    /// The whole lab on built-in parts: reference-client runs against the faulty server, with reports.
    Demo(DemoArgs),
}

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Folder for the JSON report, JUnit XML and traces (created if missing).
    #[arg(long, default_value = "faultlab-demo")]
    pub out: std::path::PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Stdio,
    Http,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "With LAB_SCENARIO set (healthy, tool-error, transient-error, delay, malformed, disconnect), \
the server offers the single tool lab_probe instead; LAB_DELAY_MS (0-10000, default 1000) and LAB_FAILURES \
(0-10, default 2) tune it.\n\nDiagnostics (fault activations, pings, transport events) are JSON lines on stderr.")]
pub struct ServeArgs {
    /// stdio: MCP over stdin/stdout. http: Streamable HTTP on --host/--port/--path.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,
    /// Loopback address to listen on (HTTP only): 127.0.0.1, ::1, localhost or another 127.x.y.z.
    #[arg(long)]
    pub host: Option<String>,
    /// Port to listen on (HTTP only); 0 picks a free port, printed on stderr.
    #[arg(long)]
    pub port: Option<u16>,
    /// Endpoint path (HTTP only), e.g. /mcp.
    #[arg(long)]
    pub path: Option<String>,
}
