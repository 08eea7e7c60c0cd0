//! Directory walks for grep and glob: ripgrep's ignore rules, and counts of what they skipped.

use std::path::Path;

use ignore::WalkBuilder;

/// Walks above this many files stop counting what was skipped.
const MAX_COUNTED: usize = 500_000;

/// A walker over `path` with ripgrep's filters: hidden entries and ignore files (.gitignore,
/// .ignore, git's exclude files) unless included. `.gitignore` counts outside git repositories
/// too, and `.git` itself is never walked.
pub(crate) fn builder(path: &Path, include_hidden: bool, include_ignored: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(path);
    builder
        .hidden(!include_hidden)
        .ignore(!include_ignored)
        .git_ignore(!include_ignored)
        .git_global(!include_ignored)
        .git_exclude(!include_ignored)
        .parents(!include_ignored)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// Files a walk left out, by reason.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub(crate) ignored: usize,
    pub(crate) hidden: usize,
}

impl Skipped {
    /// Counts the files under `path` that the filters left out, given `walked` files were walked.
    /// Costs two extra walks, so callers use it only to explain an empty result.
    pub(crate) fn count(
        path: &Path,
        include_hidden: bool,
        include_ignored: bool,
        walked: usize,
    ) -> Self {
        let files = |hidden: bool| {
            builder(path, hidden, true)
                .build()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .take(MAX_COUNTED)
                .count()
        };
        let without_ignore = if include_ignored { walked } else { files(include_hidden) };
        let everything = if include_hidden { without_ignore } else { files(true) };
        Skipped {
            ignored: without_ignore.saturating_sub(walked),
            hidden: everything.saturating_sub(without_ignore),
        }
    }

    /// `Skipped: 12 ignored (.gitignore/.ignore), 3 hidden. Set include_ignored=true …`, or empty.
    pub(crate) fn describe(&self, binary: usize) -> String {
        let mut parts = Vec::new();
        if self.ignored > 0 {
            parts.push(format!("{} ignored by .gitignore/.ignore", self.ignored));
        }
        if self.hidden > 0 {
            parts.push(format!("{} hidden", self.hidden));
        }
        if binary > 0 {
            parts.push(format!("{binary} binary"));
        }
        if parts.is_empty() {
            return String::new();
        }
        let mut flags = Vec::new();
        if self.ignored > 0 {
            flags.push("include_ignored=true");
        }
        if self.hidden > 0 {
            flags.push("include_hidden=true");
        }
        let mut out = format!(" Skipped files: {}.", parts.join(", "));
        if !flags.is_empty() {
            out.push_str(&format!(" Set {} to search them.", flags.join(" and ")));
        }
        out
    }
}
