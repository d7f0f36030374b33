//! The control API's bearer token: from `--control-token` (`auto` generates one), `--control-token-file` (a file
//! only its owner may read) or the `FAULTLAB_CONTROL_TOKEN` variable, so it need not be on the command line where
//! `ps` shows it to every local user. Weak tokens are refused.

use crate::cli::ProxyArgs;
use anyhow::{Context as _, anyhow};
use std::path::Path;

/// The variable read when neither flag is given.
pub const VAR: &str = "FAULTLAB_CONTROL_TOKEN";
/// Fewest characters a token may have.
const MIN_LEN: usize = 16;
/// Fewest distinct characters (refuses `aaaa…`, `1212…`, `passwordpassword`).
const MIN_DISTINCT: usize = 8;

/// The token the control API requires, if any; `var` reads the environment. Errors name the flag or file.
pub fn resolve(args: &ProxyArgs, var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Option<String>> {
    if args.control.is_none() {
        return Ok(None);
    }
    if let Some(path) = &args.control_token_file {
        let token = read_file(path)?;
        check(&token).map_err(|why| anyhow!("--control-token-file {}: the token {why}", path.display()))?;
        return Ok(Some(token));
    }
    match args.control_token.as_deref() {
        Some("auto") => {
            let token = uuid::Uuid::new_v4().simple().to_string();
            // Printed once, here only: the token is what lets a local program drive the API.
            errln!("faultlab: control token {token}");
            Ok(Some(token))
        }
        Some(token) => {
            check(token).map_err(|why| anyhow!("--control-token: the token {why}, or auto"))?;
            Ok(Some(token.to_owned()))
        }
        None => match var(VAR).filter(|v| !v.is_empty()) {
            Some(token) => {
                check(&token).map_err(|why| anyhow!("{VAR}: the token {why}"))?;
                Ok(Some(token))
            }
            None => Ok(None),
        },
    }
}

/// Why `token` is too weak to guard the API (never quoting it).
fn check(token: &str) -> Result<(), String> {
    if token.len() < MIN_LEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("must be at least {MIN_LEN} visible ASCII characters"));
    }
    let mut seen = [false; 128];
    token.bytes().for_each(|b| seen[usize::from(b)] = true);
    if seen.iter().filter(|s| **s).count() < MIN_DISTINCT {
        return Err(format!("is too easy to guess: use at least {MIN_DISTINCT} different characters"));
    }
    Ok(())
}

/// The first line of a regular file no one but its owner can read or write.
fn read_file(path: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| format!("--control-token-file {shown}: cannot read it"))?;
    if !meta.is_file() {
        return Err(anyhow!("--control-token-file {shown} is not a regular file"));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(anyhow!(
            "--control-token-file {shown} may be read by others (mode {mode:o}): `chmod 600 {shown}` so only you can"
        ));
    }
    // A token is a line, not a document: a few KiB at most.
    let text = std::fs::read(path).with_context(|| format!("--control-token-file {shown}: cannot read it"))?;
    if text.len() > 4096 {
        return Err(anyhow!("--control-token-file {shown} is over 4 KiB; it should hold the token alone"));
    }
    let text = String::from_utf8(text).map_err(|_| anyhow!("--control-token-file {shown} is not UTF-8 text"))?;
    Ok(text.lines().next().unwrap_or("").trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn short_repetitive_and_invisible_tokens_are_weak() {
        for weak in ["short", "aaaaaaaaaaaaaaaaaaaa", "1212121212121212", "passwordpassword", "has a space in it ok"] {
            assert!(check(weak).is_err(), "{weak}");
        }
        for strong in ["s3cret-token-0123456789", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"] {
            assert!(check(strong).is_ok(), "{strong}");
        }
    }
}
