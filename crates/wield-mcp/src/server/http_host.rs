//! DNS rebinding protection of the HTTP server: the `Host` header must name
//! the address the server is bound to (`localhost`, `127.0.0.1`, `[::1]` for
//! loopback) or a name given with `--allow-host`, and a browser `Origin`,
//! when present, must be one of those too; anything else is a 403. On every
//! interface (`0.0.0.0`, `[::]`) the server has no one address to name, so
//! the Host may also be an IP address (a page that rebinds a name of its
//! own sends that name, never an address) or this machine's host name, and
//! an Origin must be loopback, allowed, or the Host itself.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// An `--allow-host` entry as the guard compares it: a bare host name or
/// address (`mcp.internal`, `10.0.0.2`, `fd00::2`), lowercased; `Err` says
/// what is wrong with anything else.
pub fn allowed_host(text: &str) -> Result<String, String> {
    let t = text.trim();
    let bare = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')).unwrap_or(t);
    if bare.is_empty() {
        return Err("an allowed host cannot be empty".into());
    }
    if bare.parse::<IpAddr>().is_ok() {
        return Ok(bare.to_ascii_lowercase());
    }
    let name_ok = bare.len() <= 253
        && bare
            .split('.')
            .all(|l| !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if name_ok {
        Ok(bare.to_ascii_lowercase())
    } else {
        Err(format!(
            "`{t}` is not a host name or address (give the name alone: no scheme, port or path)"
        ))
    }
}

/// The host part of a `Host` header or of an origin's authority:
/// `example.com:8080` → `example.com`, `[::1]:8080` → `::1`.
fn host_part(authority: &str) -> &str {
    let a = authority.trim();
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    a.rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(a, |(host, _)| host)
}

/// The port of `host[:port]` (or `[v6]:port`), else `default`; `None` for
/// a port that is not a number.
fn port_of(authority: &str, default: u16) -> Option<u16> {
    let a = authority.trim();
    let after_host = match a.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or("", |(_, after)| after),
        None => a.rsplit_once(':').map_or("", |(_, port)| port),
    };
    let port = after_host.strip_prefix(':').unwrap_or(after_host);
    if port.is_empty() {
        Some(default)
    } else {
        port.parse().ok()
    }
}

/// What the server accepts as `Host` and `Origin` (see the module
/// documentation): checked before anything else a request reaches.
pub(super) struct HostGuard {
    names: Vec<String>,
    /// How many of `names` (from the start: loopback, then allowed names)
    /// an Origin may name on any port; the rest (the bound address, this
    /// machine's name) only as the Host itself, on its port.
    origin_names: usize,
    /// Listening on every interface: any address is a name of this server.
    any_address: bool,
}

impl HostGuard {
    /// `allowed` as [`allowed_host`] gives them. No name is empty, so an
    /// empty Host or Origin never matches one.
    pub(super) fn new(bound: &SocketAddr, allowed: &[String]) -> Self {
        let mut names: Vec<String> = LOOPBACK_NAMES.iter().map(|&h| h.to_owned()).collect();
        names.extend_from_slice(allowed);
        let origin_names = names.len();
        let ip = bound.ip();
        let any_address = ip.is_unspecified();
        if any_address {
            if let Ok(hostname) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
                let hostname = hostname.trim();
                if !hostname.is_empty() {
                    names.push(hostname.to_owned());
                }
            }
        } else {
            // Another loopback address (127.0.0.5) is this server's own too.
            let ip = ip.to_string();
            if !names.contains(&ip) {
                names.push(ip);
            }
        }
        Self {
            names,
            origin_names,
            any_address,
        }
    }

    fn named(&self, host: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(host))
    }

    /// `Err` with the reason when the request may come from a rebound name
    /// or a foreign page.
    fn check(&self, host: Option<&str>, origin: Option<&str>) -> Result<(), &'static str> {
        let host_header = host.ok_or("the request has no Host header")?;
        let host = host_part(host_header);
        if !(self.named(host) || (self.any_address && host.parse::<IpAddr>().is_ok())) {
            return Err("the Host header names neither this server's address nor an allowed name");
        }
        if let Some(origin) = origin {
            let (scheme, authority) = origin.split_once("://").unwrap_or(("", origin));
            let authority = authority.split('/').next().unwrap_or_default();
            let from = host_part(authority);
            // `host` passed the check above, so it is not empty. The Host
            // itself is only the same origin on the same port: another
            // port of that machine is another site.
            let same = from.eq_ignore_ascii_case(host)
                && port_of(authority, if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 })
                    == port_of(host_header, 80);
            let known = self.names[..self.origin_names]
                .iter()
                .any(|n| n.eq_ignore_ascii_case(from));
            if !(known || same) {
                return Err("the Origin is neither this server nor an allowed name");
            }
        }
        Ok(())
    }
}

