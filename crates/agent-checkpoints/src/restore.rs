//! Undo: putting back what a record's paths held before, but only where the workspace still holds
//! what the turn left. A path changed since (by the user, an editor, another process) is a
//! conflict, shown as a diff and left alone unless forced. The undo is itself a record, so undoing
//! it again is a redo.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Component, Path, PathBuf},
};

use agent_sandbox::writes::{EntryKind, EntryMeta, Skipped};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{
    CheckpointError,
    store::{Change, FileState, PutError, Record, RecordKind, Store, write_atomic},
};

/// How a diff in a conflict is cut: past this many characters the rest is left out.
const DIFF_CAP: usize = 4_000;

/// How to undo.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UndoOptions {
    /// Say what would happen; change nothing and record nothing.
    pub dry_run: bool,
    /// Restore conflicting paths too.
    pub force: bool,
}

/// A path that changed after the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The path, relative to the workspace root.
    pub path: PathBuf,
    /// From what the turn left to what is there now (unified, cut at 4,000 characters).
    pub diff: String,
    /// Whether `--force` restored it anyway.
    pub forced: bool,
}

/// What an undo did (or, dry, would do), path by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UndoReport {
    /// The record undone.
    pub record: u32,
    /// Its turn.
    pub turn: u32,
    /// Paths given back their earlier content or mode (or recreated).
    pub restored: Vec<PathBuf>,
    /// Paths the turn created, removed again.
    pub removed: Vec<PathBuf>,
    /// `(now, back_to)`: renames reversed (also counted in `removed` and `restored`).
    pub renamed_back: Vec<(PathBuf, PathBuf)>,
    /// Paths already as they were before the turn.
    pub unchanged: Vec<PathBuf>,
    /// Paths changed since the turn.
    pub conflicts: Vec<Conflict>,
    /// What the turn changed that its checkpoint could not cover.
    pub not_covered: Vec<Skipped>,
    /// The record of this undo (undo it to redo), unless dry or nothing was done.
    pub recorded_as: Option<u32>,
}

/// Undoes record `id` in the workspace `root`.
pub fn undo(
    store: &mut Store,
    root: &Path,
    id: u32,
    options: UndoOptions,
) -> Result<UndoReport, CheckpointError> {
    let mut record = store.record(id)?;
    let mut report = UndoReport {
        record: id,
        turn: record.turn,
        not_covered: record.not_covered.clone(),
        ..UndoReport::default()
    };
    let mut plan = Vec::new();
    for change in &record.changes {
        if !safe(&change.path) {
            return Err(CheckpointError::Corrupt {
                what: format!("record {id} names the path {}", change.path.display()),
            });
        }
        let path = root.join(&change.path);
        let now = state_now(&path)?;
        if now == change.before {
            report.unchanged.push(change.path.clone());
        } else if now == change.after {
            plan.push((change, now));
        } else {
            let diff = conflict_diff(store, &path, &change.after, &now);
            report.conflicts.push(Conflict {
                path: change.path.clone(),
                diff,
                forced: options.force,
            });
            if options.force {
                plan.push((change, now));
            }
        }
    }
    // Directories come back before the files in them, and created ones go after theirs.
    plan.sort_by_key(|(change, now)| {
        let phase = match (&change.before, now) {
            (FileState::Dir { .. }, _) => 0,
            (FileState::Absent, FileState::Dir { .. }) => 2,
            _ => 1,
        };
        let depth = change.path.components().count();
        (phase, if phase == 2 { usize::MAX - depth } else { depth }, change.path.clone())
    });
    let mut inverse = Vec::new();
    for (change, now) in plan {
        if matches!(change.before, FileState::Absent) {
            report.removed.push(change.path.clone());
        } else {
            report.restored.push(change.path.clone());
        }
        if options.dry_run {
            continue;
        }
        // What is there now is kept too, so the undo can be undone (a redo).
        let now = keep_now(store, &root.join(&change.path), now);
        apply(store, root, &change.path, &change.before)?;
        inverse.push(Change {
            path: change.path.clone(),
            before: now,
            after: change.before.clone(),
        });
    }
    report.renamed_back = renames(&record, &report);
    if options.dry_run || inverse.is_empty() {
        return Ok(report);
    }
    let undo_id = store.next_id()?;
    inverse.sort_by(|a, b| a.path.cmp(&b.path));
    let undo = Record {
        id: undo_id,
        turn: record.turn,
        kind: RecordKind::Undo { of: id },
        changes: inverse,
        not_covered: Vec::new(),
        undone_by: None,
    };
    store.save(&undo)?;
    // A record with conflicts left alone still stands: undoing it again (with --force, or after
    // the user sorted the conflict out) finishes the job, the paths already back being unchanged.
    if report.conflicts.iter().all(|conflict| conflict.forced) {
        record.undone_by = Some(undo_id);
        store.save(&record)?;
    }
    // Undoing an undo (a redo) makes the record it undid stand again.
    if let RecordKind::Undo { of } = record.kind
        && let Ok(mut original) = store.record(of)
    {
        original.undone_by = None;
        store.save(&original)?;
    }
    report.recorded_as = Some(undo_id);
    Ok(report)
}

/// A record's paths are relative and plain, and never inside `.git`.
fn safe(path: &Path) -> bool {
    path.components().all(|c| matches!(c, Component::Normal(_)))
        && path.components().next().is_some_and(|first| first.as_os_str() != ".git")
}

