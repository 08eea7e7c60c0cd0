//! Where each hunk of an update goes, and the text after it.
//!
//! Hunks are found in order, each after the previous one, with Codex's tolerance ladder: the
//! exact lines first, then ignoring trailing whitespace, then ignoring whitespace on both ends,
//! then with Unicode dashes, quotes and special spaces read as their ASCII look-alikes. The first
//! position that matches on the strictest rung wins, as in Codex, so a patch applies here as it
//! does there.
//!
//! Each line keeps its own line ending; new lines take the ending of the file's first line (LF
//! when it has none). A file that did not end with a newline still does not.

use super::grammar::Hunk;

/// One rung of the ladder; later rungs tolerate more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rung {
    Exact,
    TrailingWhitespace,
    Whitespace,
    Punctuation,
}

impl Rung {
    const ALL: [Rung; 4] =
        [Rung::Exact, Rung::TrailingWhitespace, Rung::Whitespace, Rung::Punctuation];

    /// How an observation names the rung.
    pub(crate) fn note(self) -> &'static str {
        match self {
            Rung::Exact => "matched exactly",
            Rung::TrailingWhitespace => "matched after ignoring trailing whitespace",
            Rung::Whitespace => "matched after ignoring leading and trailing whitespace",
            Rung::Punctuation => "matched after reading Unicode dashes, quotes and spaces as ASCII",
        }
    }

    fn same(self, have: &str, want: &str) -> bool {
        match self {
            Rung::Exact => have == want,
            Rung::TrailingWhitespace => have.trim_end() == want.trim_end(),
            Rung::Whitespace => have.trim() == want.trim(),
            Rung::Punctuation => have.trim().chars().map(fold).eq(want.trim().chars().map(fold)),
        }
    }
}

/// Typographic punctuation and spaces as their ASCII look-alikes (Codex's set).
fn fold(ch: char) -> char {
    match ch {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// The line ending after one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Lf,
    Crlf,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Lf => "\n",
            Ending::Crlf => "\r\n",
        }
    }
}

/// A line's text and the ending after it (`None` only for a last line without one).
type Line = (String, Option<Ending>);

/// A text as lines, each with its own ending.
struct Lines {
    lines: Vec<Line>,
    /// The ending new lines get: the first line's.
    preferred: Ending,
}

impl Lines {
    fn parse(text: &str) -> Self {
        let mut lines = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find('\n') {
            let line = &rest[..at];
            let (line, ending) = match line.strip_suffix('\r') {
                Some(line) => (line, Ending::Crlf),
                None => (line, Ending::Lf),
            };
            lines.push((line.to_owned(), Some(ending)));
            rest = &rest[at + 1..];
        }
        if !rest.is_empty() {
            lines.push((rest.to_owned(), None));
        }
        let preferred = lines.first().and_then(|(_, ending)| *ending).unwrap_or(Ending::Lf);
        Self { lines, preferred }
    }
}

/// Where a hunk failed to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    /// 0-based index of the hunk in its file section.
    pub(crate) hunk: usize,
    /// The `@@` line that was not found, when it was that and not the hunk's lines.
    pub(crate) context: Option<String>,
    /// The 1-based file line the search started at (after the previous hunk).
    pub(crate) from: usize,
}

/// An update worked out: the new text and how loosely each hunk matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub(crate) text: String,
    /// (0-based hunk index, rung) for every hunk that needed more than an exact match.
    pub(crate) loose: Vec<(usize, Rung)>,
}

/// Applies `hunks` to `text`, or says which hunk does not match.
pub(crate) fn apply(text: &str, hunks: &[Hunk]) -> Result<Applied, Mismatch> {
    let file = Lines::parse(text);
    let texts: Vec<&str> = file.lines.iter().map(|(line, _)| line.as_str()).collect();
    let mut cursor = 0;
    let mut replacements: Vec<(usize, usize, Vec<Line>)> = Vec::new();
    let mut loose = Vec::new();
    for (index, hunk) in hunks.iter().enumerate() {
        let mut rung = Rung::Exact;
        if let Some(context) = &hunk.context {
            let Some((at, found)) = seek(&texts, std::slice::from_ref(context), cursor, false)
            else {
                return Err(Mismatch {
                    hunk: index,
                    context: Some(context.clone()),
                    from: cursor + 1,
                });
            };
            cursor = at + 1;
            rung = rung.max(found);
        }
        let fresh = |line: &String| (line.clone(), Some(file.preferred));
        if hunk.old.is_empty() {
            // Only added lines: they go at the end of the file (before a last blank line), as in
            // Codex, whatever the `@@` line said.
            let at = if texts.last() == Some(&"") { texts.len() - 1 } else { texts.len() };
            replacements.push((at, 0, hunk.new.iter().map(fresh).collect()));
            continue;
        }
        let (mut old, mut new) = (&hunk.old[..], &hunk.new[..]);
        let mut found = seek(&texts, old, cursor, hunk.end_of_file);
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            // A last empty line stands for the file's final newline, which is no line here.
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&texts, old, cursor, hunk.end_of_file);
        }
        let Some((at, found)) = found else {
            return Err(Mismatch { hunk: index, context: None, from: cursor + 1 });
        };
        // Context lines keep the file's text and ending; only added lines come from the patch.
        let lines = new
            .iter()
            .zip(&hunk.kept)
            .map(|(line, kept)| match kept {
                Some(k) if *k < old.len() => file.lines[at + k].clone(),
                _ => fresh(line),
            })
            .collect();
        replacements.push((at, old.len(), lines));
        cursor = at + old.len();
        rung = rung.max(found);
        if rung != Rung::Exact {
            loose.push((index, rung));
        }
    }
    let ended = file.lines.last().is_none_or(|(_, ending)| ending.is_some());
    let preferred = file.preferred;
    let mut lines = file.lines;
    replacements.sort_by_key(|(at, ..)| *at);
    // From the end, so each splice leaves the positions of the ones before it alone.
    for (at, len, new) in replacements.into_iter().rev() {
        let end = (at + len).min(lines.len());
        let at = at.min(end);
        lines.splice(at..end, new);
    }
    let mut out = String::with_capacity(text.len() + 64);
    let count = lines.len();
    for (index, (line, ending)) in lines.into_iter().enumerate() {
        out.push_str(&line);
        let last = index + 1 == count;
        if last && !ended {
            continue;
        }
        out.push_str(ending.unwrap_or(preferred).as_str());
    }
    Ok(Applied { text: out, loose })
}

