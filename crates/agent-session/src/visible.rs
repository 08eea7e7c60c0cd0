//! Text from peers made safe to show: control characters become visible, so nothing a peer
//! sends can drive the terminal or page that shows it.
//!
//! An MCP server's tool description, a server's error message, a project's `.mcp.json` or a model's
//! text may carry escape sequences that clear the screen, move the cursor or retitle the window, so
//! a peer could hide or spoof what the user reads. Every such string goes through [`visible`] (or
//! [`visible_line`]) before it is printed: each control character is shown as its Unicode control
//! picture (`ESC` as `␛`, `BEL` as `␇`, DEL as `␡`) and each C1 control as `\u{9b}`, so nothing a peer
//! sends can drive the terminal, and what it tried is still there to see. One rule for every command
//! and the REPL; the tool-activity lines and previews use it too.

use std::{borrow::Cow, fmt::Write as _};

/// `text` with every control character but newline and tab made visible (for text that may span
/// lines: an error, the tail of a server's stderr).
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c => push_visible(&mut out, c),
        }
    }
    Cow::Owned(out)
}

/// `text` on one line with every control character made visible, newlines and tabs included (for
/// a table cell, a name, a title).
pub fn visible_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_visible(&mut out, c);
    }
    Cow::Owned(out)
}

/// Appends `c` to `out`, as its visible form when it is a control character.
pub fn push_visible(out: &mut String, c: char) {
    match u32::from(c) {
        // C0 controls have pictures at U+2400 + c, DEL at U+2421.
        code @ 0..=0x1f => out.push(char::from_u32(0x2400 + code).unwrap_or('?')),
        0x7f => out.push('\u{2421}'),
        // C1 controls (CSI is U+009B) have no pictures: they are written as escapes.
        code @ 0x80..=0x9f => {
            let _ = write!(out, "\\u{{{code:x}}}");
        }
        _ => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(raw: &str, line: &str, lines: &str) {
        assert_eq!(visible_line(raw), line);
        assert_eq!(visible(raw), lines);
    }

    #[test]
    fn control_characters_become_pictures_and_plain_text_is_untouched() {
        check("plain text ✓", "plain text ✓", "plain text ✓");
        check("\x1b[2J\x1b[H", "␛[2J␛[H", "␛[2J␛[H");
        check("\x1b]0;pwned\x07", "␛]0;pwned␇", "␛]0;pwned␇");
        check("a\nb\tc\r", "a␊b␉c␍", "a\nb\tc␍");
        check("\u{9b}2J\x7f\0", "\\u{9b}2J␡␀", "\\u{9b}2J␡␀");
    }

    #[test]
    fn no_escape_byte_survives_any_control_character() {
        let all: String = (0u32..0x100).filter_map(char::from_u32).collect();
        for shown in [visible_line(&all), visible(&all)] {
            assert!(!shown.bytes().any(|b| b == 0x1b || b == 0x07 || b == b'\r'), "{shown}");
            assert!(!shown.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{shown}");
        }
    }
}
