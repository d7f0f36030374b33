//! Checks made before anything reaches the MCP handler: where the server may listen, and which `Host` and
//! `Origin` headers a request may carry (DNS-rebinding protection; rmcp does not check `Origin` by default).

use std::net::{IpAddr, Ipv4Addr};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BindError {
    #[error("{0} is a wildcard address; faultlab listens on loopback only (use 127.0.0.1, ::1 or localhost)")]
    Wildcard(String),
    #[error("{0} is not a loopback address; faultlab listens on loopback only (use 127.0.0.1, ::1 or localhost)")]
    NotLoopback(String),
    #[error("{0} is not an IP address or localhost; give a loopback address such as 127.0.0.1 or ::1")]
    NotAnAddress(String),
    #[error(
        "--path {0:?} must start with '/', have no query or fragment, use only URL-safe characters, and be at most 1024 bytes"
    )]
    BadPath(String),
}

/// The address to bind for `--host` (or the host of `--listen`), refusing every spelling of the wildcard address and anything that is not
/// loopback.
pub fn bind_address(host: &str) -> Result<IpAddr, BindError> {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if bare.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let ip = match bare.parse::<IpAddr>() {
        Ok(ip) => ip,
        // Browsers and URL parsers accept shorthand IPv4 such as `0`, `0.0` or `0x7f.1`; a bind of `0` would be
        // a wildcard, so such spellings are resolved rather than passed on.
        Err(_) => legacy_ipv4(bare).map(IpAddr::V4).ok_or_else(|| BindError::NotAnAddress(host.into()))?,
    };
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    if ip.is_unspecified() {
        Err(BindError::Wildcard(host.into()))
    } else if !ip.is_loopback() {
        Err(BindError::NotLoopback(host.into()))
    } else {
        Ok(ip)
    }
}

/// Parses the WHATWG URL "IPv4 number" forms: 1 to 4 dot-separated parts, each decimal, octal (leading 0) or
/// hex (0x); the last part fills the remaining bytes.
fn legacy_ipv4(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.strip_suffix('.').unwrap_or(s).split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u64> = parts.iter().map(|p| parse_part(p)).collect::<Option<_>>()?;
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (5 - numbers.len())) {
        return None;
    }
    let mut value = *last;
    for (i, n) in init.iter().enumerate() {
        value += n << (8 * (3 - i));
    }
    Some(Ipv4Addr::from(u32::try_from(value).ok()?))
}

fn parse_part(p: &str) -> Option<u64> {
    if let Some(hex) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        return if hex.is_empty() { Some(0) } else { u64::from_str_radix(hex, 16).ok() };
    }
    if p.len() > 1 && p.starts_with('0') {
        return u64::from_str_radix(&p[1..], 8).ok();
    }
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse().ok()
}

/// Checks `--path`: absolute, no query or fragment, only unreserved characters, `/` and percent-escapes, so
/// the path a client sends can only match it one way.
pub fn endpoint_path(path: &str) -> Result<String, BindError> {
    let bad = || BindError::BadPath(path.into());
    if !path.starts_with('/') || path.len() > 1024 {
        return Err(bad());
    }
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() && bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit() => {
                i += 3;
                continue;
            }
            b'/' | b'-' | b'.' | b'_' | b'~' => {}
            b if b.is_ascii_alphanumeric() => {}
            _ => return Err(bad()),
        }
        i += 1;
    }
    Ok(path.to_owned())
}

/// The host names a request's `Host` (and `Origin`) may name: loopback names plus the bound address.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    names: Vec<String>,
}

impl AllowedHosts {
    pub fn for_bind(ip: IpAddr) -> Self {
        let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()];
        let bound = match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        if !names.contains(&bound) {
            names.push(bound);
        }
        Self { names }
    }

    /// `Host: name[:port]`.
    pub fn host_ok(&self, host: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(strip_port(host)))
    }

    /// `Origin: scheme://name[:port]`; `null` and other schemes are refused.
    pub fn origin_ok(&self, origin: &str) -> bool {
        let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
            return false;
        };
        !rest.contains('/') && self.host_ok(rest)
    }
}

fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        // [v6]:port or [v6]
        return authority.find(']').map_or(authority, |end| &authority[..=end]);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, port)| if port.bytes().all(|b| b.is_ascii_digit()) { host } else { authority })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wildcard_spelling_is_refused() {
        for host in ["0.0.0.0", "0", "0.0", "0.0.0.00", "0x0", "::", "::0", "0:0:0:0:0:0:0:0", "[::]", "::ffff:0.0.0.0"]
        {
            assert!(matches!(bind_address(host), Err(BindError::Wildcard(_))), "{host}");
        }
    }

    #[test]
    fn loopback_spellings_are_accepted_and_others_refused() {
        for host in ["127.0.0.1", "localhost", "LOCALHOST", "::1", "[::1]", "127.1", "0x7f.1", "127.0.0.2"] {
            assert!(bind_address(host).is_ok(), "{host}");
        }
        assert!(matches!(bind_address("192.168.1.5"), Err(BindError::NotLoopback(_))));
        assert!(matches!(bind_address("example.com"), Err(BindError::NotAnAddress(_))));
    }

    #[test]
    fn paths_must_be_canonical() {
        assert!(endpoint_path("/mcp").is_ok());
        assert!(endpoint_path("/a/b%20c").is_ok());
        for bad in ["mcp", "/mcp?x=1", "/mcp#f", "/mcp path", "/café", "/%zz"] {
            assert!(endpoint_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_and_origin_checks() {
        let allowed = AllowedHosts::for_bind(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(allowed.host_ok("localhost:3000") && allowed.host_ok("127.0.0.1") && allowed.host_ok("[::1]:80"));
        assert!(!allowed.host_ok("evil.example") && !allowed.host_ok("evil.example:3000"));
        assert!(allowed.origin_ok("http://localhost:5173") && allowed.origin_ok("https://127.0.0.1"));
        assert!(!allowed.origin_ok("http://evil.example") && !allowed.origin_ok("null"));
    }
}
