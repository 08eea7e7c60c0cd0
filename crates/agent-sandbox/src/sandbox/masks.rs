//! The two masks bind-mounted over secrets: an empty file and an empty directory, both mode 000.
//!
//! One pair serves every command of the process. Making a fresh pair per command cost two
//! directories created and removed per spawn, and on ext4 mounted with `discard` (as `/tmp` is
//! on many cloud disks) each `rmdir` frees a block with a synchronous discard: `perf` showed the
//! agent in `submit_bio_wait` under `MaskDir::drop`, 0.4–5 ms per command, which was the whole
//! difference between `sandbox.overhead.workspace_write` and `.workspace_write_git`.
//!
//! The shared pair lives in `agent-mask-<pid>-…` in the temp dir, is checked before each use
//! (a temp cleaner may remove it; a changed or missing mask is made again), and directories
//! left by processes that are gone are removed when the next process makes its own. A command
//! whose rules let it write where the shared pair lives (a writable root holding the temp dir)
//! gets a fresh pair of its own instead, so that no command can change what a later one sees
//! in place of a secret.

use std::{
    fs, io,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    sync::{Mutex, PoisonError},
};

use super::{FsRules, Grant};

/// The directory holding a fresh pair of masks, removed on drop.
///
/// The masks are removed by name before the directory itself: the empty directory is mode 000,
/// and a user without `CAP_DAC_OVERRIDE` cannot list it, so the recursive removal `TempDir` does
/// would fail and leave one directory in the temp dir behind.
#[derive(Debug)]
pub(crate) struct MaskDir(tempfile::TempDir);

impl Drop for MaskDir {
    fn drop(&mut self) {
        // Errors are left to `TempDir`'s own removal, which runs next and ignores them too.
        remove_masks(self.0.path());
    }
}

impl MaskDir {
    /// A fresh pair in a new directory of the temp dir, named with `prefix`.
    pub(crate) fn create(prefix: &str) -> io::Result<Self> {
        let dir = MaskDir(tempfile::Builder::new().prefix(prefix).tempdir()?);
        let (file, empty) = paths(dir.0.path());
        fs::write(&file, b"")?;
        fs::create_dir(&empty)?;
        for path in [&file, &empty] {
            fs::set_permissions(path, fs::Permissions::from_mode(0o000))?;
        }
        Ok(dir)
    }

    /// The directory holding the pair.
    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }
}

/// The mask file and the mask directory inside `dir`.
pub(crate) fn paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("file"), dir.join("dir"))
}

fn remove_masks(dir: &Path) {
    let (file, empty) = paths(dir);
    let _ = fs::remove_file(file);
    let _ = fs::remove_dir(empty);
}

/// Where the masks of one command live.
#[derive(Debug)]
pub(crate) enum Masks {
    /// The process's shared pair in this directory.
    Shared(PathBuf),
    /// A pair of the command's own, kept until the command is gone.
    Fresh(MaskDir),
}

impl Masks {
    /// The directory holding the pair.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Masks::Shared(dir) => dir,
            Masks::Fresh(dir) => dir.path(),
        }
    }

    /// The pair to keep alive beside the process (`None` for the shared one, which outlives it).
    pub(crate) fn into_owned(self) -> Option<MaskDir> {
        match self {
            Masks::Shared(_) => None,
            Masks::Fresh(dir) => Some(dir),
        }
    }
}

/// The masks for a command under `rules`: the shared pair unless the rules could write to it.
pub(crate) fn for_rules(rules: &FsRules) -> io::Result<Masks> {
    let shared = shared()?;
    let writable = rules
        .iter()
        .filter(|(_, grant)| matches!(grant, Grant::Write | Grant::WriteNoExecute))
        .any(|(root, _)| {
            shared.starts_with(root) || canonical(root).is_some_and(|r| shared.starts_with(r))
        });
    if writable {
        return MaskDir::create("agent-mask-").map(Masks::Fresh);
    }
    Ok(Masks::Shared(shared))
}

fn canonical(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok()
}

/// The shared pair's directory, made (again) when it is missing or no longer holds two empty
/// mode-000 masks.
fn shared() -> io::Result<PathBuf> {
    static SHARED: Mutex<Option<PathBuf>> = Mutex::new(None);
    current(&SHARED)
}

