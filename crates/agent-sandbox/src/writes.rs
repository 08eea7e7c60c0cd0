//! What a command wrote inside its writable roots: a metadata scan before it runs and one after,
//! compared path by path.
//!
//! The kernel offers no portable way for an unprivileged process to watch a whole tree: fanotify's
//! mount and filesystem marks need `CAP_SYS_ADMIN` in the initial user namespace, and inotify needs
//! one watch per directory, set up racily as directories appear. So the sandbox scans: a
//! [`TreeScan`] records size, mtime, ctime, inode and mode of every entry under a root (never
//! following symlinks, never entering `.git`), and [`TreeScan::diff`] turns two scans into a
//! [`WriteSet`]: creations, modifications, deletions, mode changes, and renames (a deleted and a
//! created path with the same inode, size and mtime). Reading content is left to the caller, which hashes only
//! what changed. Directories named in [`ScanRules::ignored_dirs`] and files over
//! [`ScanRules::max_file_bytes`] are still seen, so what changed there is named in
//! [`WriteSet::not_covered`] rather than silently dropped.

use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

/// The directory no scan enters: the user's repository is theirs (docs/checkpoints.md).
const GIT_DIR: &str = ".git";

/// What a scan covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRules {
    /// Files larger than this are seen but not covered (their content is not kept).
    pub max_file_bytes: u64,
    /// Directory names whose contents are seen but not covered (`target`, `node_modules`).
    pub ignored_dirs: Vec<String>,
    /// How many entries inside ignored directories one scan looks at before it stops descending
    /// into them; the rest is named as not scanned.
    pub max_ignored_entries: usize,
}

impl Default for ScanRules {
    /// 10 MB files, `target/` and `node_modules/` ignored, 20,000 ignored entries looked at.
    fn default() -> Self {
        Self {
            max_file_bytes: 10_000_000,
            ignored_dirs: vec!["target".to_owned(), "node_modules".to_owned()],
            max_ignored_entries: 20_000,
        }
    }
}

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// A socket, FIFO or device.
    Other,
}

/// The metadata a scan compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryMeta {
    /// What the entry is.
    pub kind: EntryKind,
    /// Its size in bytes.
    pub size: u64,
    /// Last modification, in nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Last status change (a `chmod`, a rename), in nanoseconds since the epoch.
    pub ctime_ns: i128,
    /// The inode, which a rename keeps.
    pub ino: u64,
    /// The permission bits (`0o7777`).
    pub mode: u32,
}

impl EntryMeta {
    /// The metadata of `path`, not following a symlink.
    pub fn of(path: &Path) -> std::io::Result<Self> {
        std::fs::symlink_metadata(path).map(|meta| Self::from_metadata(&meta))
    }

    fn from_metadata(meta: &std::fs::Metadata) -> Self {
        let kind = if meta.is_file() {
            EntryKind::File
        } else if meta.is_dir() {
            EntryKind::Dir
        } else if meta.file_type().is_symlink() {
            EntryKind::Symlink
        } else {
            EntryKind::Other
        };
        let nanos = |secs: i64, nsecs: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsecs);
        Self {
            kind,
            size: meta.size(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode() & 0o7777,
        }
    }
}

/// Why a changed path is not covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NotCovered {
    /// The file is larger than the size limit.
    TooLarge {
        /// Its size in bytes.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The path is inside an ignored directory.
    IgnoredDir {
        /// The ignored directory, relative to the root.
        dir: PathBuf,
    },
    /// Ignored directories held more entries than a scan looks at.
    NotScanned,
    /// The path is inside the user's `.git`.
    GitDir,
    /// The path is outside the writable roots the scan covers.
    OutsideRoot,
    /// Keeping it would exceed the session's store cap.
    OverCap {
        /// The cap in bytes.
        cap: u64,
    },
    /// It changed while no call of the session was running (a background job writing after its
    /// call returned, or another program): no call's checkpoint holds what it was before.
    OutsideCall,
    /// It could not be read.
    Unreadable {
        /// The error.
        error: String,
    },
}

