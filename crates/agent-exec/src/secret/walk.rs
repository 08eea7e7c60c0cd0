//! The walk that finds secret files in a workspace.
//!
//! Unlike the search tools' walks, this one ignores `.gitignore`: secret files are usually the
//! very files a project ignores. It prunes only directories that hold generated or downloaded
//! files (`.git`, `node_modules`, `target`), and never follows symlinked directories, so it stays
//! inside the tree and cannot loop. A matching directory is reported whole, without descending.

use std::path::{Path, PathBuf};

use crate::permission::PathSet;

/// Directories the walk does not enter: version-control internals, dependency and build output.
/// They are large and hold no secrets the user wrote; the cost this saves is in `docs/sandbox.md`.
pub(crate) const PRUNED: &[&str] = &[".git", "node_modules", "target"];

/// Every path below `root` that `matcher` matches, in walk order.
pub(crate) fn secrets(root: &Path, matcher: &PathSet) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            // The type comes from the directory entry itself on Linux: no `stat` per file.
            let Ok(kind) = entry.file_type() else { continue };
            if matcher.matches(&path) {
                found.push(path);
            } else if kind.is_dir() && !PRUNED.iter().any(|name| entry.file_name() == *name) {
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
        let matcher =
            PathSet::new(&["**/.env".into(), "**/*.pem".into(), "**/.ssh".into()]).unwrap();
        let mut found: Vec<String> = secrets(root, &matcher)
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        found.sort();
        assert_eq!(found, [".env", "a/b/server.pem", "home/.ssh"]);
    }
}
