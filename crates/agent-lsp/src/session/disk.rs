//! Which open documents changed on disk behind the session's back: after a command, the files
//! the servers have open are compared with the text they were last sent, so a file a command
//! rewrote is checked like an edited one (docs/lsp.md, "Files a command changed").
//!
//! A `stat` per open document decides; the content is read only when the metadata moved, or when
//! the file was written so shortly before it was read that a later write could carry the same
//! modification time (git's "racily clean" case: timestamps have a granularity).

use std::{
    io,
    os::unix::fs::MetadataExt as _,
    path::Path,
    sync::PoisonError,
    time::{Duration, SystemTime},
};

use agent_core::EditedFile;

use super::LspSession;

/// A write this close before the read may share its modification time with a later write.
const RACY: Duration = Duration::from_secs(2);

/// What the file on disk looked like when its text was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
    /// When the text was read.
    read_at: SystemTime,
}

impl Stamp {
    /// Whether `meta` shows the same file as when it was read, and the read was late enough
    /// after the last write for the modification time to prove that no write came since.
    fn unchanged(&self, meta: &std::fs::Metadata) -> bool {
        let modified = meta.modified().ok();
        let settled = modified
            .and_then(|at| self.read_at.duration_since(at).ok())
            .is_some_and(|gap| gap > RACY);
        settled && self.len == meta.len() && self.modified == modified && self.inode == meta.ino()
    }
}

/// The file's text and its stamp; the metadata is taken first, so a write between the two makes
/// the stamp look stale (a read too many, never a change missed).
pub(super) fn read(path: &Path) -> io::Result<(String, Stamp)> {
    let meta = std::fs::metadata(path)?;
    let read_at = SystemTime::now();
    let text = std::fs::read_to_string(path)?;
    let stamp =
        Stamp { len: meta.len(), modified: meta.modified().ok(), inode: meta.ino(), read_at };
    Ok((text, stamp))
}

impl LspSession {
    /// The open documents whose file no longer holds the text the server has: changed, or
    /// deleted. A document busy with an edit's own work is left for the next look.
    pub(super) fn changed_on_disk(&self) -> Vec<EditedFile> {
        let docs: Vec<_> = {
            let docs = self.inner.docs.lock().unwrap_or_else(PoisonError::into_inner);
            docs.iter().map(|(path, doc)| (path.clone(), doc.clone())).collect()
        };
        let mut changed = Vec::new();
        for (path, doc) in docs {
            let Ok(mut doc) = doc.try_lock() else { continue };
            if doc.generation == 0 || doc.known.is_none() {
                continue;
            }
            let meta = match std::fs::metadata(&path) {
                Ok(meta) => meta,
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    changed.push(EditedFile { path, before: None, deleted: true });
                    continue;
                }
                Err(_) => continue,
            };
            if doc.stamp.is_some_and(|stamp| stamp.unchanged(&meta)) {
                continue;
            }
            match read(&path) {
                Ok((text, _)) if text != doc.text => {
                    changed.push(EditedFile::changed(path, None));
                }
                // The same text: remember the newer look, so the next command needs no read.
                Ok((_, stamp)) => doc.stamp = Some(stamp),
                Err(_) => {}
            }
        }
        changed.sort_by(|a, b| a.path.cmp(&b.path));
        changed
    }
}
