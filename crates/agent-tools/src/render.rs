//! How file text is shown to the model: numbered lines, long-line cuts, visible whitespace.

use std::fmt::Write as _;

/// A count with its noun, singular for exactly one: `1 file`, `2 files`, `0 files`. Every count
/// the model reads goes through here, so none says "1 files".
pub(crate) fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Lines longer than this many characters are cut with a `…[+N chars]` marker.
pub(crate) const MAX_LINE_CHARS: usize = 2000;

/// One numbered line as read_file and edit_file show it: `    42→text`. Tabs stay real tabs; the
/// line ending is not shown (the header names it).
pub(crate) fn numbered(out: &mut String, number: usize, line: &str, max_chars: usize) {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let _ = write!(out, "{number:>6}→");
    push_cut(out, line, max_chars);
    out.push('\n');
}

/// Appends `line`, cut after `max_chars` characters with a marker saying how much was left out.
pub(crate) fn push_cut(out: &mut String, line: &str, max_chars: usize) {
    match line.char_indices().nth(max_chars) {
        None => out.push_str(line),
        Some((cut, _)) => {
            let rest = line[cut..].chars().count();
            out.push_str(&line[..cut]);
            let _ = write!(out, "…[+{rest} chars]");
        }
    }
}

/// A line with its whitespace made visible: `→` for a tab, `·` for a space in the indentation or
/// at the end of the line, `␍` for a carriage return.
pub(crate) fn visible_whitespace(line: &str) -> String {
    let body = line.trim_end_matches('\n');
    let (body, cr) = match body.strip_suffix('\r') {
        Some(body) => (body, "␍"),
        None => (body, ""),
    };
    let indent_end = body.len() - body.trim_start_matches([' ', '\t']).len();
    let trail_start = body.trim_end_matches([' ', '\t']).len().max(indent_end);
    let mut out = String::with_capacity(body.len() + 8);
    for (index, ch) in body.char_indices() {
        let edge = index < indent_end || index >= trail_start;
        match ch {
            '\t' => out.push('→'),
            ' ' if edge => out.push('·'),
            other => out.push(other),
        }
    }
    out.push_str(cr);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(line: &str, expect: &str) {
        assert_eq!(visible_whitespace(line), expect);
    }

    #[test]
    fn whitespace_is_visible_only_where_it_matters() {
        check("\tlet a = 1;  \n", "→let a = 1;··");
        check("    x\r\n", "····x␍");
        check("a b", "a b");
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let mut out = String::new();
        numbered(&mut out, 7, "abcdef\n", 4);
        assert_eq!(out, "     7→abcd…[+2 chars]\n");
    }
}