/// The pair kept in `slot`, checked, and made again when it is not intact.
fn current(slot: &Mutex<Option<PathBuf>>) -> io::Result<PathBuf> {
    let mut shared = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(dir) = shared.as_ref().filter(|dir| intact(dir)) {
        return Ok(dir.clone());
    }
    let first = shared.is_none();
    let pid = std::process::id();
    let made = MaskDir::create(&format!("agent-mask-{pid}-"))?;
    // Kept for the life of the process; `sweep` removes it once the process is gone.
    let dir = made.0.path().canonicalize()?;
    std::mem::forget(made);
    if first {
        sweep(dir.parent().unwrap_or(Path::new("/")));
    }
    *shared = Some(dir.clone());
    Ok(dir)
}

/// Whether `dir` still holds an empty mode-000 file and a mode-000 directory (an `lstat` each).
fn intact(dir: &Path) -> bool {
    let (file, empty) = paths(dir);
    let sealed = |meta: &fs::Metadata| meta.permissions().mode() & 0o7777 == 0;
    let file_ok =
        fs::symlink_metadata(file).is_ok_and(|m| m.is_file() && m.len() == 0 && sealed(&m));
    file_ok && fs::symlink_metadata(empty).is_ok_and(|m| m.is_dir() && sealed(&m))
}

/// Removes the shared mask directories in `temp` of processes that no longer exist.
pub(crate) fn sweep(temp: &Path) {
    let Ok(entries) = fs::read_dir(temp) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| name.strip_prefix("agent-mask-")) else {
            continue;
        };
        // Fresh pairs (`agent-mask-XXXXXX`) have no pid and belong to a live command.
        let Some((owner, _)) = rest.split_once('-') else { continue };
        if owner.parse::<u32>().is_err() || Path::new("/proc").join(owner).exists() {
            continue;
        }
        remove_masks(&entry.path());
        let _ = fs::remove_dir(entry.path());
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::{FsRules, Grant, Masks};

    /// One `check` per case: the masks a command under `rules` gets are shared or its own.
    fn check(rules: &FsRules, shared: bool) {
        let masks = super::for_rules(rules).expect("masks");
        assert_eq!(matches!(masks, Masks::Shared(_)), shared, "{masks:?}");
        assert!(super::intact(masks.path()));
    }

    #[test]
    fn commands_share_one_pair_unless_they_could_write_to_it() {
        let mut read_only = FsRules::default();
        read_only.grant("/", Grant::ReadExecute);
        check(&read_only, true);
        let mut writable_temp = read_only.clone();
        writable_temp.grant(std::env::temp_dir(), Grant::Write);
        check(&writable_temp, false);
    }

    #[test]
    fn a_changed_or_removed_pair_is_made_again() {
        // A slot of its own: the process's pair is in use by the other tests' commands.
        let slot = std::sync::Mutex::new(None);
        let first = super::current(&slot).expect("shared");
        assert_eq!(super::current(&slot).expect("shared"), first, "an intact pair is kept");
        let (file, _) = super::paths(&first);
        // As a temp cleaner or a careless user would: the mask loses its seal.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&file, b"not empty").unwrap();
        let second = super::current(&slot).expect("shared");
        assert_ne!(first, second);
        assert!(super::intact(&second));
        std::fs::remove_dir(super::paths(&second).1).unwrap();
        let third = super::current(&slot).expect("shared");
        assert_ne!(second, third, "a removed mask is made again");
        assert!(super::intact(&third));
    }

    #[test]
    fn the_pairs_of_dead_processes_are_swept() {
        let temp = tempfile::tempdir().unwrap();
        // No process has pid 4194304 + 1 (above the kernel's maximum).
        let dead = temp.path().join("agent-mask-4194305-abc");
        let live = temp.path().join(format!("agent-mask-{}-abc", std::process::id()));
        let fresh = temp.path().join("agent-mask-Ab12Cd");
        for dir in [&dead, &live, &fresh] {
            let (file, empty) = super::paths(dir);
            std::fs::create_dir(dir).unwrap();
            std::fs::write(&file, b"").unwrap();
            std::fs::create_dir(&empty).unwrap();
            std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        super::sweep(temp.path());
        assert!(!dead.exists(), "a dead process's pair is removed");
        assert!(live.exists() && fresh.exists(), "a live process's and a fresh pair stay");
    }
}
