//! A plugin's folder as a bounded tree: every file inside it, no symlink leading out, no more
//! files or bytes than a plugin needs; copied into the store as plain files.

use std::{
    io::Read,
    path::{Path, PathBuf},
};

use crate::error::{Context, bail};

/// The most files a plugin may hold.
pub(super) const MAX_FILES: usize = 5_000;
/// The most bytes a plugin may hold, all files together.
pub(super) const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How deep folders nest in a plugin.
const MAX_DEPTH: usize = 16;
/// Folders never copied: a repository's own history and caches.
const SKIPPED: &[&str] = &[".git", "node_modules", "__pycache__"];

/// Refuses `path` unless it resolves (symlinks followed) to somewhere inside `root`; a path that
/// does not exist yet is checked as far as it exists.
pub(super) fn contained(root: &Path, path: &Path) -> crate::Result<()> {
    let root = root.canonicalize().with_context(|| format!("reading {}", root.display()))?;
    let mut probe = path.to_path_buf();
    while !probe.exists() && probe.symlink_metadata().is_err() {
        if !probe.pop() {
            return Ok(());
        }
    }
    let real = probe.canonicalize().unwrap_or(probe);
    if !real.starts_with(&root) {
        bail!("{} leads out of the plugin's folder (to {})", path.display(), real.display());
    }
    Ok(())
}

/// Reads a text file of at most `cap` bytes.
pub(super) fn read_capped(path: &Path, cap: u64) -> crate::Result<String> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut text = String::new();
    file.take(cap + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    if text.len() as u64 > cap {
        bail!("{} is over the {cap} byte limit", path.display());
    }
    Ok(text)
}

/// Every file of the plugin (relative paths, sorted), refusing a symlink that leads out of
/// `root`, and a tree over [`MAX_FILES`], [`MAX_BYTES`] or [`MAX_DEPTH`].
pub(super) fn files(root: &Path) -> crate::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut bytes = 0;
    walk(root, root, 0, &mut found, &mut bytes)?;
    found.sort();
    Ok(found)
}

fn walk(
    root: &Path,
    dir: &Path,
    depth: usize,
    found: &mut Vec<PathBuf>,
    bytes: &mut u64,
) -> crate::Result<()> {
    if depth > MAX_DEPTH {
        bail!("{} nests deeper than {MAX_DEPTH} folders", dir.display());
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name();
        if SKIPPED.iter().any(|skip| name == *skip) {
            continue;
        }
        let kind = entry.file_type().with_context(|| format!("reading {}", path.display()))?;
        if kind.is_symlink() {
            contained(root, &path)?;
        }
        let meta =
            std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        if meta.is_dir() {
            walk(root, &path, depth + 1, found, bytes)?;
        } else if meta.is_file() {
            *bytes += meta.len();
            if found.len() >= MAX_FILES || *bytes > MAX_BYTES {
                bail!("the plugin is larger than {MAX_FILES} files or {MAX_BYTES} bytes");
            }
            found.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
    Ok(())
}

/// Copies the plugin's files (as [`files`] lists them) from `from` into the new folder `to`,
/// as plain files: a symlink inside the plugin becomes a copy of what it points at.
pub(super) fn copy(from: &Path, to: &Path) -> crate::Result<()> {
    let list = files(from)?;
    for relative in &list {
        let target = to.join(relative);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::copy(from.join(relative), &target)
            .with_context(|| format!("copying {}", relative.display()))?;
    }
    Ok(())
}

/// The plugin's scripts: files with an execute bit, and anything under `scripts/` or `bin/`.
pub(super) fn scripts(root: &Path) -> crate::Result<Vec<PathBuf>> {
    use std::os::unix::fs::PermissionsExt;
    Ok(files(root)?
        .into_iter()
        .filter(|relative| {
            let executable = std::fs::metadata(root.join(relative))
                .is_ok_and(|meta| meta.permissions().mode() & 0o111 != 0);
            executable || relative.starts_with("scripts") || relative.starts_with("bin")
        })
        .collect())
}