/// What `path` holds now, hashed but not stored.
fn state_now(path: &Path) -> Result<FileState, CheckpointError> {
    let meta = match EntryMeta::of(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(FileState::Absent),
        Err(source) => return Err(CheckpointError::io(path, source)),
    };
    Ok(match meta.kind {
        EntryKind::Dir => FileState::Dir { mode: meta.mode },
        EntryKind::Symlink => FileState::Symlink {
            target: std::fs::read_link(path).map_err(|source| CheckpointError::io(path, source))?,
        },
        EntryKind::File | EntryKind::Other => {
            let bytes = std::fs::read(path).map_err(|source| CheckpointError::io(path, source))?;
            let hash = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
            FileState::File { hash, mode: meta.mode, size: meta.size }
        }
    })
}

/// Stores what a file holds now, so the undo's own record can put it back; when that would exceed
/// the cap, the state is still recorded and a redo of that path reports a conflict-free failure.
fn keep_now(store: &mut Store, path: &Path, now: FileState) -> FileState {
    if let FileState::File { .. } = now
        && let Ok(bytes) = std::fs::read(path)
        && let Err(PutError::OverCap | PutError::Io(_)) = store.put(&bytes)
    {
        tracing::warn!(path = %path.display(), "the undo could not keep this file's content for a redo");
    }
    now
}

/// Puts `state` at `rel`.
fn apply(store: &Store, root: &Path, rel: &Path, state: &FileState) -> Result<(), CheckpointError> {
    let path = root.join(rel);
    let io = |source| CheckpointError::io(&path, source);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
        // A directory the turn swapped for a symlink must not lead the restore out of the root.
        let inside =
            parent.canonicalize().map_err(io)?.starts_with(root.canonicalize().map_err(io)?);
        if !inside {
            return Err(CheckpointError::Corrupt {
                what: format!("{} now leads outside the workspace", rel.display()),
            });
        }
    }
    let current = EntryMeta::of(&path).ok();
    let remove_current = |path: &Path| -> std::io::Result<()> {
        match current.map(|meta| meta.kind) {
            Some(EntryKind::Dir) => std::fs::remove_dir(path),
            Some(_) => std::fs::remove_file(path),
            None => Ok(()),
        }
    };
    match state {
        FileState::Absent => remove_current(&path).map_err(io),
        FileState::Dir { mode } => {
            if current.is_some_and(|meta| meta.kind != EntryKind::Dir) {
                remove_current(&path).map_err(io)?;
            }
            std::fs::create_dir_all(&path).map_err(io)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).map_err(io)
        }
        FileState::Symlink { target } => {
            remove_current(&path).map_err(io)?;
            std::os::unix::fs::symlink(target, &path).map_err(io)
        }
        FileState::File { hash, mode, .. } => {
            let bytes = store.get(hash)?;
            if current.is_some_and(|meta| meta.kind == EntryKind::Dir) {
                remove_current(&path).map_err(io)?;
            }
            write_atomic(&path, &bytes)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).map_err(io)
        }
    }
}

/// The diff from what the turn left to what is there now.
fn conflict_diff(store: &Store, path: &Path, after: &FileState, now: &FileState) -> String {
    let text = |state: &FileState, from_disk: bool| -> Option<String> {
        match state {
            FileState::Absent => Some(String::new()),
            FileState::File { hash, .. } => {
                let bytes =
                    if from_disk { std::fs::read(path).ok()? } else { store.get(hash).ok()? };
                String::from_utf8(bytes).ok()
            }
            FileState::Dir { .. } | FileState::Symlink { .. } => None,
        }
    };
    let (Some(left), Some(now_text)) = (text(after, false), text(now, true)) else {
        return format!("the turn left {}; it is now {}", describe(after), describe(now));
    };
    if left == now_text {
        return format!(
            "same content; the turn left {}, it is now {}",
            describe(after),
            describe(now)
        );
    }
    let diff = similar::TextDiff::from_lines(&left, &now_text)
        .unified_diff()
        .header("left by the turn", "now")
        .to_string();
    if diff.len() <= DIFF_CAP {
        return diff;
    }
    let mut end = DIFF_CAP;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} more characters)\n", &diff[..end], diff.len() - end)
}

fn describe(state: &FileState) -> String {
    match state {
        FileState::Absent => "absent".to_owned(),
        FileState::File { size, mode, .. } => format!("a file of {size} bytes, mode {mode:o}"),
        FileState::Dir { mode } => format!("a directory, mode {mode:o}"),
        FileState::Symlink { target } => format!("a symlink to {}", target.display()),
    }
}

/// Renames the turn made that this undo reversed: a path it removed whose content it restored to
/// a path the turn had deleted.
fn renames(record: &Record, report: &UndoReport) -> Vec<(PathBuf, PathBuf)> {
    let mut pairs = Vec::new();
    for created in record.changes.iter().filter(|c| report.removed.contains(&c.path)) {
        let FileState::File { hash, .. } = &created.after else { continue };
        let back = record.changes.iter().find(|c| {
            report.restored.contains(&c.path)
                && matches!(&c.after, FileState::Absent)
                && matches!(&c.before, FileState::File { hash: old, .. } if old == hash)
        });
        if let Some(back) = back {
            pairs.push((created.path.clone(), back.path.clone()));
        }
    }
    pairs
}
