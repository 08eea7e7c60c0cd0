//! The session's checkpoints: its store opened from `[checkpoints]`, and old sessions' stores
//! collected (docs/checkpoints.md).

use std::{path::Path, sync::Arc};

use agent_checkpoints::Checkpoints;
use agent_exec::sandbox::SandboxPolicy;

use crate::{log::SessionLog, settings::Settings};

/// The session's checkpoints, unless `[checkpoints] enabled = false`; old sessions' checkpoints
/// are collected first.
pub fn open(settings: &Settings, session_dir: &Path) -> crate::Result<Option<Arc<Checkpoints>>> {
    let table = &settings.file.checkpoints;
    if !table.enabled() {
        return Ok(None);
    }
    collect_garbage(table.gc_age());
    let commands_write = settings.sandbox_policy()? != SandboxPolicy::ReadOnly;
    let root = settings.workspace()?;
    let checkpoints = Checkpoints::open(session_dir, &root, table.config(commands_write))?;
    Ok(Some(Arc::new(checkpoints)))
}

/// Removes the checkpoints (never the transcripts) of sessions untouched for longer than `age`.
pub fn collect_garbage(age: std::time::Duration) {
    let Ok(root) = SessionLog::root() else { return };
    let Ok(read) = std::fs::read_dir(root) else { return };
    let now = std::time::SystemTime::now();
    for entry in read.flatten() {
        let store = entry.path().join("checkpoints");
        let touched = std::fs::metadata(store.join("turns.jsonl"))
            .or_else(|_| std::fs::metadata(&store))
            .and_then(|meta| meta.modified());
        if let Ok(touched) = touched
            && now.duration_since(touched).is_ok_and(|elapsed| elapsed > age)
        {
            let _ = std::fs::remove_dir_all(&store);
        }
    }
}
