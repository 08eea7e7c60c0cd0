//! The `[checkpoints]` table: what a turn's checkpoint covers and how much the store keeps
//! (docs/checkpoints.md).

use agent_checkpoints::{CheckpointConfig, DEFAULT_STORE_CAP};
use serde::Deserialize;

use super::check_range;

/// The default age past which a session's checkpoints are removed, in days.
pub(super) const DEFAULT_GC_DAYS: u64 = 30;

/// `[checkpoints]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoints {
    /// Whether turns are checkpointed at all (default true).
    pub enabled: Option<bool>,
    /// Files larger than this are named as not covered, in bytes (default 10 MB).
    pub max_file_bytes: Option<u64>,
    /// The most bytes of content one session's store keeps (default 1 GB).
    pub store_cap_bytes: Option<u64>,
    /// Directory names whose contents are named as not covered (default `target`,
    /// `node_modules`); `[]` covers everything.
    pub ignore: Option<Vec<String>>,
    /// Sessions whose checkpoints are older than this many days lose them (default 30).
    pub gc_days: Option<u64>,
}

impl Checkpoints {
    /// Refuses a bound out of its range.
    pub fn check(&self) -> crate::Result<()> {
        check_range(
            "[checkpoints] max_file_bytes",
            "checkpoints.max_file_bytes",
            self.max_file_bytes,
        )?;
        check_range(
            "[checkpoints] store_cap_bytes",
            "checkpoints.store_cap_bytes",
            self.store_cap_bytes,
        )?;
        check_range("[checkpoints] gc_days", "checkpoints.gc_days", self.gc_days)
    }

    /// Whether checkpoints are kept.
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The library's configuration, for commands that `commands_write`.
    pub fn config(&self, commands_write: bool) -> CheckpointConfig {
        let mut config = CheckpointConfig { commands_write, ..CheckpointConfig::default() };
        if let Some(bytes) = self.max_file_bytes {
            config.rules.max_file_bytes = bytes;
        }
        if let Some(ignore) = &self.ignore {
            config.rules.ignored_dirs.clone_from(ignore);
        }
        config.store_cap = self.store_cap_bytes.unwrap_or(DEFAULT_STORE_CAP);
        config
    }

    /// How old a session's checkpoints may grow.
    pub fn gc_age(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.gc_days.unwrap_or(DEFAULT_GC_DAYS) * 86_400)
    }
}
