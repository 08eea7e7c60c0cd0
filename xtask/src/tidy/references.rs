//! No issue numbers in the docs or in code comments.
//!
//! A number that points into the tracker means nothing to a reader without it, and the tracker is
//! not part of the repository: a comment or a doc says what the rule is and why, and the history
//! lives in the commit log. Example text (code spans, fenced blocks, string literals) may say anything.

use std::{fs, path::Path};

use anyhow::Context;

/// Problems in one source file's comments, `shown` being its path relative to the repository.
pub(super) fn check_source(shown: &str, text: &str, problems: &mut Vec<String>) {
    for (number, line) in text.lines().enumerate() {
        // A comment is what follows `//` outside a string; lines that open a string before the
        // comment marker are rare enough in this tree to check by their comment part alone.
        let Some((code, comment)) = line.split_once("//") else { continue };
        if code.matches('"').count() % 2 == 1 {
            continue;
        }
        if let Some(found) = issue_number(comment) {
            problems.push(format!(
                "{shown}:{}: \"{found}\" in a comment; say the rule, not the issue",
                number + 1
            ));
        }
    }
}

/// Problems in README.md and the docs under docs/.
pub(super) fn check_docs(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    for doc in markdown(root)? {
        let text = fs::read_to_string(root.join(&doc)).with_context(|| format!("reading {doc}"))?;
        let mut fenced = false;
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            if let (false, Some(found)) = (fenced, issue_number(&prose)) {
                problems.push(format!(
                    "{doc}:{}: \"{found}\"; say the rule, not the issue",
                    number + 1
                ));
            }
        }
    }
    Ok(())
}

/// README.md and every Markdown file under docs/, relative to `root`, sorted.
pub(super) fn markdown(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut docs = vec!["README.md".to_owned()];
    for entry in fs::read_dir(root.join("docs")).context("reading docs/")? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    docs.sort();
    Ok(docs)
}

/// The first "issue N" (or "issue #N", "issues N") in `text`, as written.
fn issue_number(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(at) = lower[from..].find("issue") {
        let start = from + at;
        from = start + "issue".len();
        if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut end = from;
        for optional in [b's', b' ', b'#'] {
            if bytes.get(end) == Some(&optional) {
                end += 1;
            }
        }
        let digits = bytes[end..].iter().take_while(|byte| byte.is_ascii_digit()).count();
        if digits > 0 {
            return Some(text[start..end + digits].to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, expect: Option<&str>) {
        assert_eq!(issue_number(text).as_deref(), expect, "{text}");
    }

    #[test]
    fn issue_numbers_are_found() {
        check(" the budget of issue 37 holds", Some("issue 37"));
        check(" Issue 37's budget", Some("Issue 37"));
        check(" see issue #12", Some("issue #12"));
        check(" issues 44 and 45", Some("issues 44"));
    }

    #[test]
    fn other_mentions_are_not() {
        check(" an issue of size", None);
        check(" tissue 12", None);
        check(" the issue's text", None);
    }

    #[test]
    fn comments_are_checked_and_strings_are_not() {
        let mut problems = Vec::new();
        check_source("a.rs", "let x = 1; // since issue 37\n", &mut problems);
        check_source("a.rs", "let s = \"Fix issue 42 // here\";\n", &mut problems);
        check_source("a.rs", "\"Fix issue 42 in src/a b.rs\",\n", &mut problems);
        assert_eq!(problems, ["a.rs:1: \"issue 37\" in a comment; say the rule, not the issue"]);
    }
}
