//! The size budget: no source file over `MAX_LINES` lines before its tests, except the files in
//! `OVER_BUDGET`, a list that can only shrink.
//!
//! A list that can only shrink is a ratchet: a new file over the budget fails, and so does an entry
//! whose file got under the budget or went away, so the list always names exactly the files still to
//! split. A file is split by responsibility; moving code out only to pass the meter does not count.

use std::path::Path;

/// The most lines a source file may have before its tests: past this, a module has become several
/// and reads better split. Test code (`tests/` folders, `tests.rs` files, and everything from the
/// first `#[cfg(test)]` on) does not count.
pub(super) const MAX_LINES: usize = 500;

/// Files allowed over `MAX_LINES` for now, one per line (path from the root, then why). Only ever
/// delete entries: tidy fails when a listed file is back within the budget or no longer exists.
#[rustfmt::skip]
pub(super) const OVER_BUDGET: &[(&str, &str)] = &[];

/// Lines of `text` before its first `#[cfg(test)]`, or `None` when the whole file is test code
/// (`shown` is its path from the root).
pub(super) fn lines_before_tests(shown: &str, text: &str) -> Option<usize> {
    let path = Path::new(shown);
    let is_test = path.components().any(|part| part.as_os_str() == "tests")
        || path.file_name().is_some_and(|name| name == "tests.rs");
    if is_test {
        return None;
    }
    Some(text.lines().take_while(|line| !line.trim_start().starts_with("#[cfg(test)]")).count())
}

/// Checks every source file's size (`(path, lines before its tests)`) against the budget and the
/// allow-list `allowed`, and every entry of the list against the files.
pub(super) fn check(
    sizes: &[(String, usize)],
    allowed: &[(&str, &str)],
    problems: &mut Vec<String>,
) {
    for (shown, lines) in sizes {
        let listed = allowed.iter().any(|(path, _)| path == shown);
        if *lines > MAX_LINES && !listed {
            problems.push(format!(
                "{shown}: {lines} lines before its tests, over the budget of {MAX_LINES}; split it by responsibility"
            ));
        }
        if *lines <= MAX_LINES && listed {
            problems.push(format!(
                "{shown}: {lines} lines before its tests, within the budget of {MAX_LINES}; delete its entry in OVER_BUDGET (xtask/src/tidy/size.rs)"
            ));
        }
    }
    for (path, _) in allowed {
        if !sizes.iter().any(|(shown, _)| shown == path) {
            problems.push(format!(
                "{path}: listed in OVER_BUDGET (xtask/src/tidy/size.rs) but no such source file; delete its entry"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks files of the given sizes against an allow-list of the given paths.
    #[track_caller]
    fn check_sizes(sizes: &[(&str, usize)], allowed: &[&str], expect: &[&str]) {
        let sizes: Vec<(String, usize)> =
            sizes.iter().map(|(path, lines)| ((*path).to_owned(), *lines)).collect();
        let allowed: Vec<(&str, &str)> = allowed.iter().map(|path| (*path, "reason")).collect();
        let mut problems = Vec::new();
        check(&sizes, &allowed, &mut problems);
        assert_eq!(problems, expect);
    }

    #[test]
    fn budget_and_allow_list() {
        check_sizes(&[("a.rs", 500)], &[], &[]);
        check_sizes(
            &[("a.rs", 501)],
            &[],
            &[
                "a.rs: 501 lines before its tests, over the budget of 500; split it by responsibility",
            ],
        );
        check_sizes(&[("a.rs", 501)], &["a.rs"], &[]);
        check_sizes(
            &[("a.rs", 500)],
            &["a.rs"],
            &[
                "a.rs: 500 lines before its tests, within the budget of 500; delete its entry in OVER_BUDGET (xtask/src/tidy/size.rs)",
            ],
        );
        check_sizes(
            &[("a.rs", 900)],
            &["b.rs"],
            &[
                "a.rs: 900 lines before its tests, over the budget of 500; split it by responsibility",
                "b.rs: listed in OVER_BUDGET (xtask/src/tidy/size.rs) but no such source file; delete its entry",
            ],
        );
    }

    #[track_caller]
    fn check_lines(shown: &str, code: usize, tests: usize, expect: Option<usize>) {
        let mut text = "//! demo\n".repeat(code);
        if tests > 0 {
            text.push_str("#[cfg(test)]\n");
            text.push_str(&"fn case() {}\n".repeat(tests - 1));
        }
        assert_eq!(lines_before_tests(shown, &text), expect);
    }

    #[test]
    fn test_code_does_not_count_against_the_budget() {
        // Lines from the first `#[cfg(test)]` on, test suites and `tests.rs` modules are exempt.
        check_lines("crates/agent-exec/src/big.rs", 490, 400, Some(490));
        check_lines("crates/agent-exec/tests/suite/big.rs", 900, 0, None);
        check_lines("crates/agent-exec/src/agent/tests.rs", 900, 0, None);
        check_lines("xtask/src/big.rs", 700, 10, Some(700));
    }

    #[test]
    fn every_listed_file_gives_a_reason() {
        for (path, reason) in OVER_BUDGET {
            assert!(path.ends_with(".rs") && !reason.is_empty(), "{path}");
        }
    }
}