pub(super) async fn host_guard(State(guard): State<Arc<HostGuard>>, request: Request, next: Next) -> Response {
    let checked = {
        let headers = request.headers();
        // Which of two would count differs between servers and proxies (a
        // proxy may check one and pass the other on), and HTTP says a
        // request with two `Host` headers is refused.
        for name in [header::HOST, header::ORIGIN] {
            if headers.get_all(&name).iter().nth(1).is_some() {
                return (
                    StatusCode::BAD_REQUEST,
                    format!("Bad Request: more than one `{name}` header; send one\n"),
                )
                    .into_response();
            }
        }
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        guard.check(host, origin)
    };
    match checked {
        Ok(()) => next.run(request).await,
        Err(why) => (
            StatusCode::FORBIDDEN,
            format!("Forbidden: {why} (allow a name with --allow-host)\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_specific_address_accepts_its_own_names_only() {
        let loopback = HostGuard::new(&"127.0.0.1:1".parse().unwrap(), &[]);
        for host in ["localhost:1", "127.0.0.1:1", "[::1]:1", "LOCALHOST"] {
            assert_eq!(loopback.check(Some(host), None), Ok(()), "{host}");
        }
        for host in ["evil.example.com:1", "10.1.2.3:1", "", ":1"] {
            assert!(loopback.check(Some(host), None).is_err(), "{host}");
        }
        assert!(
            loopback
                .check(Some("localhost:1"), Some("http://evil.example.com"))
                .is_err()
        );
        assert_eq!(loopback.check(Some("localhost:1"), Some("http://127.0.0.1:9")), Ok(()));

        let other_loopback = HostGuard::new(&"127.0.0.5:1".parse().unwrap(), &[]);
        for host in ["127.0.0.5:1", "localhost:1", "127.0.0.1:1"] {
            assert_eq!(other_loopback.check(Some(host), None), Ok(()), "{host}");
        }
        assert!(other_loopback.check(Some("127.0.0.6:1"), None).is_err());

        let lan = HostGuard::new(&"10.1.2.3:1".parse().unwrap(), &["mcp.internal".to_owned()]);
        for host in ["10.1.2.3:1", "mcp.internal:1", "localhost:1"] {
            assert_eq!(lan.check(Some(host), None), Ok(()), "{host}");
        }
        assert!(lan.check(Some("10.1.2.4:1"), None).is_err(), "another address");
        assert_eq!(lan.check(Some("10.1.2.3:1"), Some("https://mcp.internal")), Ok(()));
        // The bound address as an Origin: the Host itself, on its port only.
        assert_eq!(lan.check(Some("10.1.2.3:1"), Some("http://10.1.2.3:1")), Ok(()));
        assert!(lan.check(Some("10.1.2.3:1"), Some("http://10.1.2.3:9999")).is_err());
    }

    #[test]
    fn allowed_hosts_are_bare_names_or_addresses() {
        assert_eq!(allowed_host("MCP.Internal").unwrap(), "mcp.internal");
        assert_eq!(allowed_host("[fd00::2]").unwrap(), "fd00::2");
        assert_eq!(allowed_host("10.0.0.2").unwrap(), "10.0.0.2");
        for bad in ["", " ", "mcp.internal:8443", "http://mcp.internal", "a/b", "a..b", "[]"] {
            assert!(allowed_host(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn host_parts() {
        assert_eq!(host_part("example.com:8080"), "example.com");
        assert_eq!(host_part("example.com"), "example.com");
        assert_eq!(host_part("[::1]:8080"), "::1");
        assert_eq!(host_part("[fe80::1]"), "fe80::1");
        assert_eq!(host_part("10.0.0.2:80"), "10.0.0.2");
        assert_eq!(port_of("example.com:8080", 80), Some(8080));
        assert_eq!(port_of("example.com", 80), Some(80));
        assert_eq!(port_of("[::1]:8080", 80), Some(8080));
        assert_eq!(port_of("[::1]", 443), Some(443));
        assert_eq!(port_of("a:b", 80), None);
    }

    #[test]
    fn any_interface_accepts_addresses_and_known_names_only() {
        let guard = HostGuard::new(&"0.0.0.0:8765".parse().unwrap(), &["mcp.internal".to_owned()]);
        // Addresses (a rebinding page sends its own name, never an address),
        // loopback and allowed names.
        for host in ["10.0.0.2:8765", "[fd00::2]:8765", "localhost:8765", "mcp.internal:8765"] {
            assert_eq!(guard.check(Some(host), None), Ok(()), "{host}");
        }
        for host in [
            "evil.example.com:8765",
            "10.0.0.2.evil.example:8765",
            "localhost.evil:1",
            ":8765",
        ] {
            assert!(guard.check(Some(host), None).is_err(), "{host}");
        }
        assert!(guard.check(None, None).is_err());
        // An Origin must be loopback, allowed, or the Host itself.
        let ok = [
            ("10.0.0.2:8765", "http://10.0.0.2:8765"),
            ("10.0.0.2:8765", "http://localhost:3000"),
            ("10.0.0.2:8765", "https://mcp.internal"),
            ("[fd00::2]:8765", "http://[fd00::2]:8765"),
        ];
        for (host, origin) in ok {
            assert_eq!(guard.check(Some(host), Some(origin)), Ok(()), "{host} {origin}");
        }
        for origin in [
            "http://evil.example.com",
            "http://10.0.0.3:8765",
            "null",
            // The same machine on another port is another site.
            "http://10.0.0.2:9999",
            "http://10.0.0.2",
        ] {
            assert!(guard.check(Some("10.0.0.2:8765"), Some(origin)).is_err(), "{origin}");
        }
        // This machine's own name is the Host's: on its port only.
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let hostname = hostname.trim();
        if !hostname.is_empty() {
            let host = format!("{hostname}:8765");
            assert_eq!(guard.check(Some(&host), Some(&format!("http://{host}"))), Ok(()));
            assert!(
                guard
                    .check(Some(&host), Some(&format!("http://{hostname}:9999")))
                    .is_err()
            );
        }
        // Default ports: Host `10.0.0.2` is port 80, as is `http://10.0.0.2`.
        assert_eq!(guard.check(Some("10.0.0.2"), Some("http://10.0.0.2")), Ok(()));
        assert!(guard.check(Some("10.0.0.2"), Some("https://10.0.0.2")).is_err());
    }
}
