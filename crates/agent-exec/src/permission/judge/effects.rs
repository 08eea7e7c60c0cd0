//! Calls with no access list (MCP tools and the other tools that name no targets): what the mode
//! answers from the effects the tool declares.

use agent_core::{Effects, ToolSpec};

use super::{Judged, plan_deny, rule_ask};
use crate::permission::{PermissionMode, PermissionPolicy};

impl PermissionPolicy {
    /// What the mode answers for a whole call of `spec`, judged by its effects.
    pub(super) fn effects_default(&self, spec: &ToolSpec) -> Judged {
        use PermissionMode as M;
        let mode = self.mode;
        let effects = spec.effects;
        let edits_only = !effects.runs_processes && !effects.network;
        match mode {
            _ if effects.read_only || effects == Effects::default() => Judged::Allow,
            M::Bypass => Judged::Allow,
            M::AcceptEdits if edits_only => Judged::Allow,
            M::Plan => plan_deny(&format!("`{}` has side effects", spec.name)),
            M::Default | M::AcceptEdits | M::DontAsk => {
                rule_ask(format!("`{}` has side effects", spec.name), spec.rule_name.clone())
            }
        }
    }
}
