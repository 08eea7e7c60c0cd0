//! Writing a planned patch as one transaction, so that a failure at any point leaves every file
//! as it was.
//!
//! Staging writes each new content to a temporary file in its target's directory and keeps a hard
//! link to each file that will be replaced or deleted (a copy where links are refused), checked to
//! still hold what the plan read. The commit is then renames and unlinks only, which need no disk
//! space; if one fails, the ones made are undone from the links, last first. Only after every step
//! succeeded are the links removed.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
};

use agent_core::{ToolError, ToolErrorKind};

use super::plan::{Plan, io_failure};

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
    use crate::apply_patch::{grammar, plan::plan};

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
