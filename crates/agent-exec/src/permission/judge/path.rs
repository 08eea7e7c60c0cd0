//! Read and write targets: files that may hold secrets, the rule that names a path, and what
//! the mode answers for a write no rule names.

use std::path::Path;

use agent_core::ToolSpec;

use super::{Judged, Target, applies, plan_deny, rule_ask};
use crate::permission::{Ask, PermissionMode, PermissionPolicy, Remedy, rule::Specifier};

impl PermissionPolicy {
    /// A path that may hold secrets asks, unless a path rule allows it by name.
    pub(super) fn judge_secret(&self, spec: &ToolSpec, target: &Target<'_>, path: &Path) -> Judged {
        let path_rule = self.allow.iter().any(|rule| {
            matches!(rule.specifier, Specifier::Path(_)) && applies(rule, spec, target)
        });
        if path_rule {
            return Judged::Allow;
        }
        let rule = self.path_rule(target, path);
        rule_ask(format!("{} may hold secrets", path.display()), rule)
    }

    /// What the mode answers for a write no rule names.
    pub(super) fn write_default(
        &self,
        spec: &ToolSpec,
        target: &Target<'_>,
        path: &Path,
    ) -> Judged {
        use PermissionMode as M;
        let mode = self.mode;
        match mode {
            M::AcceptEdits | M::Bypass => Judged::Allow,
            M::Plan => plan_deny(&format!("`{}` would change {}", spec.name, path.display())),
            M::Default | M::DontAsk => Judged::Ask(Ask {
                reason: format!(
                    "it would change {} and {mode} mode asks before edits",
                    path.display()
                ),
                remedy: Remedy {
                    rules: vec![self.path_rule(target, path)],
                    mode: Some(M::AcceptEdits),
                },
            }),
        }
    }

    /// The `Read(…)`/`Edit(…)` rule naming exactly this path.
    pub(super) fn path_rule(&self, target: &Target<'_>, path: &Path) -> String {
        let tool = if matches!(target, Target::Write(_)) { "Edit" } else { "Read" };
        match path.strip_prefix(self.workspace.root()) {
            Ok(relative) => format!("{tool}(./{})", relative.display()),
            Err(_) => format!("{tool}(/{})", path.display()),
        }
    }
}
