//! The agent's own way to the network, under the user's rules: the SSRF guard shared by
//! `web_fetch` and the session proxy, the resolver with the user's pins, the domain lists, and
//! the per-session proxy that is the only way out of the session's network namespace in
//! allow-list mode. See `docs/network.md`.
//!
//! - [`address`]: which addresses are internal, in every spelling (`127.1`, `0x7f.0.0.1`, …).
//! - [`resolver`]: resolution with `[network] resolve` pins, and the check of every address a
//!   connection may use ([`Resolver::vet`]).
//! - [`domains`]: `[network] allow` / `deny` patterns, deny winning.
//! - [`proxy`]: the session proxy (HTTP, CONNECT with SNI, SOCKS5) and its decision log.

pub mod address;
pub mod domains;
pub mod proxy;
pub mod resolver;

pub use self::{
    address::{AddressClass, classify, parse_host_ip},
    domains::{DomainRules, Verdict},
    proxy::{NetDecision, NetLog, ProxyConfig, SessionProxy, Via},
    resolver::{BadPin, Refusal, Resolved, Resolver, Source},
};

/// How sandboxed commands reach the network.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// Only the session's own loopback (the default).
    #[default]
    Off,
    /// The host's network, unfiltered.
    On,
    /// Only the names `[network] allow` lists, through the session proxy.
    AllowList,
}

impl NetworkMode {
    /// The name used on the command line and in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Off => "off",
            NetworkMode::On => "on",
            NetworkMode::AllowList => "allow-list",
        }
    }
}

impl std::fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