/// A changed path the caller cannot restore, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The path, relative to the root.
    pub path: PathBuf,
    /// Why.
    #[serde(flatten)]
    pub why: NotCovered,
}

/// What a command changed under one root: the public answer to "which files did that command
/// touch?", for checkpoints, diagnostics and anything else that follows a command's writes.
/// Paths are relative to [`WriteSet::root`] and sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteSet {
    /// The writable root scanned.
    pub root: PathBuf,
    /// Paths that did not exist before.
    pub created: Vec<PathBuf>,
    /// Paths whose content (or kind) changed.
    pub modified: Vec<PathBuf>,
    /// Paths that no longer exist.
    pub deleted: Vec<PathBuf>,
    /// Paths whose permission bits changed (and maybe their content too).
    pub mode_changed: Vec<PathBuf>,
    /// `(from, to)`: a path deleted and another created with the same inode, size and mtime. Both also appear in
    /// `deleted` and `created`.
    pub renamed: Vec<(PathBuf, PathBuf)>,
    /// Changed paths under the ignored directories or the size limit, or not scanned at all.
    pub not_covered: Vec<Skipped>,
}

impl WriteSet {
    /// Whether nothing changed at all.
    pub fn is_empty(&self) -> bool {
        self.created.is_empty()
            && self.modified.is_empty()
            && self.deleted.is_empty()
            && self.mode_changed.is_empty()
            && self.not_covered.is_empty()
    }

    /// Every covered path that changed, once, sorted.
    pub fn changed(&self) -> Vec<&Path> {
        let mut all: Vec<&Path> = self
            .created
            .iter()
            .chain(&self.modified)
            .chain(&self.deleted)
            .chain(&self.mode_changed)
            .map(PathBuf::as_path)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// One entry of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    meta: EntryMeta,
    /// Under an ignored directory or over the size limit: seen, not covered.
    covered: bool,
}

/// The metadata of every entry under a root at one moment.
#[derive(Debug, Clone, Default)]
pub struct TreeScan {
    root: PathBuf,
    /// A hash map: `Path`'s ordering compares component by component, which a walk of 50,000
    /// entries would pay on every insert; the write set is sorted once instead.
    entries: HashMap<PathBuf, Seen>,
    /// Ignored directories whose inside was not looked at (the entry bound was reached).
    unscanned: Vec<PathBuf>,
}

impl TreeScan {
    /// Scans `root` under `rules`. Unreadable directories are left out (a command under the
    /// sandbox could not have written there either).
    pub fn take(root: &Path, rules: &ScanRules) -> Self {
        let mut scan = Self { root: root.to_path_buf(), ..Self::default() };
        let mut ignored_budget = rules.max_ignored_entries;
        let mut stack: Vec<(PathBuf, Option<PathBuf>)> = vec![(PathBuf::new(), None)];
        while let Some((dir, ignored)) = stack.pop() {
            let Ok(read) = std::fs::read_dir(root.join(&dir)) else { continue };
            for entry in read.flatten() {
                let name = entry.file_name();
                if dir.as_os_str().is_empty() && name == GIT_DIR {
                    continue;
                }
                let rel = dir.join(&name);
                let Ok(meta) = entry.metadata() else { continue };
                let meta = EntryMeta::from_metadata(&meta);
                let mut inside = ignored.clone();
                if inside.is_some() {
                    if ignored_budget == 0 {
                        if let Some(top) = &inside
                            && !scan.unscanned.contains(top)
                        {
                            scan.unscanned.push(top.clone());
                        }
                        break;
                    }
                    ignored_budget -= 1;
                } else if meta.kind == EntryKind::Dir
                    && rules.ignored_dirs.iter().any(|ignored| name == ignored.as_str())
                {
                    inside = Some(rel.clone());
                }
                let too_large = meta.kind == EntryKind::File && meta.size > rules.max_file_bytes;
                // An ignored directory itself is covered (it is restored or removed like any
                // directory); only what is inside it is not.
                let covered = ignored.is_none() && !too_large;
                scan.entries.insert(rel.clone(), Seen { meta, covered });
                if meta.kind == EntryKind::Dir {
                    stack.push((rel, inside));
                }
            }
        }
        scan
    }

