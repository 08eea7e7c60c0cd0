//! A patch worked out before anything is written: every section in order, against the files as
//! they are and as earlier sections of the same patch leave them (a file added then updated,
//! updated twice, deleted and added again). The result is each file's bytes before and after;
//! [`super::commit`] writes them.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use agent_core::{Boundary, ToolError, ToolErrorKind};

use super::{
    grammar::{FileOp, Patch},
    matching::{self, Mismatch, Rung},
};
use crate::{paths, text};

/// What happened to one section of the patch, for the observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Done {
    Added { shown: String, lines: usize, replaced: bool },
    Updated { shown: String, added: usize, removed: usize },
    Moved { from: String, to: String, added: usize, removed: usize },
    Deleted { shown: String, lines: usize },
}

/// A file the patch changes: what it holds now and what it will hold.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) path: PathBuf,
    pub(crate) shown: String,
    pub(crate) before: Option<Vec<u8>>,
    pub(crate) after: Option<Vec<u8>>,
    pub(crate) permissions: Option<std::fs::Permissions>,
    /// Where the content came from when a move put it here, for the preview.
    pub(crate) moved_from: Option<String>,
}

/// A patch worked out against the disk and not yet written.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) done: Vec<Done>,
    /// Every file whose bytes change, in path order.
    pub(crate) changes: Vec<Change>,
    /// (shown path, 1-based hunk, rung) for hunks that matched only loosely.
    pub(crate) loose: Vec<(String, usize, Rung)>,
}

/// Why a plan failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A hunk did not match the file's text (shown to the model with the closest text).
    Mismatch {
        shown: String,
        text: Option<String>,
        mismatch: Mismatch,
        wanted: Vec<String>,
        line: usize,
    },
    Tool(ToolError),
}

impl From<ToolError> for Failure {
    fn from(err: ToolError) -> Self {
        Failure::Tool(err)
    }
}

/// One path as the plan sees it: as it is on disk and as the sections so far leave it.
struct Slot {
    shown: String,
    original: Option<Vec<u8>>,
    permissions: Option<std::fs::Permissions>,
    current: Option<Vec<u8>>,
    moved_from: Option<String>,
}

/// Works out `patch` against the files under `ws`, writing nothing.
pub(crate) fn plan(ws: &dyn Boundary, patch: &Patch) -> Result<Plan, Failure> {
    let mut slots: BTreeMap<PathBuf, Slot> = BTreeMap::new();
    let mut done = Vec::new();
    let mut loose = Vec::new();
    for op in &patch.ops {
        let path = resolve(ws, op.path())?;
        load(ws, &mut slots, &path)?;
        match op {
            FileOp::Add { text, .. } => {
                let slot = slot(&mut slots, &path);
                let replaced = slot.current.is_some();
                let bytes = match &slot.current {
                    // An existing file keeps its encoding and line endings, as write_file does.
                    Some(bytes) => match text::decode(bytes) {
                        Ok((old, encoding)) => {
                            text::encode(&text::Eol::detect(&old).apply(text), encoding)
                        }
                        Err(_) => text.as_bytes().to_vec(),
                    },
                    None => text.as_bytes().to_vec(),
                };
                slot.current = Some(bytes);
                slot.moved_from = None;
                let lines = text::line_count(text);
                done.push(Done::Added { shown: slot.shown.clone(), lines, replaced });
            }
            FileOp::Delete { path: given } => {
                refuse_symlink(ws, given, "delete")?;
                let slot = slot(&mut slots, &path);
                let Some(bytes) = slot.current.take() else {
                    return Err(missing(ws, given, &path, "delete").into());
                };
                let lines = text::decode(&bytes).map_or(0, |(text, _)| text::line_count(&text));
                done.push(Done::Deleted { shown: slot.shown.clone(), lines });
            }
            FileOp::Update { path: given, move_to, hunks } => {
                let source = slot(&mut slots, &path);
                let Some(bytes) = &source.current else {
                    return Err(missing(ws, given, &path, "update").into());
                };
                let shown = source.shown.clone();
                let (old_text, encoding) = text::decode(bytes).map_err(|why| {
                    ToolError::new(
                        ToolErrorKind::BinaryFile,
                        format!("{shown} is not editable text ({}); the patch was not applied and no file was changed", why.describe()),
                    )
                })?;
                let applied = matching::apply(&old_text, hunks).map_err(|mismatch| {
                    let hunk = &hunks[mismatch.hunk];
                    let wanted = match &mismatch.context {
                        Some(context) => vec![context.clone()],
                        None => hunk.old.clone(),
                    };
                    let text = ws.secret(&path).is_none().then(|| old_text.clone());
                    Failure::Mismatch {
                        shown: shown.clone(),
                        text,
                        mismatch,
                        wanted,
                        line: hunk.line,
                    }
                })?;
                loose.extend(
                    applied.loose.iter().map(|(hunk, rung)| (shown.clone(), hunk + 1, *rung)),
                );
                let (added, removed) = crate::write_file::line_changes(&old_text, &applied.text);
                let new_bytes = text::encode(&applied.text, encoding);
                let permissions = source.permissions.clone();
                match move_to {
                    Some(to) if resolve(ws, to)? != path => {
                        refuse_symlink(ws, given, "move")?;
                        let dest = resolve(ws, to)?;
                        slot(&mut slots, &path).current = None;
                        load(ws, &mut slots, &dest)?;
                        let target = slot(&mut slots, &dest);
                        target.current = Some(new_bytes);
                        // A moved file keeps its permission bits (a script stays executable).
                        target.permissions = permissions.or(target.permissions.take());
                        target.moved_from = Some(shown.clone());
                        done.push(Done::Moved {
                            from: shown,
                            to: target.shown.clone(),
                            added,
                            removed,
                        });
                    }
                    _ => {
                        slot(&mut slots, &path).current = Some(new_bytes);
                        done.push(Done::Updated { shown, added, removed });
                    }
                }
            }
        }
    }
    let changes = slots
        .into_iter()
        .filter(|(_, slot)| slot.original != slot.current)
        .map(|(path, slot)| Change {
            path,
            shown: slot.shown,
            before: slot.original,
            after: slot.current,
            permissions: slot.permissions,
            moved_from: slot.moved_from,
        })
        .collect();
    Ok(Plan { done, changes, loose })
}

