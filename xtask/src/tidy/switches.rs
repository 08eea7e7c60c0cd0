//! Test switches stay out of release builds: an `AGENT_TEST_` variable (a switch a test sets to
//! reach a seam, such as a tool that panics) may be named in a crate's sources only inside code a
//! release build leaves out: an item or module under `#[cfg(debug_assertions)]` or
//! `#[cfg(test)]` (or `any` of them), or a `tests.rs` file.
//!
//! The check reads the source as tokens (comments, strings, raw strings and char literals are
//! skipped as such), follows which braces a gating attribute opened, and reports every string
//! naming a switch outside them. `cfg!(debug_assertions) && …` does not count: the code, and the
//! name, are still compiled into the release binary.

/// What every test switch's name begins with.
pub(super) const PREFIX: &str = "AGENT_TEST_";

/// Checks one source file (`shown` is its path from the root).
pub(super) fn check(shown: &str, text: &str, problems: &mut Vec<String>) {
    // Only what ships: crate sources, not their test suites, tests.rs modules or the test helpers.
    let shipped = shown.starts_with("crates/")
        && shown.contains("/src/")
        && !shown.starts_with("crates/agent-test-support/")
        && super::size::lines_before_tests(shown, text).is_some();
    if !shipped {
        return;
    }
    for (line, name) in ungated(text) {
        problems.push(format!(
            "{shown}:{line}: the test switch {name} is named outside #[cfg(debug_assertions)] or #[cfg(test)], so a release build would read it"
        ));
    }
}

/// The switches named outside gated code: `(line, name)`.
fn ungated(text: &str) -> Vec<(usize, String)> {
    let mut scan = Scan { chars: text.chars().collect(), at: 0, line: 1 };
    let mut found = Vec::new();
    // One entry per open brace: whether a gating attribute opened it (or one outside it).
    let mut braces: Vec<bool> = Vec::new();
    let mut file_gated = false;
    // A gating attribute was read, and the item it applies to has not opened a brace or ended.
    let mut pending = false;
    // Parentheses and brackets open since `pending` was set: a `;` inside them (`[u8; 4]`) does
    // not end the item.
    let mut nest = 0usize;
    while let Some(c) = scan.peek(0) {
        let gated = file_gated || pending || braces.last().copied().unwrap_or(false);
        match c {
            '/' if scan.peek(1) == Some('/') => scan.skip_line(),
            '/' if scan.peek(1) == Some('*') => scan.skip_block_comment(),
            '"' => {
                let text = scan.string(0);
                if let (Some(name), false) = (switch(&text), gated) {
                    found.push((scan.line, name));
                }
            }
            'r' | 'b' if scan.raw_string_start().is_some() => {
                let line = scan.line;
                let text = scan.raw_string();
                if let (Some(name), false) = (switch(&text), gated) {
                    found.push((line, name));
                }
            }
            '\'' => scan.char_or_lifetime(),
            '#' if matches!(
                (scan.peek(1), scan.peek(2)),
                (Some('['), _) | (Some('!'), Some('['))
            ) =>
            {
                let inner = scan.peek(1) == Some('!');
                let attribute = scan.attribute();
                if gating(&attribute) {
                    match (inner, braces.last_mut()) {
                        (true, Some(top)) => *top = true,
                        (true, None) => file_gated = true,
                        (false, _) => {
                            pending = true;
                            nest = 0;
                        }
                    }
                }
            }
            '{' => {
                braces.push(gated);
                pending = false;
                scan.at += 1;
            }
            '}' => {
                braces.pop();
                scan.at += 1;
            }
            '(' | '[' => {
                nest += 1;
                scan.at += 1;
            }
            ')' | ']' => {
                nest = nest.saturating_sub(1);
                scan.at += 1;
            }
            ';' | ',' if nest == 0 => {
                pending = false;
                scan.at += 1;
            }
            '\n' => {
                scan.line += 1;
                scan.at += 1;
            }
            _ => scan.at += 1,
        }
    }
    found
}

/// The switch a string literal names, if it names one.
fn switch(text: &str) -> Option<String> {
    text.starts_with(PREFIX).then(|| text.to_owned())
}

/// Whether an attribute (its text between the brackets) leaves its item out of release builds.
fn gating(attribute: &str) -> bool {
    let compact: String = attribute.chars().filter(|c| !c.is_whitespace()).collect();
    let words = compact.split(|c: char| !(c.is_alphanumeric() || c == '_'));
    compact.starts_with("cfg(")
        && !compact.contains("not(")
        && words.into_iter().any(|word| word == "test" || word == "debug_assertions")
}

/// A cursor over a source file's characters.
struct Scan {
    chars: Vec<char>,
    at: usize,
    line: usize,
}