    /// The root scanned.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many entries the scan saw.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the scan saw nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The covered entries: relative path and metadata.
    pub fn covered(&self) -> impl Iterator<Item = (&Path, &EntryMeta)> {
        self.entries
            .iter()
            .filter(|(_, seen)| seen.covered)
            .map(|(path, seen)| (path.as_path(), &seen.meta))
    }

    /// The metadata of `rel`, when the scan saw it.
    pub fn get(&self, rel: &Path) -> Option<&EntryMeta> {
        self.entries.get(rel).map(|seen| &seen.meta)
    }

    /// What changed between `self` (before) and `after`, under `rules` (for the reasons named).
    pub fn diff(&self, after: &TreeScan, rules: &ScanRules) -> WriteSet {
        let mut set = WriteSet { root: self.root.clone(), ..WriteSet::default() };
        let mut skip = |path: &Path, seen: &Seen| {
            set_skip(&mut set.not_covered, path, seen, rules);
        };
        for (path, old) in &self.entries {
            match after.entries.get(path) {
                None if old.covered => set.deleted.push(path.clone()),
                None => skip(path, old),
                Some(new) if new.meta == old.meta => {}
                Some(new) if !(old.covered && new.covered) => skip(path, new),
                Some(new) => {
                    // A directory's mtime moves with every entry made or removed in it; that is
                    // not a change of the directory itself.
                    let content = new.meta.kind != old.meta.kind
                        || (new.meta.kind != EntryKind::Dir
                            && (new.meta.size != old.meta.size
                                || new.meta.mtime_ns != old.meta.mtime_ns
                                || new.meta.ino != old.meta.ino));
                    if content {
                        set.modified.push(path.clone());
                    }
                    if new.meta.mode != old.meta.mode {
                        set.mode_changed.push(path.clone());
                    }
                }
            }
        }
        for (path, new) in &after.entries {
            if self.entries.contains_key(path) {
                continue;
            }
            if new.covered {
                set.created.push(path.clone());
            } else {
                set_skip(&mut set.not_covered, path, new, rules);
            }
        }
        for top in after.unscanned.iter().chain(&self.unscanned) {
            let skipped = Skipped { path: top.clone(), why: NotCovered::NotScanned };
            if !set.not_covered.contains(&skipped) {
                set.not_covered.push(skipped);
            }
        }
        for list in [&mut set.created, &mut set.modified, &mut set.deleted, &mut set.mode_changed] {
            list.sort_unstable();
        }
        set.not_covered.sort_by(|a, b| a.path.cmp(&b.path));
        for from in &set.deleted {
            let Some(old) = self.entries.get(from) else { continue };
            let to = set.created.iter().find(|to| {
                // A freed inode is soon given to a new file, so the inode alone does not make a
                // rename; a rename also keeps the size and the mtime.
                after.entries.get(*to).is_some_and(|new| {
                    new.meta.ino == old.meta.ino
                        && new.meta.kind == old.meta.kind
                        && new.meta.size == old.meta.size
                        && new.meta.mtime_ns == old.meta.mtime_ns
                })
            });
            if let Some(to) = to {
                set.renamed.push((from.clone(), to.clone()));
            }
        }
        set
    }
}

fn set_skip(out: &mut Vec<Skipped>, path: &Path, seen: &Seen, rules: &ScanRules) {
    let why = if seen.meta.kind == EntryKind::File && seen.meta.size > rules.max_file_bytes {
        NotCovered::TooLarge { bytes: seen.meta.size, limit: rules.max_file_bytes }
    } else {
        let dir = path
            .ancestors()
            .filter(|dir| {
                dir.file_name().is_some_and(|name| {
                    rules.ignored_dirs.iter().any(|ignored| name == ignored.as_str())
                })
            })
            .last()
            .map_or_else(PathBuf::new, Path::to_path_buf);
        NotCovered::IgnoredDir { dir }
    };
    // Directories inside ignored trees change mtime whenever their files do; naming the files
    // is enough.
    if seen.meta.kind == EntryKind::Dir && matches!(why, NotCovered::IgnoredDir { .. }) {
        return;
    }
    out.push(Skipped { path: path.to_path_buf(), why });
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn check(setup: &[(&str, &str)], change: impl FnOnce(&Path)) -> WriteSet {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        for (path, text) in setup {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap_or(dir.path()))
                .unwrap_or_else(|err| panic!("{err}"));
            std::fs::write(path, text).unwrap_or_else(|err| panic!("{err}"));
        }
        let rules = ScanRules { max_file_bytes: 100, ..ScanRules::default() };
        let before = TreeScan::take(dir.path(), &rules);
        change(dir.path());
        before.diff(&TreeScan::take(dir.path(), &rules), &rules)
    }

