//! The SSRF guard: which addresses web tools may connect to.
//!
//! A URL's host is resolved once and every address is classified; a host
//! with any internal address is refused as a whole (a name that resolves to
//! both a public and a loopback address is how rebinding attacks start).
//! The checked addresses are handed to the HTTP client so it never resolves
//! the name again. IPv6 forms that embed an IPv4 address (mapped,
//! compatible, NAT64, 6to4) are judged by the address they embed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;

/// Why an address is internal, or `None` for a public one.
pub fn blocked_reason(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4).map(str::to_owned),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let reason = if ip == Ipv4Addr::new(169, 254, 169, 254) {
        "the cloud metadata address"
    } else if ip.is_unspecified() || a == 0 {
        "an unspecified (\"this network\") address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_private() {
        "a private-network address"
    } else if ip.is_link_local() {
        "a link-local address"
    } else if a == 100 && (b & 0xc0) == 64 {
        "a carrier-grade NAT (100.64.0.0/10) address"
    } else if ip.is_broadcast() {
        "the broadcast address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if a >= 240 {
        "a reserved (240.0.0.0/4) address"
    } else if a == 192 && b == 0 && c == 0 {
        "an IETF protocol-assignment (192.0.0.0/24) address"
    } else if a == 198 && (b & 0xfe) == 18 {
        "a benchmarking-network (198.18.0.0/15) address"
    } else {
        return None;
    };
    Some(reason)
}

fn v6_reason(ip: Ipv6Addr) -> Option<String> {
    let seg = ip.segments();
    let embedded = |v4: Ipv4Addr, form: &str| v4_reason(v4).map(|r| format!("{r} ({v4}) written as {form}"));
    if ip.is_unspecified() {
        return Some("the unspecified address (::)".into());
    }
    if ip.is_loopback() {
        return Some("a loopback address".into());
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return embedded(v4, "an IPv4-mapped IPv6 address");
    }
    let low = Ipv4Addr::new(
        (seg[6] >> 8) as u8,
        (seg[6] & 0xff) as u8,
        (seg[7] >> 8) as u8,
        (seg[7] & 0xff) as u8,
    );
    if seg[..6].iter().all(|s| *s == 0) {
        // The deprecated IPv4-compatible form ::a.b.c.d.
        return embedded(low, "an IPv4-compatible IPv6 address")
            .or_else(|| Some("a deprecated IPv4-compatible IPv6 address".into()));
    }
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6].iter().all(|s| *s == 0) {
        return embedded(low, "a NAT64 (64:ff9b::/96) address");
    }
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1 {
        return Some("a local-use NAT64 (64:ff9b:1::/48) address".into());
    }
    if seg[0] == 0x2002 {
        let v4 = Ipv4Addr::new(
            (seg[1] >> 8) as u8,
            (seg[1] & 0xff) as u8,
            (seg[2] >> 8) as u8,
            (seg[2] & 0xff) as u8,
        );
        return embedded(v4, "a 6to4 (2002::/16) address");
    }
    let reason = if (seg[0] & 0xfe00) == 0xfc00 {
        "a unique-local (fc00::/7) address"
    } else if (seg[0] & 0xffc0) == 0xfe80 {
        "a link-local (fe80::/10) address"
    } else if (seg[0] & 0xffc0) == 0xfec0 {
        "a site-local (fec0::/10) address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else {
        return None;
    };
    Some(reason.into())
}

/// One entry of an `allow` list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum AllowEntry {
    /// A host name or address literal, on any port or one port.
    Host { host: String, port: Option<u16> },
    /// Addresses in a network.
    Net { net: IpAddr, prefix: u8 },
}

/// The exceptions to the guard (`allow = ["host", "host:port", "CIDR"]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allow {
    entries: Vec<AllowEntry>,
}

impl Allow {
    /// Parse an allow list; `key` names it in errors.
    pub fn parse(key: &str, items: &[String]) -> Result<Self, String> {
        let mut entries = Vec::new();
        for item in items {
            let item = item.trim();
            let bad = || {
                format!(
                    "{key}: `{item}` is not a host, host:port or CIDR (e.g. \"example.com\", \"127.0.0.1:8080\", \"10.0.0.0/8\")"
                )
            };
            if let Some((net, prefix)) = item.split_once('/') {
                let net: IpAddr = net.trim_matches(['[', ']']).parse().map_err(|_| bad())?;
                let prefix: u8 = prefix.parse().map_err(|_| bad())?;
                let max = if net.is_ipv4() { 32 } else { 128 };
                if prefix > max {
                    return Err(bad());
                }
                entries.push(AllowEntry::Net { net, prefix });
                continue;
            }
            if let Ok(ip) = item.trim_matches(['[', ']']).parse::<IpAddr>() {
                let prefix = if ip.is_ipv4() { 32 } else { 128 };
                entries.push(AllowEntry::Net { net: ip, prefix });
                continue;
            }
            let (host, port) = match item.rsplit_once(':') {
                Some((h, p)) if !h.is_empty() => (h, Some(p.parse::<u16>().map_err(|_| bad())?)),
                _ => (item, None),
            };
            let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
            if host.is_empty() || host.contains(['/', ' ', '@']) {
                return Err(bad());
            }
            entries.push(AllowEntry::Host { host, port });
        }
        Ok(Self { entries })
    }

