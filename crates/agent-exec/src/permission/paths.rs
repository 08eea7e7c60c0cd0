//! The built-in list of protected paths: what always asks before it is written. The path sets
//! themselves are the sandbox's ([`agent_sandbox::paths`]); the secret files are in [`crate::secret`].

use agent_sandbox::paths::PathSet;

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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn builtin_lists_compile() {
        assert!(builtin(PROTECTED).matches(Path::new("/ws/.git/config")));
        assert!(builtin(PROTECTED).matches(Path::new("/ws/.github/workflows/ci.yml")));
        assert!(!builtin(PROTECTED).matches(Path::new("/ws/src/git.rs")));
    }
}
