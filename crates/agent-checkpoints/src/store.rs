//! The checkpoint store of one session, under `<session>/checkpoints/`: content-addressed blobs
//! (`blobs/<sha256>`, each content kept once), one record per checkpoint (`records/<id>.json`) and
//! one line per user prompt (`turns.jsonl`: the turn's number and where its transcript began).
//!
//! Everything is written beside the session's transcript, never inside the workspace, so the
//! user's `.git`, index and refs are never touched.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
};

use agent_sandbox::writes::Skipped;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::CheckpointError;

/// The state of one path at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileState {
    /// Nothing there.
    Absent,
    /// A regular file with this content (a blob) and these permission bits.
    File {
        /// The blob's SHA-256, hex.
        hash: String,
        /// Permission bits.
        mode: u32,
        /// Size in bytes.
        size: u64,
    },
    /// A directory.
    Dir {
        /// Permission bits.
        mode: u32,
    },
    /// A symbolic link.
    Symlink {
        /// Where it points.
        target: PathBuf,
    },
}

/// One path a checkpoint covers: what it was before the first write of the turn, and what the
/// turn left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The path, relative to the workspace root.
    pub path: PathBuf,
    /// Before the turn's first write.
    pub before: FileState,
    /// After the turn's last write.
    pub after: FileState,
}

/// What a record is the checkpoint of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordKind {
    /// The writes of one user prompt.
    Turn,
    /// An undo of record `of` (undoing it again is a redo).
    Undo {
        /// The record it undid.
        of: u32,
    },
}

/// One checkpoint: the paths a turn (or an undo) changed, and what it could not cover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Sequential within the session, from 1.
    pub id: u32,
    /// The user prompt it belongs to, from 1.
    pub turn: u32,
    /// A turn's writes or an undo.
    #[serde(flatten)]
    pub kind: RecordKind,
    /// Every path changed, sorted.
    pub changes: Vec<Change>,
    /// Paths changed but not covered, each with why.
    pub not_covered: Vec<Skipped>,
    /// The record that undid this one, while it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone_by: Option<u32>,
}

/// Where one user prompt began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMark {
    /// The prompt's number, from 1.
    pub turn: u32,
    /// The transcript's length in bytes when the prompt began: a fork at the turn before keeps
    /// exactly this much of it.
    pub transcript_offset: u64,
    /// The prompt's first line, cut to 80 characters, for listings.
    pub prompt: String,
}

/// Why a blob was not stored.
#[derive(Debug)]
pub(crate) enum PutError {
    /// Storing it would exceed the cap.
    OverCap,
    /// The disk said no.
    Io(CheckpointError),
}

/// The store of one session.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    cap: u64,
    used: u64,
}

impl Store {
    /// Opens (creating) `<session_dir>/checkpoints`, holding at most `cap` bytes of blobs.
    pub fn open(session_dir: &Path, cap: u64) -> Result<Self, CheckpointError> {
        let dir = session_dir.join("checkpoints");
        for sub in ["blobs", "records"] {
            let path = dir.join(sub);
            std::fs::create_dir_all(&path).map_err(|source| CheckpointError::io(&path, source))?;
        }
        let blobs = dir.join("blobs");
        let read =
            std::fs::read_dir(&blobs).map_err(|source| CheckpointError::io(&blobs, source))?;
        let used = read.flatten().filter_map(|entry| entry.metadata().ok()).map(|m| m.len()).sum();
        Ok(Self { dir, cap, used })
    }

    /// Records the workspace root the store's paths are relative to (for `agent undo` run from
    /// elsewhere).
    pub(crate) fn set_root(&self, root: &Path) -> Result<(), CheckpointError> {
        let path = self.dir.join("root");
        if std::fs::read(&path).is_ok_and(|old| old == root.as_os_str().as_encoded_bytes()) {
            return Ok(());
        }
        write_atomic(&path, root.as_os_str().as_encoded_bytes())
    }

