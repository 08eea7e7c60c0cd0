//! Path patterns: gitignore-style globs anchored the way permission rules spell them, compiled into
//! one [`PathSet`]. The secret list, the OS sandbox and the permission policy all match paths with it.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled set of path globs, matched against canonical absolute paths.
#[derive(Debug, Clone, Default)]
pub struct PathSet {
    sets: Vec<GlobSet>,
}

impl PathSet {
    /// Compiles absolute glob patterns (already anchored by [`anchor`]).
    pub fn new(patterns: &[String]) -> Result<Self, globset::Error> {
        if patterns.is_empty() {
            return Ok(Self::default());
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            builder.add(GlobBuilder::new(pattern).literal_separator(true).build()?);
        }
        Ok(Self { sets: vec![builder.build()?] })
    }

    /// The set a rule's path specifier names (see [`anchor`]), with `root` as the workspace root.
    pub fn anchored(spec: &str, root: &Path, home: Option<&Path>) -> Result<Self, PathError> {
        Ok(Self::new(&anchor(spec, root, home)?)?)
    }

    /// One set matching what any of `sets` matches.
    pub fn union(sets: Vec<PathSet>) -> PathSet {
        PathSet { sets: sets.into_iter().flat_map(|set| set.sets).collect() }
    }

    /// Whether the canonical path matches any pattern.
    pub fn matches(&self, path: &Path) -> bool {
        self.sets.iter().any(|set| set.is_match(path))
    }
}

/// Turns a rule's path specifier into absolute glob patterns.
///
/// `//abs/path` is absolute, `~/path` is under the home directory, `/path` and `./path` are
/// relative to the workspace root, a pattern with a `/` inside is relative to the root, and a bare
/// name (`*.pem`, `.env`) matches at any depth below the root, as in `.gitignore`. A pattern that
/// names a directory also matches everything below it.
pub fn anchor(spec: &str, root: &Path, home: Option<&Path>) -> Result<Vec<String>, PathError> {
    let escaped_root = escape_path(root)?;
    let trimmed = spec.trim_end_matches('/');
    let base = if let Some(abs) = spec.strip_prefix("//") {
        format!("/{}", abs.trim_end_matches('/'))
    } else if let Some(rest) = spec.strip_prefix("~/") {
        let Some(home) = home else {
            return Err(PathError::UnknownHome);
        };
        format!("{}/{}", escape_path(home)?, rest.trim_end_matches('/'))
    } else if let Some(rest) = spec.strip_prefix("./").or_else(|| spec.strip_prefix('/')) {
        format!("{escaped_root}/{}", rest.trim_end_matches('/'))
    } else if trimmed.contains('/') {
        format!("{escaped_root}/{trimmed}")
    } else {
        format!("{escaped_root}/**/{trimmed}")
    };
    let base = base.trim_end_matches('/').to_owned();
    if base.ends_with("**") {
        return Ok(vec![base]);
    }
    let below = format!("{base}/**");
    Ok(vec![base, below])
}

/// Why a path pattern cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The pattern starts with `~/` and the home directory is unknown.
    #[error("`~` is used but the home directory is unknown")]
    UnknownHome,
    /// The root or home directory cannot be written as a glob.
    #[error("path {} is not valid UTF-8", .0.display())]
    NotUtf8(PathBuf),
    /// The anchored pattern is not a valid glob.
    #[error(transparent)]
    Glob(#[from] globset::Error),
}

fn escape_path(path: &Path) -> Result<String, PathError> {
    match path.to_str() {
        Some(text) => Ok(globset::escape(text.trim_end_matches('/'))),
        None => Err(PathError::NotUtf8(path.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(spec: &str, path: &str, expect: bool) {
        let patterns = anchor(spec, Path::new("/ws"), Some(Path::new("/home/u"))).unwrap();
        let set = PathSet::new(&patterns).unwrap();
        assert_eq!(set.matches(Path::new(path)), expect, "{spec} vs {path}: {patterns:?}");
    }

    #[test]
    fn anchoring() {
        check("src/**", "/ws/src/a/b.rs", true);
        check("src/**", "/ws/other/src/a.rs", false);
        check("src", "/ws/src/a.rs", true);
        check("./.env", "/ws/.env", true);
        check("./.env", "/ws/sub/.env", false);
        check(".env", "/ws/sub/.env", true);
        check("*.pem", "/ws/a/b/c.pem", true);
        check("*.rs", "/ws/src/deep/x.rs", true);
        check("src/*.rs", "/ws/src/deep/x.rs", false);
        check("//etc/hosts", "/etc/hosts", true);
        check("//tmp/**", "/tmp/x/y", true);
        check("~/notes/**", "/home/u/notes/a.md", true);
        check("/docs/**", "/ws/docs/a.md", true);
        check("/docs/**", "/docs/a.md", false);
    }
}
