//! External target files: which MCP server the reference client meets, and how to reach it.
//!
//! ```json
//! {"adapter": "mcp", "config": {"stdio": {"command": "my-server", "args": ["--stdio"], "envFrom": {"TOKEN": "MY_TOKEN"}}}}
//! {"adapter": "mcp", "config": {"http": {"url": "http://127.0.0.1:3000/mcp", "headerEnv": {"Authorization": "AUTH"}}}}
//! ```
//! Strict (unknown keys are errors); plain HTTP to loopback only; redirects are errors.

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

    /// The target with `envFrom` / `headerEnv` filled in from `var` (the process environment).
    pub fn resolve(&self, var: impl Fn(&str) -> Option<String>) -> Result<Target, String> {
        match (&self.config.stdio, &self.config.http) {
            (Some(stdio), _) => {
                let mut env = stdio.env.clone();
                for (child, parent) in &stdio.env_from {
                    let value = var(parent).ok_or_else(|| {
                        format!("environment variable {parent} is required for stdio variable {child}")
                    })?;
                    env.insert(child.clone(), value);
                }
                Ok(Target::Stdio {
                    command: stdio.command.clone(),
                    args: stdio.args.clone(),
                    cwd: stdio.cwd.clone(),
                    env,
                })
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
    fn env_from_is_resolved_or_named() {
        let file =
            parse(r#"{"adapter":"mcp","config":{"stdio":{"command":"x","envFrom":{"TOKEN":"MY_TOKEN"}}}}"#).unwrap();
        assert!(file.resolve(|_| None).unwrap_err().contains("MY_TOKEN"));
        let Target::Stdio { env, .. } = file.resolve(|_| Some("s3cret".into())).unwrap() else { panic!() };
        assert_eq!(env["TOKEN"], "s3cret");
    }
}
