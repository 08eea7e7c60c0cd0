//! Name resolution for the agent's own network clients, with the user's pins (like curl's
//! `--resolve`), and the check every resolved address passes before a connection is made.
//!
//! Both `web_fetch` and the session proxy resolve through one [`Resolver`] and connect to the
//! addresses [`Resolver::vet`] returned, never to a name: there is no second lookup an
//! attacker's DNS could answer differently (DNS rebinding).

use std::{
    collections::BTreeMap,
    fmt,
    net::{IpAddr, SocketAddr},
    sync::Arc,
};

use super::address::{AddressClass, classify, parse_host_ip};

/// Resolves names, the user's pins first.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    /// Lower-case name → the addresses the user pinned (`[network] resolve`).
    pins: Arc<BTreeMap<String, Vec<IpAddr>>>,
}

/// The addresses a host stands for, and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The host as asked, lower-case, without brackets or a trailing dot.
    pub host: String,
    /// Every address, with the port.
    pub addrs: Vec<SocketAddr>,
    /// How the addresses were found.
    pub source: Source,
}

/// Where a host's addresses came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The host is an address itself (in any spelling).
    Literal,
    /// The user pinned the name (`[network] resolve`): it passes the private-range check.
    Pinned,
    /// The system resolver.
    Dns,
}

/// Why a host cannot be connected to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The name did not resolve.
    Unresolved {
        /// The name.
        host: String,
        /// The resolver's words.
        why: String,
    },
    /// An address it resolves to is not public and no rule opened the host.
    Internal {
        /// The host.
        host: String,
        /// The first address that is not public.
        addr: IpAddr,
        /// Its class.
        class: AddressClass,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unresolved { host, why } => write!(f, "`{host}` does not resolve: {why}"),
            Refusal::Internal { host, addr, class } if host == &addr.to_string() => {
                write!(f, "{addr} is a {class} address")
            }
            // Another spelling of an address (`0x7f.1`): the address it spells.
            Refusal::Internal { host, addr, class } if parse_host_ip(host).is_some() => {
                write!(f, "`{host}` is {addr}, a {class} address")
            }
            Refusal::Internal { host, addr, class } => {
                write!(f, "`{host}` resolves to {addr}, a {class} address")
            }
        }
    }
}

/// A pin that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`[network] resolve`: `{name}` = `{value}` is not an IP address")]
pub struct BadPin {
    /// The name.
    pub name: String,
    /// What was given.
    pub value: String,
}

/// A host as a comparable name: lower case, no brackets, no trailing dot.
pub fn normalize_host(host: &str) -> String {
    let host = host.trim();
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

impl Resolver {
    /// A resolver with `pins`: name → one address each (several entries may name one host).
    pub fn new<'a>(pins: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, BadPin> {
        let mut map: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        for (name, value) in pins {
            let ip = parse_host_ip(value)
                .ok_or_else(|| BadPin { name: name.to_owned(), value: value.to_owned() })?;
            map.entry(normalize_host(name)).or_default().push(ip);
        }
        Ok(Self { pins: Arc::new(map) })
    }

    /// Whether the user pinned `host`.
    pub fn is_pinned(&self, host: &str) -> bool {
        self.pins.contains_key(&normalize_host(host))
    }

    /// Every address of `host` (a name or an address in any spelling) at `port`.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Resolved, Refusal> {
        let name = normalize_host(host);
        if let Some(ip) = parse_host_ip(&name) {
            return Ok(Resolved {
                host: name,
                addrs: vec![SocketAddr::new(ip, port)],
                source: Source::Literal,
            });
        }
        if let Some(ips) = self.pins.get(&name) {
            let addrs = ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
            return Ok(Resolved { host: name, addrs, source: Source::Pinned });
        }
        // `localhost` and its subdomains are loopback by definition (RFC 6761), as browsers
        // treat them: no resolver is asked, and the guard judges them as the loopback they are.
        if name == "localhost" || name.ends_with(".localhost") {
            let addrs = [IpAddr::from([127, 0, 0, 1]), IpAddr::from(std::net::Ipv6Addr::LOCALHOST)]
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect();
            return Ok(Resolved { host: name, addrs, source: Source::Literal });
        }
        let found = tokio::net::lookup_host((name.clone(), port)).await.map(Vec::from_iter);
        match found {
            Ok(found) => {
                let addrs: Vec<SocketAddr> = found;
                if addrs.is_empty() {
                    return Err(Refusal::Unresolved { host: name, why: "no address".to_owned() });
                }
                Ok(Resolved { host: name, addrs, source: Source::Dns })
            }
            Err(err) => Err(Refusal::Unresolved { host: name, why: err.to_string() }),
        }
    }

    /// The addresses of `resolved` a connection may use. A pinned name passes (the user named
    /// the address); otherwise every address must be public unless `open_internal` (a rule
    /// opened the host), and one internal address refuses them all: a name whose records mix
    /// a public and a loopback address is an attack, not a fallback.
    pub fn vet(resolved: &Resolved, open_internal: bool) -> Result<Vec<SocketAddr>, Refusal> {
        if resolved.source != Source::Pinned && !open_internal {
            for addr in &resolved.addrs {
                let class = classify(addr.ip());
                if !class.is_public() {
                    return Err(Refusal::Internal {
                        host: resolved.host.clone(),
                        addr: addr.ip(),
                        class,
                    });
                }
            }
        }
        Ok(resolved.addrs.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn check(resolver: &Resolver, host: &str, open: bool) -> String {
        match resolver.resolve(host, 80).await {
            Ok(resolved) => match Resolver::vet(&resolved, open) {
                Ok(addrs) => format!("ok {addrs:?}"),
                Err(refusal) => refusal.to_string(),
            },
            Err(refusal) => refusal.to_string(),
        }
    }

    #[tokio::test]
    async fn pins_pass_and_literals_are_judged() {
        let resolver = Resolver::new([("Docs.Example", "127.0.0.1")]).unwrap();
        assert_eq!(check(&resolver, "docs.example.", false).await, "ok [127.0.0.1:80]");
        assert_eq!(
            check(&resolver, "0x7f.1", false).await,
            "`0x7f.1` is 127.0.0.1, a loopback address"
        );
        assert_eq!(check(&resolver, "[::1]", false).await, "::1 is a loopback address");
        assert_eq!(check(&resolver, "127.1", true).await, "ok [127.0.0.1:80]");
        assert!(Resolver::new([("x", "not-an-ip")]).is_err());
        assert_eq!(
            check(&resolver, "api.localhost", false).await,
            "`api.localhost` resolves to 127.0.0.1, a loopback address"
        );
    }
}
