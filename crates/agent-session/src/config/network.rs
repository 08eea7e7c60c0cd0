//! `[network]`: how commands reach the network, and the names web_fetch and the session proxy
//! resolve as the user pinned them (docs/network.md).
//!
//! ```toml
//! [network]
//! mode = "allow-list"            # off (default), on, allow-list
//! allow = ["crates.io", "*.npmjs.org", "pypi.org", "files.pythonhosted.org"]
//! deny = ["evil.crates.io"]
//! resolve = { "registry.test" = "127.0.0.1" }
//! ```

use std::collections::BTreeMap;

use agent_exec::network::{DomainRules, NetworkMode, Resolver};
use serde::Deserialize;

/// The `[network]` table (top level, or a profile's).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkTable {
    /// The mode when no flag says.
    pub mode: Option<NetworkMode>,
    /// Names commands may reach in allow-list mode.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Names they may never reach (deny wins).
    #[serde(default)]
    pub deny: Vec<String>,
    /// Name → IP pins, like curl's `--resolve`, for web_fetch and the proxy.
    #[serde(default)]
    pub resolve: BTreeMap<String, String>,
}

/// A profile's `network`: the old switch (`network = true`) or a table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ProfileNetwork {
    /// `network = true` is `mode = "on"`; `false` is `off`.
    Switch(bool),
    /// `[profiles.NAME.network]`: its lists and pins add to the top-level ones, its mode wins.
    Table(NetworkTable),
}

impl NetworkTable {
    /// The top-level table with a profile's on top.
    pub fn with_profile(&self, profile: Option<&ProfileNetwork>) -> NetworkTable {
        let mut merged = self.clone();
        match profile {
            Some(ProfileNetwork::Switch(on)) => {
                merged.mode = Some(if *on { NetworkMode::On } else { NetworkMode::Off });
            }
            Some(ProfileNetwork::Table(table)) => {
                merged.mode = table.mode.or(merged.mode);
                merged.allow.extend(table.allow.iter().cloned());
                merged.deny.extend(table.deny.iter().cloned());
                merged.resolve.extend(table.resolve.clone());
            }
            None => {}
        }
        merged
    }

    /// The resolver with the pins; a pin that is not an address is an error naming it.
    pub fn resolver(&self) -> crate::Result<Resolver> {
        Ok(Resolver::new(self.resolve.iter().map(|(k, v)| (k.as_str(), v.as_str())))?)
    }

    /// The proxy's lists.
    pub fn rules(&self) -> DomainRules {
        DomainRules::new(self.allow.iter().cloned(), self.deny.iter().cloned())
    }
}
