//! Changing a running agent's permission mode between prompts (an editor's mode switch).

use super::Agent;
use crate::PermissionMode;

impl Agent {
    /// Changes the permission mode from the next call on; the rules and what the user allowed for
    /// the session are kept.
    pub fn set_permission_mode(&mut self, mode: PermissionMode) {
        self.executor.policy_mut().set_mode(mode);
    }
}
