//! Rules read from the text of a source file: the ones a compiler or clippy cannot state.
//!
//! A `Result<_, String>` in a library hides which failures a caller can tell apart and invites
//! each call site to format its own message; the project's rule is one typed error per crate.
//! It crept back into three places after it was first removed, so tidy now holds the line.

/// Problems in one source file's text, `shown` being its path relative to the repository.
pub(super) fn check(shown: &str, text: &str, problems: &mut Vec<String>) {
    // Tests may compare against strings; the rule is for the code that ships.
    if !shown.starts_with("crates/") || !shown.contains("/src/") {
        return;
    }
    // A unit-test module inside `src/` is test code too.
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    for (number, line) in code.lines().enumerate() {
        let code = line.split("//").next().unwrap_or(line);
        if string_error(code) {
            problems.push(format!(
                "{shown}:{}: `Result<_, String>`; give the failure a typed error (thiserror)",
                number + 1
            ));
        }
    }
}

/// Whether `code` names a `Result` whose error type is a bare `String`.
fn string_error(code: &str) -> bool {
    let mut rest = code;
    while let Some(start) = rest.find("Result<") {
        let inside = &rest[start + "Result<".len()..];
        if let Some(arguments) = top_level_arguments(inside)
            && arguments.len() == 2
            && arguments[1].trim() == "String"
        {
            return true;
        }
        rest = inside;
    }
    false
}

/// The comma-separated generic arguments up to the `>` that closes the list `text` starts inside,
/// or `None` when the list does not close on this line.
fn top_level_arguments(text: &str) -> Option<Vec<&str>> {
    let (mut depth, mut from, mut arguments) = (0usize, 0, Vec::new());
    for (at, byte) in text.bytes().enumerate() {
        match byte {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' if depth == 0 => {
                arguments.push(&text[from..at]);
                return Some(arguments);
            }
            b'>' | b')' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                arguments.push(&text[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_line(path: &str, line: &str, expect_problem: bool) {
        let mut problems = Vec::new();
        check(path, line, &mut problems);
        assert_eq!(!problems.is_empty(), expect_problem, "{path}: {line}: {problems:?}");
    }

    #[test]
    fn a_string_error_in_a_library_is_reported() {
        check_line("crates/a/src/x.rs", "fn f() -> Result<Kind, String> {", true);
        check_line("crates/a/src/x.rs", "fn f() -> Result<Vec<u8>, String> {", true);
        check_line("crates/a/src/x.rs", "fn f() -> std::result::Result<(u8, u16), String>", true);
    }

    #[test]
    fn other_results_and_other_places_are_not() {
        // Controls: a map of strings, a typed error, a comment, a test file.
        check_line("crates/a/src/x.rs", "fn f() -> Result<BTreeMap<String, String>> {", false);
        check_line("crates/a/src/x.rs", "fn f() -> Result<String, Error> {", false);
        check_line("crates/a/src/x.rs", "// was Result<Kind, String> once", false);
        check_line("crates/a/tests/x.rs", "fn f() -> Result<Kind, String> {", false);
        check_line("crates/a/src/x.rs", "#[cfg(test)]\nfn f() -> Result<Kind, String> {", false);
    }
}