    /// The workspace root the store's paths are relative to, when one was recorded.
    pub fn root(&self) -> Option<PathBuf> {
        let bytes = std::fs::read(self.dir.join("root")).ok()?;
        Some(PathBuf::from(String::from_utf8(bytes).ok()?))
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes of blobs stored.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The cap.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Stores `bytes` once, returning their hash; content already there costs nothing.
    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<String, PutError> {
        let hash = hex(&Sha256::digest(bytes));
        let path = self.dir.join("blobs").join(&hash);
        if path.exists() {
            return Ok(hash);
        }
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if self.used.saturating_add(len) > self.cap {
            return Err(PutError::OverCap);
        }
        write_atomic(&path, bytes).map_err(PutError::Io)?;
        self.used += len;
        Ok(hash)
    }

    /// The content of a blob.
    pub fn get(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CheckpointError::Corrupt { what: format!("blob name `{hash}`") });
        }
        let path = self.dir.join("blobs").join(hash);
        std::fs::read(&path).map_err(|source| CheckpointError::io(&path, source))
    }

    /// Every record, by id.
    pub fn records(&self) -> Result<Vec<Record>, CheckpointError> {
        let dir = self.dir.join("records");
        let read = std::fs::read_dir(&dir).map_err(|source| CheckpointError::io(&dir, source))?;
        let mut records = BTreeMap::new();
        for entry in read.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let text = std::fs::read(&path).map_err(|source| CheckpointError::io(&path, source))?;
            let record: Record = serde_json::from_slice(&text).map_err(|err| {
                CheckpointError::Corrupt { what: format!("{}: {err}", path.display()) }
            })?;
            records.insert(record.id, record);
        }
        Ok(records.into_values().collect())
    }

    /// One record.
    pub fn record(&self, id: u32) -> Result<Record, CheckpointError> {
        self.records()?
            .into_iter()
            .find(|record| record.id == id)
            .ok_or(CheckpointError::NoRecord { id })
    }

    /// The next record id.
    pub(crate) fn next_id(&self) -> Result<u32, CheckpointError> {
        Ok(self.records()?.last().map_or(1, |record| record.id + 1))
    }

    /// Writes a record (replacing one with its id).
    pub(crate) fn save(&self, record: &Record) -> Result<(), CheckpointError> {
        let path = self.dir.join("records").join(format!("{:06}.json", record.id));
        let text = serde_json::to_vec_pretty(record)
            .map_err(|err| CheckpointError::Corrupt { what: err.to_string() })?;
        write_atomic(&path, &text)
    }

    /// The turns begun so far.
    pub fn turns(&self) -> Result<Vec<TurnMark>, CheckpointError> {
        let path = self.dir.join("turns.jsonl");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(CheckpointError::io(&path, source)),
        };
        // A line a crash cut off is left out: the turn it began is simply not listed.
        Ok(text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect())
    }

    /// Appends a turn's mark.
    pub(crate) fn mark_turn(&self, mark: &TurnMark) -> Result<(), CheckpointError> {
        let path = self.dir.join("turns.jsonl");
        let mut line = serde_json::to_string(mark)
            .map_err(|err| CheckpointError::Corrupt { what: err.to_string() })?;
        line.push('\n');
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| CheckpointError::io(&path, source))?;
        file.write_all(line.as_bytes()).map_err(|source| CheckpointError::io(&path, source))
    }
}

/// Writes `bytes` to `path` through a temporary file in its directory and a rename, so a crash
/// leaves the old file or the new one, never half of one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp =
        tempfile::NamedTempFile::new_in(dir).map_err(|source| CheckpointError::io(dir, source))?;
    temp.write_all(bytes).map_err(|source| CheckpointError::io(path, source))?;
    temp.persist(path).map_err(|err| CheckpointError::io(path, err.error))?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_stored_once_and_the_cap_holds() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let mut store = Store::open(dir.path(), 10).unwrap_or_else(|err| panic!("{err}"));
        let first = store.put(b"hello").unwrap_or_else(|_| panic!("stored"));
        assert_eq!(store.put(b"hello").ok(), Some(first.clone()));
        assert_eq!(store.used(), 5);
        assert!(matches!(store.put(b"too long!"), Err(PutError::OverCap)));
        assert_eq!(store.get(&first).ok(), Some(b"hello".to_vec()));
        assert!(store.get("../../etc/passwd").is_err());
    }
}
