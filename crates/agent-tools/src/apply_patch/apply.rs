//! A patch as one transaction: every section is worked out against the files as they are (and as
//! earlier sections of the same patch leave them) before anything is written, then the writes are
//! staged and committed so that a failure at any point leaves every file as it was.
//!
//! Staging writes each new content to a temporary file in its target's directory and keeps a hard
//! link to each file that will be replaced or deleted (a copy where links are refused). The commit
//! is then renames and unlinks only, which need no disk space; if one fails, the ones made are
//! undone from the links. Only after every step succeeded are the links removed.

use std::{
    collections::BTreeMap,
    io::Write as _,
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
    permissions: Option<std::fs::Permissions>,
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

fn io_failure(doing: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(
        ToolErrorKind::ToolError,
        format!("could not {doing}: {err}; the patch was not applied and no file was changed"),
    )
}

/// One step of the commit, recorded so it can be undone.
enum Step {
    /// `path` now holds the new content; `backup` holds the old one, if there was one.
    Replaced { path: PathBuf, backup: Option<PathBuf> },
    /// `path` was removed; `backup` holds it.
    Removed { path: PathBuf, backup: PathBuf },
}

/// Writes `plan`, all of it or nothing.
pub(crate) fn commit(plan: &Plan) -> Result<(), ToolError> {
    let mut created_dirs = Vec::new();
    let staged = stage(plan, &mut created_dirs);
    let (temps, backups) = match staged {
        Ok(staged) => staged,
        Err(err) => {
            remove_dirs(&created_dirs);
            return Err(err);
        }
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut failed = None;
    let mut temps = temps.into_iter();
    for (change, backup) in plan.changes.iter().zip(&backups) {
        let backup = backup.as_ref().map(|b| b.to_path_buf());
        let result = match &change.after {
            Some(_) => match temps.next().flatten() {
                Some(temp) => fault()
                    .and_then(|()| temp.persist(&change.path).map_err(|err| err.error))
                    .map(|_| {
                        steps.push(Step::Replaced { path: change.path.clone(), backup });
                    }),
                None => Err(std::io::Error::other("internal error: a staged file is missing")),
            },
            None => {
                let _ = temps.next();
                match backup {
                    Some(backup) => {
                        fault().and_then(|()| std::fs::remove_file(&change.path)).map(|()| {
                            steps.push(Step::Removed { path: change.path.clone(), backup });
                        })
                    }
                    None => {
                        Err(std::io::Error::other("internal error: a deleted file has no backup"))
                    }
                }
            }
        };
        if let Err(err) = result {
            failed = Some((change.shown.clone(), err));
            break;
        }
    }
    if let Some((shown, err)) = failed {
        let undone = undo(steps);
        // The staged files not yet renamed go first, so the directories made for them are empty.
        drop(temps);
        remove_dirs(&created_dirs);
        let state = if undone {
            "every change already made was undone, so no file was changed"
        } else {
            "undoing the changes already made failed too; check the files named in the patch"
        };
        return Err(ToolError::new(
            ToolErrorKind::ToolError,
            format!("could not write {shown}: {err}; the patch was not applied: {state}"),
        ));
    }
    // The links to the old contents go last; one left behind is a stray file, not a lost one.
    drop(backups);
    Ok(())
}

type Staged = (Vec<Option<tempfile::TempPath>>, Vec<Option<tempfile::TempPath>>);

/// The new contents in temporary files beside their targets, and a link to (or a copy of) every
/// file that will be replaced or removed.
fn stage(plan: &Plan, created_dirs: &mut Vec<PathBuf>) -> Result<Staged, ToolError> {
    let mut temps = Vec::with_capacity(plan.changes.len());
    let mut backups = Vec::with_capacity(plan.changes.len());
    for change in &plan.changes {
        let fail = |doing: &str, err: &std::io::Error| {
            io_failure(&format!("{doing} {}", change.shown), err)
        };
        let dir = change.path.parent().unwrap_or(Path::new("/"));
        temps.push(match &change.after {
            Some(bytes) => {
                create_dirs(dir, created_dirs)
                    .map_err(|err| fail("create the directories of", &err))?;
                let temp = write_temp(dir, bytes, change.permissions.clone())
                    .map_err(|err| fail("stage", &err))?;
                Some(temp)
            }
            None => None,
        });
        backups.push(match &change.before {
            Some(before) => Some(
                backup(&change.path, before)
                    .map_err(|err| fail("keep the old content of", &err))?,
            ),
            None => None,
        });
    }
    Ok((temps, backups))
}

fn write_temp(
    dir: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<tempfile::TempPath> {
    fault()?;
    let mut temp = tempfile::Builder::new().prefix(".agent-patch-").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    if let Some(permissions) = permissions.or_else(default_permissions) {
        temp.as_file().set_permissions(permissions)?;
    }
    Ok(temp.into_temp_path())
}

/// New files get `rw-r--r--`, as write_file gives them.
#[cfg(unix)]
fn default_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    Some(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions() -> Option<std::fs::Permissions> {
    None
}

/// A second name for `path`'s current content, checked to still be what the plan read: a file
/// changed or removed since then stops the patch before anything is written.
fn backup(path: &Path, expected: &[u8]) -> std::io::Result<tempfile::TempPath> {
    fault()?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let builder = {
        let mut builder = tempfile::Builder::new();
        builder.prefix(".agent-patch-old-");
        builder
    };
    let linked = builder.make_in(dir, |name| std::fs::hard_link(path, name));
    let backup = match linked {
        Ok(file) => file.into_temp_path(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(std::io::Error::new(
                err.kind(),
                "the file vanished while the patch was being applied",
            ));
        }
        // A file system without hard links: a copy of the content the plan read.
        Err(_) => write_temp(dir, expected, std::fs::metadata(path).ok().map(|m| m.permissions()))?,
    };
    if std::fs::read(&backup)? != expected {
        return Err(std::io::Error::other("the file changed while the patch was being applied"));
    }
    Ok(backup)
}

/// Creates `dir` and its missing ancestors, recording each one made (outermost first).
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = dir;
    while !at.exists() {
        missing.push(at.to_path_buf());
        match at.parent() {
            Some(parent) => at = parent,
            None => break,
        }
    }
    for dir in missing.into_iter().rev() {
        fault()?;
        std::fs::create_dir(&dir)?;
        created.push(dir);
    }
    Ok(())
}

/// Removes the directories the staging made, innermost first, where they are empty again.
fn remove_dirs(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Undoes `steps`, last first; false when any could not be undone.
fn undo(steps: Vec<Step>) -> bool {
    let mut all = true;
    for step in steps.into_iter().rev() {
        let result = match step {
            Step::Replaced { path, backup: Some(backup) } | Step::Removed { path, backup } => {
                std::fs::rename(&backup, &path)
            }
            Step::Replaced { path, backup: None } => std::fs::remove_file(&path),
        };
        all &= result.is_ok();
    }
    all
}

#[cfg(not(test))]
fn fault() -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Test-only: the number of file-system steps that succeed before one fails.
    pub(crate) static FAIL_AFTER: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
fn fault() -> std::io::Result<()> {
    FAIL_AFTER.with(|left| match left.get() {
        Some(0) => Err(std::io::Error::other("injected failure")),
        Some(n) => {
            left.set(Some(n - 1));
            Ok(())
        }
        None => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::apply_patch::grammar;

    /// Every file under `root` with its bytes.
    fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for entry in ignore::WalkBuilder::new(root).hidden(false).build().flatten() {
            if entry.path().is_file() {
                out.insert(
                    entry.path().to_path_buf(),
                    std::fs::read(entry.path()).unwrap_or_default(),
                );
            }
        }
        out
    }

    const PATCH: &str = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: new/dir/b.txt\n+b\n*** Delete File: c.txt\n*** Update File: d.txt\n*** Move to: e.txt\n@@\n-d\n+D\n*** End Patch";

    fn workspace() -> (tempfile::TempDir, agent_exec::Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [("a.txt", "a\n"), ("c.txt", "c\n"), ("d.txt", "d\n")] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let ws = agent_exec::Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn a_failure_at_any_step_leaves_every_file_as_it_was() {
        let mut step = 0;
        loop {
            let (dir, ws) = workspace();
            let before = files(dir.path());
            let plan = plan(&ws, &grammar::parse(PATCH).unwrap()).unwrap();
            FAIL_AFTER.with(|left| left.set(Some(step)));
            let result = commit(&plan);
            FAIL_AFTER.with(|left| left.set(None));
            if result.is_ok() {
                // Every step has been made to fail once; the last run went through.
                assert!(step > 5, "the commit has several steps");
                assert_eq!(std::fs::read_to_string(dir.path().join("e.txt")).unwrap(), "D\n");
                assert_eq!(files(dir.path()).len(), 3, "no temporary or backup file is left");
                break;
            }
            assert_eq!(files(dir.path()), before, "failure at step {step}: {result:?}");
            assert!(
                !dir.path().join("new").exists(),
                "failure at step {step}: the new directories are gone"
            );
            step += 1;
        }
    }

    #[test]
    fn a_file_that_vanishes_after_the_plan_stops_the_commit() {
        let (dir, ws) = workspace();
        let plan = plan(&ws, &grammar::parse(PATCH).unwrap()).unwrap();
        std::fs::remove_file(dir.path().join("c.txt")).unwrap();
        let before = files(dir.path());
        let err = commit(&plan).unwrap_err();
        assert!(err.message.contains("vanished"), "{}", err.message);
        assert_eq!(files(dir.path()), before);
        // And one that changed.
        std::fs::write(dir.path().join("c.txt"), "c\n").unwrap();
        std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
        let before = files(dir.path());
        let err = commit(&plan).unwrap_err();
        assert!(err.message.contains("changed while"), "{}", err.message);
        assert_eq!(files(dir.path()), before);
    }
}
