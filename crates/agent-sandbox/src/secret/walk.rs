//! The walk that finds secret files in a workspace.
//!
//! Unlike the search tools' walks, this one ignores `.gitignore`: secret files are usually the
//! very files a project ignores. It prunes only directories that hold generated or downloaded
//! files (`.git`, `node_modules`, `target`), and never follows symlinked directories, so it stays
//! inside the tree and cannot loop. A matching directory is reported whole, without descending.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::paths::PathSet;

/// Directories the walk does not enter: version-control internals, dependency and build output.
/// They are large and hold no secrets the user wrote; the cost this saves is in `docs/sandbox.md`.
pub(crate) const PRUNED: &[&str] = &[".git", "node_modules", "target"];

/// The secret patterns as the walk uses them. A pattern without a `/` (all built-in ones) is
/// matched against the file name alone, which is several times cheaper than matching the path;
/// the walk never enters a matching directory, so the pattern's "everything below" part is never
/// needed. Patterns with a `/` are matched against the whole path.
#[derive(Debug, Clone, Default)]
pub(crate) struct Matcher {
    names: GlobSet,
    paths: PathSet,
}

impl Matcher {
    /// Compiles `patterns`, skipping any that do not compile.
    pub(crate) fn new(patterns: &[String]) -> Self {
        let mut names = GlobSetBuilder::new();
        let mut paths = Vec::new();
        for pattern in patterns {
            let pattern = pattern.trim_matches('/');
            if pattern.contains('/') {
                paths.push(format!("**/{pattern}"));
            } else if let Ok(glob) = Glob::new(pattern) {
                names.add(glob);
            }
        }
        let paths = PathSet::new(&paths).unwrap_or_default();
        Self { names: names.build().unwrap_or_else(|_| GlobSet::empty()), paths }
    }

    fn matches(&self, name: &std::ffi::OsStr, path: &Path) -> bool {
        self.names.is_match(name) || self.paths.matches(path)
    }
}

/// Every path below `root` that `matcher` matches, in walk order.
pub(crate) fn secrets(root: &Path, matcher: &Matcher) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let path = entry.path();
            if matcher.matches(&name, &path) {
                found.push(path);
                continue;
            }
            // The type comes from the directory entry itself on Linux: no `stat` per file.
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            if is_dir && !PRUNED.iter().any(|pruned| name == *pruned) {
                stack.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_secrets_and_prunes_build_output() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [".env", "a/b/server.pem", "a/notes.md", "node_modules/x/.env", ".git/.env"] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::create_dir_all(root.join("home/.ssh/keys")).unwrap();
        let matcher = Matcher::new(&[".env".into(), "*.pem".into(), ".ssh".into()]);
        let mut found: Vec<String> = secrets(root, &matcher)
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        found.sort();
        assert_eq!(found, [".env", "a/b/server.pem", "home/.ssh"]);
    }
}
