//! The workspace boundary: every path a tool touches resolves against one canonical root.
//!
//! `..` and symlinks are resolved before the check, so neither `../../etc/passwd` nor a symlink
//! inside the workspace that points out of it gets through. A path that does not exist yet (a file
//! about to be written) is resolved through its deepest existing ancestor.

use std::{
    io,
    path::{Component, Path, PathBuf},
    sync::Arc,
};

use agent_core::{Boundary, HiddenPath, ToolError, ToolErrorKind};

use crate::{
    error::{Error, Result},
    permission::PathSet,
    secret::{Hidden, Secrets},
};

/// How many symlinks one resolution may follow before it is refused (the kernel's `ELOOP` limit).
const MAX_SYMLINKS: usize = 40;

/// The directory tree tools may work in, with its canonical root.
///
/// Cheap to clone. Tools call [`Workspace::resolve`] (reads) or [`Workspace::resolve_for_write`]
/// (creates and changes) on every path argument and work only with the returned path.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: Arc<Path>,
    outside_read: PathSet,
    outside_write: PathSet,
    secrets: Secrets,
    /// `Read(…)` deny rules with path specifiers, as (rule text, paths), for walks.
    read_denied: Arc<[(String, PathSet)]>,
    /// `Tool(domain:…)` allow and deny rules, as (deny?, rule name, domain, rule text), for the
    /// network tools' own checks (`Boundary::domain_rule`).
    domain_rules: Arc<[(bool, String, String, String)]>,
}

