//! Network targets: what the mode answers for a call that contacts a domain, or any domain, that
//! no rule names.

use agent_core::ToolSpec;

use super::{Judged, rule_ask};
use crate::permission::{PermissionMode, PermissionPolicy};

impl PermissionPolicy {
    /// What the mode answers for a call contacting `domain` (`None`: any domain).
    pub(super) fn network_default(&self, spec: &ToolSpec, domain: Option<&str>) -> Judged {
        use PermissionMode as M;
        let mode = self.mode;
        match mode {
            M::Bypass => Judged::Allow,
            M::Default | M::AcceptEdits | M::Plan | M::DontAsk => {
                let (what, rule) = match domain {
                    None => ("the network", spec.rule_name.clone()),
                    Some(domain) => (domain, format!("{}(domain:{domain})", spec.rule_name)),
                };
                rule_ask(format!("`{}` contacts {what}", spec.name), rule)
            }
        }
    }
}
