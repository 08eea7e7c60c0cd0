//! `FileTracker`: what the model has read in this session, for the staleness checks.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
};

use crate::text::content_hash;

/// Remembers, per canonical path, the content the model last saw (read or wrote).
///
/// read_file records a file when it shows it; write_file and edit_file refuse to change an existing
/// file unless it is recorded and its bytes still hash the same, then record what they wrote. One
/// tracker is shared by the file tools of one session (one registry).
#[derive(Debug, Default)]
pub struct FileTracker {
    seen: Mutex<HashMap<PathBuf, Seen>>,
}

/// What the model last saw of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Hash of the file's bytes.
    pub(crate) hash: u64,
    /// Size in bytes.
    pub(crate) len: u64,
}

impl FileTracker {
    /// An empty tracker, ready to share.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Whether the model has seen `path` (canonical) in this session.
    pub fn has_seen(&self, path: &Path) -> bool {
        self.lock().contains_key(path)
    }

    /// Records the file at `path` (canonical) as read now, as if the model had just read it
    /// whole. For front ends where a person, not the model, is the author of an edit: such a call
    /// has no earlier read to check against, and the person has seen what they are changing.
    pub fn mark_read(&self, path: &Path) -> std::io::Result<()> {
        let bytes = std::fs::read(path)?;
        self.record(path, &bytes);
        Ok(())
    }

    /// Forgets everything, as at the start of a new session.
    pub fn clear(&self) {
        self.lock().clear();
    }

    pub(crate) fn record(&self, path: &Path, bytes: &[u8]) {
        self.insert(path, self.seen_of(bytes));
    }

    /// What recording `bytes` would store, computed without recording it.
    pub(crate) fn seen_of(&self, bytes: &[u8]) -> Seen {
        Seen { hash: content_hash(bytes), len: bytes.len() as u64 }
    }

    pub(crate) fn insert(&self, path: &Path, seen: Seen) {
        self.lock().insert(path.to_path_buf(), seen);
    }

    pub(crate) fn get(&self, path: &Path) -> Option<Seen> {
        self.lock().get(path).copied()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, Seen>> {
        // A panic while holding the lock cannot leave the map half-updated (every update is a
        // single insert), so a poisoned lock is still safe to use.
        self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
