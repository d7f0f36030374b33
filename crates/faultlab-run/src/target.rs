//! External target files: which MCP server the reference client meets, and how to reach it.
//!
//! ```json
//! {"adapter": "mcp", "config": {"stdio": {"command": "my-server", "args": ["--stdio"], "envFrom": {"TOKEN": "MY_TOKEN"}}}}
//! {"adapter": "mcp", "config": {"http": {"url": "http://127.0.0.1:3000/mcp", "headerEnv": {"Authorization": "AUTH"}}}}
//! ```
//! Strict (unknown keys are errors); plain HTTP to loopback only; redirects are errors. Paths resolve from the
//! file's folder, wherever `faultlab run` is started: the server runs in that folder (or in `cwd`, itself taken
//! from the file's folder), so its relative arguments (`--rules faults.yaml`) name files beside the target file,
//! and a `command` with a `/` in it is taken from there too (a bare name is looked up on `PATH`).

use faultlab_client::Target;
use faultlab_wire::config;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// The adapter driving the client under test; `mcp` is the reference client.
    pub adapter: AdapterName,
    pub config: McpConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AdapterName {
    Mcp,
}

/// Exactly one of `stdio` or `http`. (A struct of two optional keys rather than an enum, so that YAML and JSON
/// files have the same shape: YAML would otherwise spell an enum as a `!tag`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdio: Option<StdioConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StdioConfig {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Variables for the child, literally.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Child variable → the parent variable its value is taken from (for secrets that must not sit in a file).
    #[serde(default)]
    pub env_from: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpConfig {
    /// `http://` on a loopback host.
    pub url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Header → the environment variable its value is taken from.
    #[serde(default)]
    pub header_env: BTreeMap<String, String>,
}

/// A target file that cannot be read or is invalid.
pub type TargetError = config::FileError;

impl TargetFile {
    pub fn load(path: &Path) -> Result<Self, TargetError> {
        config::load(path, "target file", |text, json| {
            let file: Self = config::parse(text, json)?;
            if file.config.stdio.is_some() == file.config.http.is_some() {
                return Err("config must have exactly one of stdio or http".to_owned());
            }
            if let Some(http) = &file.config.http
                && !is_loopback_http(&http.url)
            {
                return Err(format!(
                    "config.http.url must be http:// on a loopback host (localhost, 127.x.y.z, [::1]); got {}",
                    http.url
                ));
            }
            Ok(file)
        })
    }

    /// The target with `envFrom` / `headerEnv` filled in from `var` (the process environment) and its paths taken
    /// from `folder`, the folder of the target file.
    pub fn resolve(&self, folder: &Path, var: impl Fn(&str) -> Option<String>) -> Result<Target, String> {
        match (&self.config.stdio, &self.config.http) {
            (Some(stdio), _) => {
                let mut env = stdio.env.clone();
                for (child, parent) in &stdio.env_from {
                    let value = var(parent).ok_or_else(|| {
                        format!("environment variable {parent} is required for stdio variable {child}")
                    })?;
                    env.insert(child.clone(), value);
                }
                let command = if stdio.command.contains('/') {
                    folder.join(&stdio.command).to_string_lossy().into_owned()
                } else {
                    stdio.command.clone()
                };
                let cwd = Some(stdio.cwd.as_ref().map_or_else(|| folder.to_owned(), |cwd| folder.join(cwd)));
                Ok(Target::Stdio { command, args: stdio.args.clone(), cwd, env })
            }
            (None, Some(http)) => {
                let mut headers = http.headers.clone();
                for (header, name) in &http.header_env {
                    let value = var(name)
                        .ok_or_else(|| format!("environment variable {name} is required for header {header}"))?;
                    headers.insert(header.clone(), value);
                }
                Ok(Target::Http { url: http.url.clone(), headers })
            }
            (None, None) => Err("config must have exactly one of stdio or http".into()),
        }
    }
}

fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else { return false };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = if authority.starts_with('[') {
        authority.split(']').next().map(|h| format!("{h}]")).unwrap_or_default()
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h).to_owned()
    };
    host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TargetFile, String> {
        let dir = std::env::temp_dir().join(format!("faultlab-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("t{}.json", text.len()));
        std::fs::write(&path, text).unwrap();
        TargetFile::load(&path).map_err(|e| e.to_string())
    }

    #[test]
    fn strict_and_loopback_only() {
        assert!(
            parse(r#"{"adapter":"mcp","config":{"stdio":{"command":"x","colour":1}}}"#).unwrap_err().contains("colour")
        );
        assert!(
            parse(r#"{"adapter":"mcp","config":{"http":{"url":"http://example.com/mcp"}}}"#)
                .unwrap_err()
                .contains("loopback")
        );
        assert!(parse(r#"{"adapter":"mcp","config":{"http":{"url":"http://127.0.0.1:9/mcp"}}}"#).is_ok());
    }

    #[test]
    fn paths_resolve_from_the_files_folder() {
        let file =
            parse(r#"{"adapter":"mcp","config":{"stdio":{"command":"./srv","args":["--rules","faults.yaml"]}}}"#)
                .unwrap();
        let Target::Stdio { command, args, cwd, .. } = file.resolve(Path::new("/lab"), |_| None).unwrap() else {
            panic!()
        };
        assert_eq!((command.as_str(), cwd), ("/lab/./srv", Some(PathBuf::from("/lab"))));
        assert_eq!(args, ["--rules", "faults.yaml"]);
        let file = parse(r#"{"adapter":"mcp","config":{"stdio":{"command":"srv","cwd":"sub"}}}"#).unwrap();
        let Target::Stdio { command, cwd, .. } = file.resolve(Path::new("/lab"), |_| None).unwrap() else { panic!() };
        assert_eq!((command.as_str(), cwd), ("srv", Some(PathBuf::from("/lab/sub"))));
    }

    #[test]
    fn env_from_is_resolved_or_named() {
        let file =
            parse(r#"{"adapter":"mcp","config":{"stdio":{"command":"x","envFrom":{"TOKEN":"MY_TOKEN"}}}}"#).unwrap();
        assert!(file.resolve(Path::new("."), |_| None).unwrap_err().contains("MY_TOKEN"));
        let Target::Stdio { env, .. } = file.resolve(Path::new("."), |_| Some("s3cret".into())).unwrap() else {
            panic!()
        };
        assert_eq!(env["TOKEN"], "s3cret");
    }
}
