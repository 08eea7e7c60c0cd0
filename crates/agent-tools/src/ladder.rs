//! The match ladder of edit_file: exact first, then ever more tolerant views of the text, each step
//! accepted only when it finds exactly one candidate (or any number with `replace_all`).

use std::ops::Range;

/// One rung of the ladder. Each includes the normalizations of the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Exact,
    LineEndings,
    TrailingWhitespace,
    Punctuation,
    Indentation,
}

impl Step {
    const ALL: [Step; 5] = [
        Step::Exact,
        Step::LineEndings,
        Step::TrailingWhitespace,
        Step::Punctuation,
        Step::Indentation,
    ];

    /// How the success message names the step; empty for an exact match.
    pub(crate) fn note(self) -> &'static str {
        match self {
            Step::Exact => "",
            Step::LineEndings => "matched after normalizing line endings",
            Step::TrailingWhitespace => "matched after ignoring trailing whitespace",
            Step::Punctuation => "matched after folding Unicode quotes, dashes and spaces",
            Step::Indentation => "matched after ignoring indentation; new_string was re-indented",
        }
    }
}

/// The result of running the ladder.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Byte ranges of the original text to replace, in order.
    Found {
        step: Step,
        ranges: Vec<Range<usize>>,
    },
    /// The first step with any candidate found several, and `replace_all` was not set.
    Ambiguous {
        step: Step,
        ranges: Vec<Range<usize>>,
    },
    NotFound,
}

/// Runs the ladder for `needle` in `text`.
pub(crate) fn find(text: &str, needle: &str, replace_all: bool) -> Outcome {
    for step in Step::ALL {
        let ranges = find_at(text, needle, step);
        match ranges.len() {
            0 => continue,
            1 => return Outcome::Found { step, ranges },
            _ if replace_all => return Outcome::Found { step, ranges },
            _ => return Outcome::Ambiguous { step, ranges },
        }
    }
    Outcome::NotFound
}

/// Non-overlapping occurrences of `needle` in `text` under `step`, as original byte ranges.
pub(crate) fn find_at(text: &str, needle: &str, step: Step) -> Vec<Range<usize>> {
    if step == Step::Exact {
        if needle.is_empty() {
            return Vec::new();
        }
        return text.match_indices(needle).map(|(at, m)| at..at + m.len()).collect();
    }
    let view = View::new(text, step);
    let wanted = View::new(needle, step).text;
    if wanted.is_empty() {
        return Vec::new();
    }
    view.text
        .match_indices(wanted.as_str())
        .map(|(at, m)| view.starts[at]..view.ends[at + m.len() - 1])
        .collect()
}

/// A normalized copy of a text, with the original byte range behind each normalized byte.
struct View {
    text: String,
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl View {
    fn new(original: &str, step: Step) -> Self {
        let mut view = View {
            text: String::with_capacity(original.len()),
            starts: Vec::with_capacity(original.len()),
            ends: Vec::with_capacity(original.len()),
        };
        let bytes = original.as_bytes();
        let mut line_start = true;
        for (at, ch) in original.char_indices() {
            let end = at + ch.len_utf8();
            if step >= Step::LineEndings && ch == '\r' && bytes.get(end) == Some(&b'\n') {
                continue;
            }
            if step >= Step::TrailingWhitespace && (ch == ' ' || ch == '\t') {
                let rest = &original[end..];
                let after = rest.trim_start_matches([' ', '\t']);
                if after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n") {
                    continue;
                }
            }
            if step >= Step::Indentation && line_start && (ch == ' ' || ch == '\t') {
                continue;
            }
            line_start = ch == '\n';
            let folded = if step >= Step::Punctuation { fold(ch) } else { Folded::One(ch) };
            match folded {
                Folded::One(ch) => view.push(ch, at, end),
                Folded::Many(s) => s.chars().for_each(|ch| view.push(ch, at, end)),
            }
        }
        view
    }

    fn push(&mut self, ch: char, start: usize, end: usize) {
        self.text.push(ch);
        for _ in 0..ch.len_utf8() {
            self.starts.push(start);
            self.ends.push(end);
        }
    }
}

enum Folded {
    One(char),
    Many(&'static str),
}

/// Typographic punctuation and spaces folded to their ASCII look-alikes.
fn fold(ch: char) -> Folded {
    Folded::One(match ch {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        '\u{2026}' => return Folded::Many("..."),
        other => other,
    })
}

/// The 1-based line of byte offset `at`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
// The expected values are lists of byte ranges; one range in a list is exactly what is meant.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, needle: &str, expect: Outcome) {
        assert_eq!(find(text, needle, false), expect);
    }

    #[test]
    fn each_rung_of_the_ladder() {
        check("a\nb\n", "a\nb", Outcome::Found { step: Step::Exact, ranges: vec![0..3] });
        check("a\r\nb\r\n", "a\nb", Outcome::Found { step: Step::LineEndings, ranges: vec![0..4] });
        check(
            "a  \nb\n",
            "a\nb",
            Outcome::Found { step: Step::TrailingWhitespace, ranges: vec![0..5] },
        );
        check(
            "say “hi”\n",
            "say \"hi\"",
            Outcome::Found { step: Step::Punctuation, ranges: vec![0..12] },
        );
        check(
            "\tif x {\n\t\ty\n",
            "if x {\n    y",
            Outcome::Found { step: Step::Indentation, ranges: vec![1..11] },
        );
    }

    #[test]
    fn ambiguity_stops_the_ladder() {
        check("x\nx\n", "x", Outcome::Ambiguous { step: Step::Exact, ranges: vec![0..1, 2..3] });
        check("abc", "abd", Outcome::NotFound);
        assert_eq!(
            find("x x", "x", true),
            Outcome::Found { step: Step::Exact, ranges: vec![0..1, 2..3] }
        );
    }
}
