//! Session modes: our permission modes, one ACP mode each.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeId, SessionModeState};
use agent_exec::PermissionMode;

/// Every mode offered, in the order an editor lists them.
const MODES: [(PermissionMode, &str, &str); 5] = [
    (PermissionMode::Default, "Ask", "Reads run; edits, commands and network ask first"),
    (PermissionMode::AcceptEdits, "Accept edits", "Edits inside the workspace run without asking"),
    (PermissionMode::Plan, "Plan", "Read-only: anything that changes state is refused"),
    (PermissionMode::DontAsk, "Don't ask", "What rules do not allow is refused, never asked"),
    (PermissionMode::Bypass, "Bypass", "Everything runs except deny rules and protected paths"),
];

/// The ACP mode id of a permission mode: the word `--permission-mode` takes.
pub fn mode_id(mode: PermissionMode) -> &'static str {
    mode.as_str()
}

/// The permission mode an ACP mode id names.
pub fn mode_from_id(id: &str) -> Option<PermissionMode> {
    MODES.iter().map(|(mode, _, _)| *mode).find(|mode| mode_id(*mode) == id)
}

/// The mode state a session response carries.
pub(crate) fn state(current: PermissionMode) -> SessionModeState {
    let modes = MODES
        .iter()
        .map(|(mode, name, description)| {
            SessionMode::new(SessionModeId::new(mode_id(*mode)), *name)
                .description(description.to_string())
        })
        .collect();
    SessionModeState::new(SessionModeId::new(mode_id(current)), modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_id() {
        for (mode, _, _) in MODES {
            assert_eq!(mode_from_id(mode_id(mode)), Some(mode));
        }
        assert_eq!(mode_from_id("yolo"), None);
    }
}