impl Workspace {
    /// A workspace rooted at `root`, which must exist; it is canonicalized once here.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        let canonical = match std::fs::canonicalize(root) {
            Ok(canonical) => canonical,
            Err(source) => return Err(Error::Workspace { path: root.to_owned(), source }),
        };
        Ok(Self {
            root: canonical.into(),
            outside_read: PathSet::default(),
            outside_write: PathSet::default(),
            secrets: Secrets::default(),
            read_denied: Arc::new([]),
            domain_rules: Arc::new([]),
        })
    }

    /// The same workspace, where paths outside the root that match `read` (or `write`, for
    /// writes) are allowed. The permission policy builds these from allow rules such as
    /// `Read(//etc/hosts)`; a path allowed for writing is also allowed for reading.
    pub(crate) fn with_outside(mut self, read: PathSet, write: PathSet) -> Self {
        self.outside_read = read;
        self.outside_write = write;
        self
    }

    /// The same workspace with the session's secret list (built by the permission policy).
    pub(crate) fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// The same workspace, where walks leave out what these `Read(…)` deny rules match (built by
    /// the permission policy).
    pub(crate) fn with_read_denied(mut self, rules: Vec<(String, PathSet)>) -> Self {
        self.read_denied = rules.into();
        self
    }

    /// The same workspace with the session's `Tool(domain:…)` rules (built by the permission
    /// policy), as (deny?, rule name, domain, rule text).
    pub(crate) fn with_domain_rules(mut self, rules: Vec<(bool, String, String, String)>) -> Self {
        self.domain_rules = rules.into();
        self
    }

    /// What the `Tool(domain:…)` rules of `rule_name` say about `domain`: deny rules first.
    pub fn domain_rule(&self, rule_name: &str, domain: &str) -> agent_core::DomainRule {
        let find = |deny: bool| {
            self.domain_rules
                .iter()
                .find(|(d, tool, pattern, _)| {
                    *d == deny
                        && tool == rule_name
                        && crate::permission::domain_matches(pattern, domain)
                })
                .map(|(_, _, _, text)| text.clone())
        };
        match (find(true), find(false)) {
            (Some(rule), _) => agent_core::DomainRule::Denied(rule),
            (None, Some(rule)) => agent_core::DomainRule::Allowed(rule),
            (None, None) => agent_core::DomainRule::Unlisted,
        }
    }

    /// The text of the first `Read(…)` deny rule matching the canonical `path`.
    pub fn read_denied(&self, canonical: &Path) -> Option<String> {
        self.read_denied
            .iter()
            .find(|(_, set)| set.matches(canonical))
            .map(|(rule, _)| rule.clone())
    }

    /// The secret files of the session, with what allow rules expose.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The secret at the canonical `path` that tools must not show, with the rule that would
    /// expose it; `None` when it is no secret or an allow rule exposes it.
    pub fn hidden(&self, path: &Path) -> Option<Hidden> {
        self.secrets.hidden(path, &self.root)
    }

    /// For a canonical path that holds secrets and that no allow rule exposes: the rule that would
    /// expose it (`Read(./.env)`); `None` when its contents may be shown.
    pub fn secret(&self, canonical: &Path) -> Option<String> {
        self.hidden(canonical).map(|hidden| hidden.rule)
    }

    /// The canonical, absolute root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root as the shared pointer [`agent_core::ToolContext`] carries.
    pub fn root_arc(&self) -> Arc<Path> {
        Arc::clone(&self.root)
    }

    /// Resolves a path the model gave (absolute, or relative to the root) for reading.
    ///
    /// Returns the canonical path, or an `outside_workspace` error when it resolves outside the
    /// root and no allow rule covers it. The path need not exist.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let resolved = self.canonical(path)?;
        if self.contains(&resolved)
            || self.outside_read.matches(&resolved)
            || self.outside_write.matches(&resolved)
        {
            return Ok(resolved);
        }
        Err(self.outside_error(path, &resolved))
    }

    /// Resolves a path the model gave for creating or changing it; like [`Workspace::resolve`],
    /// but only `Edit(…)` allow rules open paths outside the root.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        let resolved = self.canonical(path)?;
        if self.contains(&resolved) || self.outside_write.matches(&resolved) {
            return Ok(resolved);
        }
        Err(self.outside_error(path, &resolved))
    }

    /// Whether a canonical path lies inside the root (the root itself included).
    pub fn contains(&self, canonical: &Path) -> bool {
        canonical.starts_with(&self.root)
    }

    /// Resolves `path` to a canonical absolute path without checking the boundary: `..` and
    /// symlinks are resolved, and a missing tail is appended to its deepest existing ancestor.
    pub fn canonical(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.is_empty() {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "the path is empty; give a path relative to the workspace root or an absolute path",
            ));
        }
        if path.contains('\0') {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "the path contains a NUL byte; give a plain file path",
            ));
        }
        let joined = self.root.join(path);
        // Fast path: an existing path is resolved by the kernel in one call.
        if let Ok(canonical) = std::fs::canonicalize(&joined) {
            return Ok(canonical);
        }
        let mut links_left = MAX_SYMLINKS;
        resolve_missing(&joined, &mut links_left).map_err(|err| {
            ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("cannot resolve `{path}`: {err}; check the path"),
            )
        })
    }

    fn outside_error(&self, given: &str, resolved: &Path) -> ToolError {
        let lexical = normalize_lexically(&self.root.join(given));
        let via_symlink = if lexical.starts_with(&self.root) { " through a symlink" } else { "" };
        ToolError::new(
            ToolErrorKind::OutsideWorkspace,
            format!(
                "`{given}` resolves{via_symlink} to {}, which is outside the workspace {}; use a path inside the workspace",
                resolved.display(),
                self.root.display()
            ),
        )
    }
}

impl Boundary for Workspace {
    fn root(&self) -> &Path {
        &self.root
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        Workspace::resolve(self, path)
    }

    fn resolve_for_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        Workspace::resolve_for_write(self, path)
    }

    fn secret(&self, path: &Path) -> Option<String> {
        Workspace::secret(self, path)
    }

    fn read_denied(&self, path: &Path) -> Option<String> {
        Workspace::read_denied(self, path)
    }

    fn domain_rule(&self, rule_name: &str, domain: &str) -> agent_core::DomainRule {
        Workspace::domain_rule(self, rule_name, domain)
    }

    fn hidden_paths(&self, home: Option<&Path>) -> Option<Vec<HiddenPath>> {
        let hidden = self.secrets.to_hide(Some(&self.root), home);
        let plain =
            hidden.into_iter().map(|Hidden { path, shown, rule }| HiddenPath { path, shown, rule });
        Some(plain.collect())
    }
}