fn slot<'a>(slots: &'a mut BTreeMap<PathBuf, Slot>, path: &Path) -> &'a mut Slot {
    // `load` put every path the plan touches into the map first.
    slots.entry(path.to_path_buf()).or_insert_with(|| Slot {
        shown: path.display().to_string(),
        original: None,
        permissions: None,
        current: None,
        moved_from: None,
    })
}

fn resolve(ws: &dyn Boundary, given: &str) -> Result<PathBuf, ToolError> {
    ws.resolve_for_write(given.trim()).map_err(|err| {
        ToolError::new(
            err.kind,
            format!("{}; the patch was not applied and no file was changed", err.message),
        )
    })
}

/// Reads `path` into the plan unless an earlier section already did.
fn load(
    ws: &dyn Boundary,
    slots: &mut BTreeMap<PathBuf, Slot>,
    path: &Path,
) -> Result<(), ToolError> {
    if slots.contains_key(path) {
        return Ok(());
    }
    let shown = paths::display(ws.root(), path);
    let (original, permissions) = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!(
                    "{shown} is a directory, and a patch changes files only; the patch was not applied and no file was changed"
                ),
            ));
        }
        Ok(meta) => {
            let bytes =
                std::fs::read(path).map_err(|err| io_failure(&format!("read {shown}"), &err))?;
            (Some(bytes), Some(meta.permissions()))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => (None, None),
        Err(err) => return Err(io_failure(&format!("inspect {shown}"), &err)),
    };
    let current = original.clone();
    slots.insert(
        path.to_path_buf(),
        Slot { shown, original, permissions, current, moved_from: None },
    );
    Ok(())
}

/// Deleting or moving away a symbolic link would act on the file it points to, which the patch
/// does not name: refused.
fn refuse_symlink(ws: &dyn Boundary, given: &str, doing: &str) -> Result<(), ToolError> {
    let named = ws.root().join(given.trim());
    if std::fs::symlink_metadata(&named).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!(
                "{} is a symbolic link; a patch does not {doing} links (use bash). The patch was not applied and no file was changed",
                given.trim()
            ),
        ));
    }
    Ok(())
}

fn missing(ws: &dyn Boundary, given: &str, path: &Path, doing: &str) -> ToolError {
    let err = paths::not_found(ws.root(), given.trim(), path);
    ToolError::new(
        err.kind,
        format!(
            "cannot {doing} {}: {}. The patch was not applied and no file was changed",
            given.trim(),
            err.message
        ),
    )
}

pub(crate) fn io_failure(doing: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(
        ToolErrorKind::ToolError,
        format!("could not {doing}: {err}; the patch was not applied and no file was changed"),
    )
}