    fn p(path: &str) -> PathBuf {
        PathBuf::from(path)
    }

    #[test]
    fn a_scan_names_each_kind_of_change() {
        let rules = ScanRules { max_file_bytes: 100, ..ScanRules::default() };
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let root = dir.path();
        for name in ["edit", "gone", "from", "mode", "same"] {
            std::fs::write(root.join(name), name).unwrap_or_else(|err| panic!("{err}"));
        }
        std::fs::create_dir(root.join(".git")).unwrap_or_else(|err| panic!("{err}"));
        let before = TreeScan::take(root, &rules);
        std::fs::write(root.join("edit"), "edited!").unwrap_or_else(|err| panic!("{err}"));
        std::fs::remove_file(root.join("gone")).unwrap_or_else(|err| panic!("{err}"));
        std::fs::rename(root.join("from"), root.join("to")).unwrap_or_else(|err| panic!("{err}"));
        std::fs::set_permissions(root.join("mode"), std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|err| panic!("{err}"));
        std::fs::write(root.join("new"), "new").unwrap_or_else(|err| panic!("{err}"));
        std::fs::write(root.join(".git/HEAD"), "x").unwrap_or_else(|err| panic!("{err}"));
        let set = before.diff(&TreeScan::take(root, &rules), &rules);
        assert_eq!(set.created, [p("new"), p("to")]);
        assert_eq!(set.modified, [p("edit")]);
        assert_eq!(set.deleted, [p("from"), p("gone")]);
        assert_eq!(set.mode_changed, [p("mode")]);
        assert_eq!(set.renamed, [(p("from"), p("to"))]);
        assert!(set.not_covered.is_empty(), "{set:?}");
    }

    #[test]
    fn large_files_and_ignored_directories_are_named_not_covered() {
        let set = check(&[("node_modules/a/b.js", "x"), ("small", "x")], |root| {
            std::fs::write(root.join("node_modules/a/b.js"), "changed")
                .unwrap_or_else(|err| panic!("{err}"));
            std::fs::write(root.join("big"), "x".repeat(200)).unwrap_or_else(|err| panic!("{err}"));
        });
        assert_eq!(set.created, Vec::<PathBuf>::new());
        assert_eq!(
            set.not_covered,
            [
                Skipped { path: p("big"), why: NotCovered::TooLarge { bytes: 200, limit: 100 } },
                Skipped {
                    path: p("node_modules/a/b.js"),
                    why: NotCovered::IgnoredDir { dir: p("node_modules") }
                },
            ]
        );
    }

    #[test]
    fn an_unchanged_tree_is_an_empty_set() {
        let set = check(&[("a/b", "x"), ("c", "y")], |_| {});
        assert!(set.is_empty(), "{set:?}");
    }
}
