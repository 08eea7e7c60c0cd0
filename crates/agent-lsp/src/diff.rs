//! The errors an edit introduced and fixed: the diagnostics after it against those before it,
//! matched by message and by where the edit moved their lines.
//!
//! Two diagnostics are the same when their severity, message and code agree and either the
//! line of the old one is the line the edit moved it to (lines the edit left alone keep their
//! identity however far they moved), or the two lines hold the same text. What is left on the
//! new side was introduced; what is left on the old side was fixed.

use std::collections::HashMap;

use similar::{DiffTag, TextDiff};

/// How serious a diagnostic is (LSP's `DiagnosticSeverity`; a missing one counts as an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// An error: the only kind an edit's observation reports.
    Error,
    /// A warning.
    Warning,
    /// Information.
    Information,
    /// A hint.
    Hint,
}

impl Severity {
    /// The word the observation uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic, reduced to what is compared and shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diag {
    /// Zero-based line.
    pub line: u32,
    /// Zero-based character (UTF-16 units, as the server counts).
    pub character: u32,
    /// How serious it is.
    pub severity: Severity,
    /// The server's message.
    pub message: String,
    /// The rule or error code, when the server names one.
    pub code: Option<String>,
}

impl Diag {
    fn key(&self) -> (Severity, &str, Option<&str>) {
        (self.severity, self.message.as_str(), self.code.as_deref())
    }
}

/// Whether two diagnostics with the same key sit at the same place (one pass of [`delta`]).
type SamePlace<'a> = &'a dyn Fn(&Diag, &Diag) -> bool;

/// What an edit did to a file's errors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delta {
    /// Errors the edit introduced, in file order.
    pub introduced: Vec<Diag>,
    /// How many errors it fixed.
    pub fixed: usize,
    /// How many errors the file has now, the introduced ones included.
    pub errors_now: usize,
}

impl Delta {
    /// Whether there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.introduced.is_empty() && self.fixed == 0
    }
}

/// The errors `after` (of `new_text`) has that `before` (of `old_text`) had not, and the count of
/// the other way round.
pub fn delta(before: &[Diag], old_text: &str, after: &[Diag], new_text: &str) -> Delta {
    let errors = |diags: &[Diag]| -> Vec<Diag> {
        diags.iter().filter(|d| d.severity == Severity::Error).cloned().collect()
    };
    let (before, mut after) = (errors(before), errors(after));
    after.sort_by_key(|d| (d.line, d.character));
    let moved = line_map(old_text, new_text);
    let old_lines: Vec<&str> = old_text.lines().collect();
    let new_lines: Vec<&str> = new_text.lines().collect();
    let text_of = |lines: &[&str], line: u32| lines.get(line as usize).map(|l| l.trim().to_owned());

    let mut matched_old = vec![false; before.len()];
    let mut matched_new = vec![false; after.len()];
    // First the lines the edit moved, then the same text anywhere: the second pass must not take
    // an old diagnostic the first would give to a later new one.
    let passes: [SamePlace<'_>; 2] =
        [&|old, new| moved.get(&old.line) == Some(&new.line), &|old, new| {
            text_of(&old_lines, old.line)
                .is_some_and(|text| Some(text) == text_of(&new_lines, new.line))
        }];
    for same_place in passes {
        for (n, new) in after.iter().enumerate() {
            if matched_new[n] {
                continue;
            }
            let found = before.iter().enumerate().position(|(o, old)| {
                !matched_old[o] && old.key() == new.key() && same_place(old, new)
            });
            if let Some(o) = found {
                matched_old[o] = true;
                matched_new[n] = true;
            }
        }
    }
    let introduced =
        after.iter().zip(&matched_new).filter(|(_, m)| !**m).map(|(d, _)| d.clone()).collect();
    Delta {
        introduced,
        fixed: matched_old.iter().filter(|m| !**m).count(),
        errors_now: after.len(),
    }
}

/// Where each line the edit left alone went: old line → new line (zero-based).
fn line_map(old_text: &str, new_text: &str) -> HashMap<u32, u32> {
    let diff = TextDiff::from_lines(old_text, new_text);
    let mut map = HashMap::new();
    for op in diff.ops() {
        if op.tag() == DiffTag::Equal {
            let (old, new) = (op.old_range(), op.new_range());
            for (o, n) in old.zip(new) {
                map.insert(o as u32, n as u32);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: u32, message: &str) -> Diag {
        Diag { line, character: 0, severity: Severity::Error, message: message.into(), code: None }
    }

    #[track_caller]
    fn check(before: &[Diag], old: &str, after: &[Diag], new: &str, expect: (&[u32], usize)) {
        let delta = delta(before, old, after, new);
        let lines: Vec<u32> = delta.introduced.iter().map(|d| d.line).collect();
        assert_eq!((lines.as_slice(), delta.fixed), expect);
    }

    #[test]
    fn introduced_fixed_and_moved() {
        let old = "a\nb\nc\n";
        // Unchanged: the same error on the same line.
        check(&[error(1, "x")], old, &[error(1, "x")], old, (&[], 0));
        // Two lines inserted above: the old error moved with its line.
        check(&[error(1, "x")], old, &[error(3, "x")], "n\nn\na\nb\nc\n", (&[], 0));
        // A new error beside the old one, with the same message on another line.
        check(&[error(1, "x")], old, &[error(1, "x"), error(2, "x")], "a\nb\nd\n", (&[2], 0));
        // Fixed.
        check(&[error(1, "x")], old, &[], "a\nB\nc\n", (&[], 1));
        // A changed message on the same line is one fixed and one new.
        check(&[error(1, "x")], old, &[error(1, "y")], "a\nb2\nc\n", (&[1], 1));
        // A line moved away and edited around still matches by its text.
        check(&[error(0, "x")], "a\nb\n", &[error(2, "x")], "b\nz\na\n", (&[], 0));
        // Warnings are never reported.
        let warning = Diag { severity: Severity::Warning, ..error(0, "w") };
        check(&[], old, &[warning], old, (&[], 0));
    }
}
