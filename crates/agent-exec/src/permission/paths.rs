//! Path patterns: gitignore-style globs anchored the way rules spell them, and the built-in list
//! of protected paths (the secret files are in [`crate::secret`]).

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled set of path globs, matched against canonical absolute paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct PathSet {
    sets: Vec<GlobSet>,
}

impl PathSet {
    /// Compiles absolute glob patterns (already anchored by [`anchor`]).
    pub(crate) fn new(patterns: &[String]) -> Result<Self, globset::Error> {
        if patterns.is_empty() {
            return Ok(Self::default());
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            builder.add(GlobBuilder::new(pattern).literal_separator(true).build()?);
        }
        Ok(Self { sets: vec![builder.build()?] })
    }

    /// One set matching what any of `sets` matches.
    pub(crate) fn union(sets: Vec<PathSet>) -> PathSet {
        PathSet { sets: sets.into_iter().flat_map(|set| set.sets).collect() }
    }

    /// Whether the canonical path matches any pattern.
    pub(crate) fn matches(&self, path: &Path) -> bool {
        self.sets.iter().any(|set| set.is_match(path))
    }
}

/// Turns a rule's path specifier into absolute glob patterns.
///
/// `//abs/path` is absolute, `~/path` is under the home directory, `/path` and `./path` are
/// relative to the workspace root, a pattern with a `/` inside is relative to the root, and a bare
/// name (`*.pem`, `.env`) matches at any depth below the root, as in `.gitignore`. A pattern that
/// names a directory also matches everything below it.
pub(crate) fn anchor(spec: &str, root: &Path, home: Option<&Path>) -> Result<Vec<String>, String> {
    let escaped_root = escape_path(root)?;
    let trimmed = spec.trim_end_matches('/');
    let base = if let Some(abs) = spec.strip_prefix("//") {
        format!("/{}", abs.trim_end_matches('/'))
    } else if let Some(rest) = spec.strip_prefix("~/") {
        let Some(home) = home else {
            return Err("`~` is used but the home directory is unknown".to_owned());
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

/// Paths that always ask before they are written, in every mode: version-control internals,
/// the agent's own configuration, shell start-up files and CI workflows.
pub(crate) const PROTECTED: &[&str] = &[
    "**/.git",
    "**/.git/**",
    "**/.agent",
    "**/.agent/**",
    "**/.bashrc",
    "**/.bash_profile",
    "**/.bash_login",
    "**/.profile",
    "**/.zshrc",
    "**/.zprofile",
    "**/.zshenv",
    "**/.github/workflows/**",
    "**/.gitlab-ci.yml",
];

/// A set compiled from a built-in list such as [`PROTECTED`].
pub(crate) fn builtin(patterns: &[&str]) -> PathSet {
    let owned: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
    // The built-in lists are constants covered by tests, so they always compile.
    PathSet::new(&owned).unwrap_or_default()
}

fn escape_path(path: &Path) -> Result<String, String> {
    match path.to_str() {
        Some(text) => Ok(globset::escape(text.trim_end_matches('/'))),
        None => Err(format!("path {} is not valid UTF-8", path.display())),
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

    #[test]
    fn builtin_lists_compile() {
        assert!(builtin(PROTECTED).matches(Path::new("/ws/.git/config")));
        assert!(builtin(PROTECTED).matches(Path::new("/ws/.github/workflows/ci.yml")));
        assert!(!builtin(PROTECTED).matches(Path::new("/ws/src/git.rs")));
    }
}
