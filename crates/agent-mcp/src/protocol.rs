//! Which MCP revision the client speaks to a server: the `protocol` key and how it becomes rmcp's
//! lifecycle.
//!
//! The 2026-07-28 revision has no `initialize`: a client opens with `server/discover` and sends
//! its protocol version and capabilities in every request's `_meta`. Most servers in the wild
//! still speak 2025-11-25, whose handshake must name a version that has one. So by default we do
//! what the official SDKs do: probe with `server/discover` and, when the server answers as a
//! legacy server would (method not found, a refusal before `initialize`, or nothing), fall back to
//! `initialize` naming [`ProtocolVersion::LATEST_WITH_INITIALIZE`] (2025-11-25). rmcp does the
//! probing and the fallback (`ClientLifecycleMode::Auto`) and keeps the `_meta` of every later
//! request; this module only chooses and names.

use rmcp::{model::ProtocolVersion, service::ClientLifecycleMode};
use serde::{Deserialize, Serialize};

/// The `protocol` key of a server's table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum Protocol {
    /// Probe with `server/discover`, fall back to `initialize` (2025-11-25).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Only 2026-07-28 (`server/discover`, no fallback): a legacy server fails to start.
    #[serde(rename = "2026-07-28")]
    Modern,
    /// Only the `initialize` handshake, naming 2025-11-25 (no probe): for a server that
    /// misbehaves when it receives an unknown first request.
    #[serde(rename = "2025-11-25")]
    Legacy,
}

impl Protocol {
    /// Whether this is the default (not written out).
    pub(crate) fn is_auto(&self) -> bool {
        *self == Self::Auto
    }

    /// rmcp's lifecycle for this choice.
    pub(crate) fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Self::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
            Self::Modern => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Self::Legacy => ClientLifecycleMode::Initialize,
        }
    }
}

/// The version a legacy handshake names: the newest that has `initialize`. rmcp's default
/// (`ProtocolVersion::LATEST`) is 2026-07-28, which has none, and a strict server refuses it.
pub(crate) fn handshake_version() -> ProtocolVersion {
    ProtocolVersion::LATEST_WITH_INITIALIZE
}

/// Whether `version` is of the 2026 era (no handshake, `_meta` on every request,
/// `input_required` results instead of server-to-client requests).
pub fn is_modern(version: &str) -> bool {
    // ISO dates compare lexically as they do in time.
    version >= ProtocolVersion::V_2026_07_28.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(protocol: Protocol, expect: &str) {
        assert_eq!(format!("{:?}", protocol.lifecycle()), expect);
    }

    #[test]
    fn each_choice_is_a_lifecycle() {
        check(
            Protocol::Auto,
            "Auto { preferred_versions: [ProtocolVersion(\"2026-07-28\")], legacy_version: \
             Some(ProtocolVersion(\"2025-11-25\")) }",
        );
        check(
            Protocol::Modern,
            "Discover { preferred_versions: [ProtocolVersion(\"2026-07-28\")] }",
        );
        check(Protocol::Legacy, "Initialize");
        assert_eq!(handshake_version().as_str(), "2025-11-25");
        assert!(handshake_version().has_initialize());
        assert!(is_modern("2026-07-28") && !is_modern("2025-11-25") && !is_modern("2025-06-18"));
    }
}
