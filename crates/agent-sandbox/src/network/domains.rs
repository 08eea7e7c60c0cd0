//! Domain lists: `[network] allow` and `deny` for the session proxy.
//!
//! A pattern `docs.rs` matches that name and every subdomain (`static.docs.rs`), `*.docs.rs`
//! only the subdomains, `*` every name; an IP address matches itself in any spelling. Deny
//! wins over allow, and a name on neither list is refused.

use super::{address::parse_host_ip, resolver::normalize_host};

/// The allow and deny lists of the session proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainRules {
    allow: Vec<String>,
    deny: Vec<String>,
}

/// What the lists say about a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An allow pattern matched (and no deny pattern).
    Allowed(String),
    /// A deny pattern matched.
    Denied(String),
    /// Neither list names the host.
    Unlisted,
}

impl DomainRules {
    /// Lists from the configuration's patterns.
    pub fn new(
        allow: impl IntoIterator<Item = String>,
        deny: impl IntoIterator<Item = String>,
    ) -> Self {
        let clean = |p: String| normalize_host(&p);
        Self {
            allow: allow.into_iter().map(clean).collect(),
            deny: deny.into_iter().map(clean).collect(),
        }
    }

    /// The same lists with `pattern` allowed too (an allow rule added on the spot).
    pub fn allow(&mut self, pattern: &str) {
        self.allow.push(normalize_host(pattern));
    }

    /// The allow patterns.
    pub fn allowed(&self) -> &[String] {
        &self.allow
    }

    /// The deny patterns.
    pub fn denied(&self) -> &[String] {
        &self.deny
    }

    /// The verdict on `host`.
    pub fn judge(&self, host: &str) -> Verdict {
        let host = normalize_host(host);
        if let Some(rule) = self.deny.iter().find(|p| matches(p, &host)) {
            return Verdict::Denied(rule.clone());
        }
        match self.allow.iter().find(|p| matches(p, &host)) {
            Some(rule) => Verdict::Allowed(rule.clone()),
            None => Verdict::Unlisted,
        }
    }
}

/// Whether the normalized `pattern` matches the normalized `host`.
pub fn matches(pattern: &str, host: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    if let (Some(a), Some(b)) = (parse_host_ip(pattern), parse_host_ip(host)) {
        return a == b;
    }
    if let Some(suffix) = pattern.strip_prefix("*.") {
        return host.strip_suffix(suffix).is_some_and(|head| head.ends_with('.'));
    }
    host == pattern || host.strip_suffix(pattern).is_some_and(|head| head.ends_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(rules: &DomainRules, host: &str, expect: &str) {
        let got = match rules.judge(host) {
            Verdict::Allowed(rule) => format!("allow {rule}"),
            Verdict::Denied(rule) => format!("deny {rule}"),
            Verdict::Unlisted => "unlisted".to_owned(),
        };
        assert_eq!(got, expect, "{host}");
    }

    #[test]
    fn deny_wins_and_wildcards_mean_subdomains() {
        let rules = DomainRules::new(
            ["crates.io".into(), "*.npmjs.org".into(), "127.0.0.1".into()],
            ["evil.crates.io".into()],
        );
        check(&rules, "crates.io", "allow crates.io");
        check(&rules, "static.crates.io", "allow crates.io");
        check(&rules, "EVIL.crates.io.", "deny evil.crates.io");
        check(&rules, "notcrates.io", "unlisted");
        check(&rules, "registry.npmjs.org", "allow *.npmjs.org");
        check(&rules, "npmjs.org", "unlisted");
        check(&rules, "0x7f.0.0.1", "allow 127.0.0.1");
    }
}