/// Resolves a path some of whose components may not exist, one component at a time, so that
/// every existing component (and every symlink) is resolved by the filesystem and only the missing
/// tail is handled lexically. A missing component cannot be a symlink, so `..` after it is safe
/// to apply lexically.
fn resolve_missing(path: &Path, links_left: &mut usize) -> io::Result<PathBuf> {
    let mut current = PathBuf::new();
    let mut missing = false;
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => current.push(prefix.as_os_str()),
            Component::RootDir => current.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                current.pop();
            }
            Component::Normal(name) => {
                let candidate = current.join(name);
                if missing {
                    current = candidate;
                    continue;
                }
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        if *links_left == 0 {
                            return Err(io::Error::other("too many levels of symbolic links"));
                        }
                        *links_left -= 1;
                        let target = std::fs::read_link(&candidate)?;
                        // A relative target is relative to the link's directory.
                        current = resolve_missing(&current.join(target), links_left)?;
                    }
                    Ok(_) => current = candidate,
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {
                        missing = true;
                        current = candidate;
                    }
                    Err(err) => return Err(err),
                }
            }
        }
    }
    Ok(current)
}

/// `..` and `.` removed without touching the filesystem; only used to word error messages.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        outside: tempfile::TempDir,
        ws: Workspace,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        std::os::unix::fs::symlink("src", dir.path().join("inner")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("nope"), dir.path().join("dangling"))
            .unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        Fixture { _dir: dir, outside, ws }
    }

    #[track_caller]
    fn check(path: &str, expect: std::result::Result<&str, &str>) {
        let fx = fixture();
        let got = fx.ws.resolve(path);
        match (got, expect) {
            (Ok(resolved), Ok(rel)) => assert_eq!(resolved, fx.ws.root().join(rel), "{path}"),
            (Err(err), Err(code)) => assert_eq!(err.kind.as_str(), code, "{path}: {err}"),
            (got, expect) => panic!("{path}: got {got:?}, expected {expect:?} ({:?})", fx.outside),
        }
    }

    #[test]
    fn existing_paths_resolve_inside() {
        check("src/lib.rs", Ok("src/lib.rs"));
        check("./src/../src/lib.rs", Ok("src/lib.rs"));
        check("inner/lib.rs", Ok("src/lib.rs"));
        check(".", Ok(""));
    }

    #[test]
    fn missing_paths_resolve_through_their_deepest_ancestor() {
        check("src/new/deeper/file.rs", Ok("src/new/deeper/file.rs"));
        check("new/../src/x.rs", Ok("src/x.rs"));
        check("inner/new.rs", Ok("src/new.rs"));
    }

    #[test]
    fn escapes_are_outside() {
        check("..", Err("outside_workspace"));
        check("../x", Err("outside_workspace"));
        check("/etc/passwd", Err("outside_workspace"));
        check("escape", Err("outside_workspace"));
        check("escape/new-file", Err("outside_workspace"));
        check("dangling", Err("outside_workspace"));
        check("src/../../x", Err("outside_workspace"));
    }

    #[test]
    fn bad_input_is_invalid_arguments() {
        check("", Err("invalid_arguments"));
        check("a\0b", Err("invalid_arguments"));
    }

    #[test]
    fn symlink_escape_is_named_in_the_message() {
        let fx = fixture();
        let err = fx.ws.resolve("escape/secret").unwrap_err();
        assert!(err.message.contains("through a symlink"), "{}", err.message);
    }

    #[test]
    fn symlink_loops_do_not_hang() {
        let fx = fixture();
        std::os::unix::fs::symlink("loop_b", fx.ws.root().join("loop_a")).unwrap();
        std::os::unix::fs::symlink("loop_a", fx.ws.root().join("loop_b")).unwrap();
        let err = fx.ws.resolve("loop_a/x").unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments, "{err}");
    }
}