impl Scan {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    /// Moves past one character, counting lines.
    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn skip_line(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.at += 1;
        }
    }

    /// Skips a block comment, nested ones included.
    fn skip_block_comment(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            if c == '/' && self.peek(1) == Some('*') {
                depth += 1;
                self.at += 2;
            } else if c == '*' && self.peek(1) == Some('/') {
                self.at += 2;
                depth -= 1;
                if depth == 0 {
                    return;
                }
            } else {
                self.bump();
            }
        }
    }

    /// Reads a string literal whose opening quote is `ahead` characters on; returns its text.
    fn string(&mut self, ahead: usize) -> String {
        self.at += ahead + 1;
        let mut text = String::new();
        while let Some(c) = self.bump() {
            match c {
                '\\' => {
                    self.bump();
                }
                '"' => break,
                _ => text.push(c),
            }
        }
        text
    }

    /// The number of `#` of a raw string starting here (`r"`, `r#"`, `br"`, …), if one does.
    fn raw_string_start(&self) -> Option<usize> {
        // An identifier ending in `r` or `b` (`for`, `var`) does not start a literal.
        if self.at > 0 && self.chars[self.at - 1].is_alphanumeric() {
            return None;
        }
        let mut ahead = usize::from(self.peek(0) == Some('b'));
        if self.peek(ahead) != Some('r') {
            // `b"…"` is a plain byte string.
            return (ahead == 1 && self.peek(1) == Some('"')).then_some(0);
        }
        ahead += 1;
        let hashes = (ahead..).take_while(|&i| self.peek(i) == Some('#')).count();
        (self.peek(ahead + hashes) == Some('"')).then_some(hashes)
    }

    /// Reads a raw or byte string literal; returns its text.
    fn raw_string(&mut self) -> String {
        let hashes = self.raw_string_start().unwrap_or(0);
        let prefix = (0..).take_while(|&i| self.peek(i).is_some_and(|c| c != '"')).count();
        if hashes == 0 && self.peek(prefix - 1) == Some('b') {
            return self.string(prefix);
        }
        self.at += prefix + 1;
        let mut text = String::new();
        while let Some(c) = self.bump() {
            if c == '"' && (0..hashes).all(|i| self.peek(i) == Some('#')) {
                self.at += hashes;
                break;
            }
            text.push(c);
        }
        text
    }

    /// Skips a char literal (`'{'`, `'\''`) or a lifetime's quote.
    fn char_or_lifetime(&mut self) {
        match (self.peek(1), self.peek(2)) {
            (Some('\\'), _) => {
                // The quote and the backslash, the escaped character (itself maybe a quote),
                // then up to the closing quote (`'\u{2014}'`).
                self.at += 2;
                self.bump();
                while self.bump().is_some_and(|c| c != '\'') {}
            }
            (Some(_), Some('\'')) => {
                self.at += 3;
            }
            _ => self.at += 1,
        }
    }

    /// Reads an attribute from its `#` to its closing bracket; returns what is between the
    /// brackets.
    fn attribute(&mut self) -> String {
        while self.peek(0).is_some_and(|c| c != '[') {
            self.at += 1;
        }
        self.at += 1;
        let mut depth = 1usize;
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    text.push_str(&self.string(0));
                    continue;
                }
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        break;
                    }
                }
                _ => {}
            }
            text.push(c);
            self.bump();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines at which `source`, as `crates/x/src/lib.rs`, names a switch outside gated code.
    #[track_caller]
    fn check_source(source: &str, expect: &[usize]) {
        let lines: Vec<usize> = ungated(source).into_iter().map(|(line, _)| line).collect();
        assert_eq!(lines, expect, "{source}");
    }

    const READ: &str = r#"std::env::var_os("AGENT_TEST_PANIC").is_some()"#;

    #[test]
    fn a_switch_under_a_release_cfg_is_reported() {
        check_source(
            &format!("const X: &str = \"AGENT_TEST_X\";\nfn f() -> bool {{ {READ} }}"),
            &[1, 2],
        );
        // The control's shape that release builds still compile.
        check_source(&format!("fn f() -> bool {{\n    cfg!(debug_assertions) && {READ}\n}}"), &[2]);
        check_source(&format!("#[cfg(not(debug_assertions))]\nfn f() -> bool {{ {READ} }}"), &[2]);
        check_source(&format!("#[cfg(feature = \"x\")]\nfn f() -> bool {{ {READ} }}"), &[2]);
    }

    #[test]
    fn a_gate_covers_its_item_and_nothing_after() {
        check_source(&format!("#[cfg(debug_assertions)]\nfn f() -> bool {{\n    {READ}\n}}"), &[]);
        check_source("#[cfg(debug_assertions)]\nconst X: &str = \"AGENT_TEST_X\";", &[]);
        check_source(&format!("#[cfg(test)]\nmod tests {{\n    fn f() {{ {READ}; }}\n}}"), &[]);
        check_source(&format!("#![cfg(test)]\nfn f() -> bool {{ {READ} }}"), &[]);
        check_source(
            &format!("#[cfg(any(test, debug_assertions))]\nfn f(a: [u8; 2]) {{ {READ}; }}"),
            &[],
        );
        check_source(&format!("#[cfg(test)]\nconst A: u8 = 1;\nfn f() -> bool {{ {READ} }}"), &[3]);
        check_source(
            &format!("#[cfg(debug_assertions)]\nfn f() {{}}\nfn g() -> bool {{ {READ} }}"),
            &[3],
        );
    }

    #[test]
    fn comments_and_literals_neither_name_a_switch_nor_move_the_braces() {
        check_source("// \"AGENT_TEST_X\"\n/* \"AGENT_TEST_X\" /* } */ */\nfn f() {}", &[]);
        let tricky = "#[cfg(test)]\nfn f() {\n    let _ = ('}', r#\"}\"#, b\"}\", \"\\\"}\");\n}\n";
        check_source(&format!("{tricky}fn g() -> bool {{ {READ} }}"), &[5]);
        check_source("fn f<'a>(x: &'a str) -> &'a str { r#\"AGENT_TEST_Y\"# }", &[1]);
    }

    #[test]
    fn only_shipped_sources_are_checked() {
        let text = "const X: &str = \"AGENT_TEST_X\";\n";
        let problems = |shown: &str| {
            let mut problems = Vec::new();
            check(shown, text, &mut problems);
            problems
        };
        assert_eq!(problems("crates/a/src/lib.rs").len(), 1);
        for shown in [
            "crates/a/tests/all.rs",
            "crates/a/src/x/tests.rs",
            "crates/agent-test-support/src/lib.rs",
            "xtask/src/main.rs",
        ] {
            assert_eq!(problems(shown), Vec::<String>::new(), "{shown}");
        }
    }
}
