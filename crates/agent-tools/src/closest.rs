//! The closest candidate for a failed edit: where old_string most likely was meant to match, and
//! what differs, with whitespace made visible.

use std::fmt::Write as _;

use crate::render::{self, visible_whitespace};

/// Files with more lines than this get the cheap line-equality search only.
const FUZZY_LINE_LIMIT: usize = 20_000;

/// A window of file lines that resembles old_string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// 0-based index of the first file line of the window.
    first: usize,
    /// Number of lines in the window.
    len: usize,
}

/// The window of file lines most like `old`, if any line resembles it at all.
pub(crate) fn find(content: &str, old: &str) -> Option<Candidate> {
    let file: Vec<&str> = content.lines().collect();
    let wanted: Vec<&str> = old.lines().collect();
    if file.is_empty() || wanted.is_empty() {
        return None;
    }
    let len = wanted.len().min(file.len());
    let key = |line: &str| line.trim().to_owned();
    let wanted_keys: Vec<String> = wanted.iter().map(|l| key(l)).collect();
    let file_keys: Vec<String> = file.iter().map(|l| key(l)).collect();
    let mut best = (0usize, 0usize);
    for first in 0..=file.len() - len {
        let score = (0..len)
            .filter(|&j| !wanted_keys[j].is_empty() && file_keys[first + j] == wanted_keys[j])
            .count();
        if score > best.0 {
            best = (score, first);
        }
    }
    if best.0 > 0 {
        return Some(Candidate { first: best.1, len });
    }
    // No line matches even trimmed: anchor on the line most similar to old_string's first
    // non-empty line, by character diff ratio.
    if file.len() > FUZZY_LINE_LIMIT {
        return None;
    }
    let (offset, anchor) = wanted.iter().enumerate().find(|(_, l)| !l.trim().is_empty())?;
    let anchor = anchor.trim();
    let mut best = (0.0f32, 0usize);
    for (index, line) in file.iter().enumerate() {
        let ratio = similar::TextDiff::from_chars(anchor, line.trim()).ratio();
        if ratio > best.0 {
            best = (ratio, index);
        }
    }
    if best.0 < 0.5 {
        return None;
    }
    let first = best.1.saturating_sub(offset).min(file.len() - len);
    Some(Candidate { first, len })
}

impl Candidate {
    /// The explanation and both texts with whitespace visible.
    pub(crate) fn render(&self, content: &str, old: &str) -> String {
        self.render_as(content, old, "old_string")
    }

    /// [`Candidate::render`], naming the wanted text `label` (apply_patch's hunk lines).
    pub(crate) fn render_as(&self, content: &str, old: &str, label: &str) -> String {
        let file: Vec<&str> =
            content.split_inclusive('\n').skip(self.first).take(self.len).collect();
        let wanted: Vec<&str> = old.split_inclusive('\n').collect();
        let mut differences = Vec::new();
        for (j, (have, want)) in file.iter().zip(&wanted).enumerate() {
            let (have, want) = (trim_eol(have), trim_eol(want));
            if have != want {
                differences.push(describe(self.first + j + 1, have, want, label));
            }
        }
        let (from, to) = (self.first + 1, self.first + self.len);
        // Five lines of context either side, but never past the file's ends.
        let last = content.split_inclusive('\n').count();
        let count = differences.len();
        let mut out = format!(
            "Closest text (lines {from}–{to}, {count} differing line{}): {}. Copy the lines below exactly, or re-read lines {}–{} with read_file.",
            if count == 1 { "" } else { "s" },
            differences.first().map_or("only line endings differ", String::as_str),
            from.saturating_sub(5).max(1),
            (to + 5).min(last)
        );
        out.push_str("\nFile (whitespace visible: → tab, · space):\n");
        for (j, line) in file.iter().enumerate() {
            let _ = writeln!(out, "{:>6}→{}", self.first + j + 1, cut(&visible_whitespace(line)));
        }
        let _ = writeln!(out, "{label} (whitespace visible):");
        for line in &wanted {
            let _ = writeln!(out, "{}", cut(&visible_whitespace(line)));
        }
        out.trim_end_matches('\n').to_owned()
    }
}

fn cut(line: &str) -> String {
    let mut out = String::new();
    render::push_cut(&mut out, line, render::MAX_LINE_CHARS);
    out
}

fn trim_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// What differs on one line, in words: indentation, trailing whitespace, or the text itself.
fn describe(number: usize, have: &str, want: &str, label: &str) -> String {
    let indent = |s: &str| s.len() - s.trim_start_matches([' ', '\t']).len();
    let (hi, wi) = (&have[..indent(have)], &want[..indent(want)]);
    if hi != wi {
        let rest_differs = have.trim() != want.trim();
        return format!(
            "line {number} is indented with \"{}\" where {label} has \"{}\"{}",
            visible_whitespace(&format!("{hi}x")).trim_end_matches('x'),
            visible_whitespace(&format!("{wi}x")).trim_end_matches('x'),
            if rest_differs { ", and its text differs too" } else { "" }
        );
    }
    if have.trim_end() == want.trim_end() {
        return format!("line {number} differs only in trailing whitespace");
    }
    format!("line {number} differs in its text")
}
