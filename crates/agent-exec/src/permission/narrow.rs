//! Narrowing a policy for a child agent: the same rules, protected paths, secrets and grants,
//! under a mode that is never wider than the parent's.

use std::sync::{RwLock, atomic::AtomicBool};

use super::{PermissionMode, PermissionPolicy};

impl PermissionMode {
    /// How much the mode lets run unasked, for narrowing: plan < dont-ask < default <
    /// accept-edits < bypass.
    fn breadth(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::DontAsk => 1,
            PermissionMode::Default => 2,
            PermissionMode::AcceptEdits => 3,
            PermissionMode::Bypass => 4,
        }
    }

    /// The narrower of the two modes: what a child asking for `requested` gets under a parent in
    /// `self` (`bypass` asked under `default` is `default`).
    #[must_use]
    pub fn narrowed(self, requested: PermissionMode) -> PermissionMode {
        if requested.breadth() < self.breadth() { requested } else { self }
    }
}

impl PermissionPolicy {
    /// The same policy under `mode` narrowed by this policy's own ([`PermissionMode::narrowed`]):
    /// every rule, protected path and secret pattern, and a copy of the session grants made so
    /// far (later grants of the parent do not reach a running child, which only narrows it).
    pub fn narrowed(&self, mode: PermissionMode) -> PermissionPolicy {
        let grants = self.grants.read().map(|grants| grants.clone()).unwrap_or_default();
        let has = !grants.rules.is_empty() || !grants.exact.is_empty();
        PermissionPolicy {
            mode: self.mode.narrowed(mode),
            workspace: self.workspace.clone(),
            allow: self.allow.clone(),
            ask: self.ask.clone(),
            deny: self.deny.clone(),
            has_command_denies: self.has_command_denies,
            warnings: self.warnings.clone(),
            protected: self.protected.clone(),
            secrets: self.secrets.clone(),
            grants: RwLock::new(grants),
            has_grants: AtomicBool::new(has),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PermissionMode::{self, *};

    fn check(parent: PermissionMode, requested: PermissionMode, got: PermissionMode) {
        assert_eq!(parent.narrowed(requested), got, "{parent} asked {requested}");
    }

    #[test]
    fn a_child_never_gets_a_wider_mode() {
        check(Default, Bypass, Default);
        check(Default, AcceptEdits, Default);
        check(Default, Plan, Plan);
        check(Bypass, Default, Default);
        check(DontAsk, Default, DontAsk);
        check(Plan, Bypass, Plan);
        check(AcceptEdits, DontAsk, DontAsk);
    }
}