/// The first position at or after `start` where `pattern` matches, on the strictest rung that
/// finds one. With `end_of_file`, only the position that ends the file is tried.
fn seek(
    lines: &[&str],
    pattern: &[String],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, Rung)> {
    if pattern.is_empty() {
        return Some((start, Rung::Exact));
    }
    let last = lines.len().checked_sub(pattern.len())?;
    let from = if end_of_file { last } else { start };
    for rung in Rung::ALL {
        for at in from..=last {
            let window = &lines[at..at + pattern.len()];
            if window.iter().zip(pattern).all(|(have, want)| rung.same(have, want)) {
                return Some((at, rung));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(context: Option<&str>, old: &[&str], new: &[&str], end_of_file: bool) -> Hunk {
        let owned = |lines: &[&str]| lines.iter().map(|l| (*l).to_owned()).collect();
        let kept = new.iter().map(|line| old.iter().position(|o| o == line)).collect();
        Hunk {
            context: context.map(str::to_owned),
            old: owned(old),
            new: owned(new),
            kept,
            end_of_file,
            line: 1,
        }
    }

    #[track_caller]
    fn check(text: &str, hunks: &[Hunk], expect: Result<&str, Mismatch>) {
        assert_eq!(apply(text, hunks).map(|applied| applied.text), expect.map(str::to_owned));
    }

    #[test]
    fn line_endings_and_the_final_newline_are_kept() {
        check("a\r\nb\r\n", &[hunk(None, &["b"], &["x", "y"], false)], Ok("a\r\nx\r\ny\r\n"));
        // Mixed: untouched lines keep theirs, new lines take the first line's.
        check("a\nb\r\nc\r\n", &[hunk(None, &["b"], &["x"], false)], Ok("a\nx\nc\r\n"));
        check("a\nb", &[hunk(None, &["b"], &["c"], false)], Ok("a\nc"));
        check("a\nb", &[hunk(None, &[], &["c"], false)], Ok("a\nb\nc"));
        check("a\n", &[hunk(None, &["a"], &[], false)], Ok(""));
    }

    #[test]
    fn each_rung_and_the_cursor() {
        check("a  \nb\n", &[hunk(None, &["a"], &["x"], false)], Ok("x\nb\n"));
        check("  a\nb\n", &[hunk(None, &["a"], &["x"], false)], Ok("x\nb\n"));
        // A loosely matched context line keeps the file's text.
        check("  a\t\nb\n", &[hunk(None, &["a", "b"], &["a", "c"], false)], Ok("  a\t\nc\n"));
        check(
            "say \u{201C}hi\u{201D} \u{2014} ok\n",
            &[hunk(None, &["say \"hi\" - ok"], &["x"], false)],
            Ok("x\n"),
        );
        // The second hunk is searched after the first: the first `a` is not taken twice.
        check(
            "a\nb\na\n",
            &[hunk(None, &["a"], &["1"], false), hunk(None, &["a"], &["2"], false)],
            Ok("1\nb\n2\n"),
        );
        check(
            "fn f\n x\nfn g\n x\n",
            &[hunk(Some("fn g"), &[" x"], &[" y"], false)],
            Ok("fn f\n x\nfn g\n y\n"),
        );
        check("x\nx\n", &[hunk(None, &["x"], &["y"], true)], Ok("x\ny\n"));
    }

    #[test]
    fn mismatches_say_which_hunk_and_where() {
        check(
            "a\n",
            &[hunk(None, &["zzz"], &["b"], false)],
            Err(Mismatch { hunk: 0, context: None, from: 1 }),
        );
        check(
            "a\nb\n",
            &[hunk(None, &["a"], &["a"], false), hunk(Some("fn nope"), &["b"], &["c"], false)],
            Err(Mismatch { hunk: 1, context: Some("fn nope".to_owned()), from: 2 }),
        );
    }
}