    /// Whether the URL's host (and port) is listed by name or literal.
    fn host_allowed(&self, host: &str, port: u16) -> bool {
        self.entries.iter().any(|e| match e {
            AllowEntry::Host { host: h, port: p } => h == host && p.is_none_or(|p| p == port),
            AllowEntry::Net { .. } => false,
        })
    }

    /// Whether an address is inside a listed network.
    fn addr_allowed(&self, ip: IpAddr, port: u16, host: &str) -> bool {
        self.entries.iter().any(|e| match e {
            AllowEntry::Net { net, prefix } => in_net(ip, *net, *prefix),
            AllowEntry::Host { host: h, port: p } => {
                // "127.0.0.1:8080" is a host:port entry naming an address.
                let port_ok = p.is_none_or(|p| p == port);
                port_ok && (h == host || h.parse::<IpAddr>().is_ok_and(|a| a == ip))
            }
        })
    }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// A URL refused by the guard, with what to tell the model.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("only http and https URLs can be fetched; `{url}` uses `{scheme}:`. Give an http:// or https:// address.")]
    Scheme { url: String, scheme: String },
    #[error("`{0}` has no host name; give a full address such as https://example.com/page.")]
    NoHost(String),
    #[error("could not resolve the host `{host}` of {url}: {reason}. Check the spelling of the address.")]
    Resolve { url: String, host: String, reason: String },
    #[error(
        "blocked by the SSRF guard: {url} {how} {ip}, {reason}. web_fetch and web_search do not reach loopback, \
         private, link-local, metadata or other internal addresses. Use a public address; if this host is meant \
         to be reachable, the user can add it to `{key}` in wield's configuration \
         (e.g. {key} = [\"{example}\"])."
    )]
    Blocked {
        url: String,
        how: &'static str,
        ip: IpAddr,
        reason: String,
        key: String,
        example: String,
    },
}

/// A URL that passed the guard, with the addresses to connect to.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The host name to pin (`None` for an address literal).
    pub domain: Option<String>,
    pub addrs: Vec<SocketAddr>,
}

/// Check a URL: its scheme, then every address its host has.
pub async fn check(url: &Url, allow: &Allow, allow_key: &str) -> Result<Checked, GuardError> {
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(GuardError::Scheme {
            url: url.to_string(),
            scheme: scheme.to_owned(),
        });
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let host = url.host_str().ok_or_else(|| GuardError::NoHost(url.to_string()))?;
    // The URL parser already turned decimal, octal and hex IPv4 forms into
    // dotted quads, and keeps IPv6 literals in brackets.
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let (domain, addrs, how) = match literal {
        Some(ip) => (None, vec![SocketAddr::new(ip, port)], "is the address"),
        None => {
            let name = host.to_ascii_lowercase();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), port))
                .await
                .map_err(|e| GuardError::Resolve {
                    url: url.to_string(),
                    host: name.clone(),
                    reason: e.to_string(),
                })?
                .collect();
            if addrs.is_empty() {
                return Err(GuardError::Resolve {
                    url: url.to_string(),
                    host: name,
                    reason: "it has no addresses".into(),
                });
            }
            (Some(name), addrs, "resolves to")
        }
    };
    let host_text = domain.clone().unwrap_or_else(|| addrs[0].ip().to_string());
    if !allow.host_allowed(&host_text, port) {
        for addr in &addrs {
            let ip = addr.ip();
            if allow.addr_allowed(ip, port, &host_text) {
                continue;
            }
            if let Some(reason) = blocked_reason(ip) {
                let example = match (&domain, ip) {
                    (Some(d), _) => format!("{d}:{port}"),
                    (None, IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
                    (None, v4) => format!("{v4}:{port}"),
                };
                return Err(GuardError::Blocked {
                    url: url.to_string(),
                    how,
                    ip,
                    reason,
                    key: allow_key.to_owned(),
                    example,
                });
            }
        }
    }
    Ok(Checked { domain, addrs })
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
