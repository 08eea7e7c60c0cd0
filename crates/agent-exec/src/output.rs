//! The output cap: long tool output keeps its head and tail on line boundaries, with a notice at
//! the top saying what was dropped and where the full text was saved.
//!
//! More of the tail is kept than of the head (60/40) because errors and summaries sit at the end.
//! Everything here is linear in the output size, so 50 MB of output or one 50 MB line costs one
//! pass to count characters and one write to the spill file.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

/// The default cap, in characters, of one tool output.
pub const DEFAULT_OUTPUT_CAP: usize = 12_000;

/// Characters reserved for the notice and the cut marker, so that the capped text (notice
/// included) stays within the cap.
const NOTICE_RESERVE: usize = 400;

/// A capped output: the text to show, and the full text to save when it was cut.
#[derive(Debug)]
pub(crate) struct Cut {
    /// The head, the marker and the tail, without the notice yet.
    pub(crate) head: String,
    pub(crate) tail: String,
    pub(crate) total_chars: usize,
    pub(crate) total_lines: usize,
    pub(crate) dropped_chars: usize,
    pub(crate) dropped_lines: usize,
    pub(crate) head_lines: usize,
    pub(crate) tail_lines: usize,
}

/// Cuts `text` down to about `cap` characters, or returns `None` when it already fits.
pub(crate) fn cut(text: &str, cap: usize) -> Option<Cut> {
    // A byte length within the cap means the character count is too; only longer text is counted.
    if text.len() <= cap {
        return None;
    }
    let total_chars = text.chars().count();
    if total_chars <= cap {
        return None;
    }
    let budget = cap.saturating_sub(NOTICE_RESERVE).max(cap / 2);
    let head_budget = budget * 2 / 5;
    let tail_budget = budget - head_budget;

    // The head ends after the last newline within its budget, or mid-line if there is none.
    let head_limit = byte_offset_after_chars(text, head_budget);
    let head_end = match text[..head_limit].rfind('\n') {
        Some(newline) => newline + 1,
        None => head_limit,
    };
    // The tail starts after the first newline within its budget, or mid-line if there is none.
    let tail_limit = byte_offset_of_last_chars(text, tail_budget).max(head_end);
    let tail_start = match text[tail_limit..].find('\n') {
        Some(newline) if tail_limit + newline + 1 < text.len() => tail_limit + newline + 1,
        _ => tail_limit,
    };
    let tail_start = tail_start.max(head_end);

    let head = &text[..head_end];
    let middle = &text[head_end..tail_start];
    let tail = &text[tail_start..];
    let count_lines = |s: &str| s.bytes().filter(|&b| b == b'\n').count();
    let total_lines = count_lines(text) + usize::from(!text.ends_with('\n'));
    let head_lines = count_lines(head);
    let tail_lines = count_lines(tail) + usize::from(!tail.is_empty() && !tail.ends_with('\n'));
    Some(Cut {
        head: head.to_owned(),
        tail: tail.to_owned(),
        total_chars,
        total_lines,
        dropped_chars: middle.chars().count(),
        dropped_lines: total_lines.saturating_sub(head_lines + tail_lines),
        head_lines,
        tail_lines,
    })
}

impl Cut {
    /// The model-visible text: notice, head, cut marker, tail. `saved` is the spill file, or why
    /// the full output could not be saved.
    pub(crate) fn render(&self, saved: &Result<PathBuf, SpillError>) -> String {
        let full = match saved {
            Ok(path) => format!(
                "full output saved to {}; read or grep that file for the rest",
                path.display()
            ),
            Err(why) => format!("the full output could not be saved: {why}"),
        };
        let (notice, dropped) = if self.dropped_lines == 0 {
            let dropped =
                format!("{} characters from the middle of a long line", self.dropped_chars);
            let notice = format!(
                "[output truncated: {} characters in {}; showing the start and the end, {dropped} omitted; {full}]\n",
                self.total_chars,
                plural(self.total_lines, "line"),
            );
            (notice, dropped)
        } else {
            let dropped = format!(
                "{} ({} characters)",
                plural(self.dropped_lines, "line"),
                self.dropped_chars
            );
            let notice = format!(
                "[output truncated: {}, {} characters; showing the first {} and the last {}, {dropped} omitted; {full}]\n",
                plural(self.total_lines, "line"),
                self.total_chars,
                plural(self.head_lines, "line"),
                plural(self.tail_lines, "line"),
            );
            (notice, dropped)
        };
        let marker = format!("\n[… {dropped} omitted …]\n");
        let mut out =
            String::with_capacity(notice.len() + self.head.len() + marker.len() + self.tail.len());
        out.push_str(&notice);
        out.push_str(&self.head);
        out.push_str(&marker);
        out.push_str(&self.tail);
        out
    }
}

/// Where the full output of `call_id` is saved: `<session_dir>/outputs/<call_id>.txt`, with the
/// id reduced to characters that are safe in a file name.
pub(crate) fn spill_path(session_dir: &Path, call_id: &str) -> PathBuf {
    let mut name: String = call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(100)
        .collect();
    if name.is_empty() {
        name.push_str("call");
    }
    session_dir.join("outputs").join(format!("{name}.txt"))
}

/// Why the full output of a truncated call was not saved; the notice in the capped text says it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpillError {
    /// The executor has no session directory to save to.
    #[error("no session directory is configured")]
    NoSessionDir,
    /// Writing the file failed.
    #[error(transparent)]
    Write(#[from] std::io::Error),
    /// The blocking task that writes the file did not finish.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

/// Writes the full output (blocking; the executor runs it on the blocking pool).
///
/// The text goes to a temporary file in the same directory that is renamed into place only once
/// every byte is written, so a failed write (a full disk) leaves no file behind, and a file at
/// the path is always whole: the notice never names a file cut off, and a later compaction that
/// finds the file there can trust it.
pub(crate) fn save(path: &Path, text: &str) -> Result<PathBuf, SpillError> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::Builder::new().prefix(".spill-").tempfile_in(dir)?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(path.to_owned())
}

/// A duration as people write it: `2s`, `150ms`, `1.5s`.
pub(crate) fn human(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        format!("{millis}ms")
    } else if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

fn byte_offset_after_chars(text: &str, n_chars: usize) -> usize {
    match text.char_indices().nth(n_chars) {
        Some((idx, _)) => idx,
        None => text.len(),
    }
}

fn byte_offset_of_last_chars(text: &str, n_chars: usize) -> usize {
    if n_chars == 0 {
        return text.len();
    }
    match text.char_indices().rev().nth(n_chars - 1) {
        Some((idx, _)) => idx,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, cap: usize, expect: Option<(&str, &str)>) {
        let got = cut(text, cap).map(|c| (c.head, c.tail));
        let got = got.as_ref().map(|(h, t)| (h.as_str(), t.as_str()));
        assert_eq!(got, expect);
    }

    #[test]
    fn short_text_is_untouched() {
        check("", 10, None);
        check("ünïcödé", 7, None);
    }

    #[test]
    fn cuts_on_line_boundaries_keeping_more_tail() {
        let text: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
        let c = cut(&text, 1000).unwrap();
        assert!(c.head.ends_with('\n') && c.head.starts_with("line 1\n"));
        assert!(c.tail.starts_with("line ") && c.tail.ends_with("line 2000\n"));
        assert!(c.tail.len() > c.head.len());
        assert_eq!(c.head_lines + c.tail_lines + c.dropped_lines, 2000);
        assert_eq!(c.total_chars, text.len());
    }

    #[test]
    fn a_single_long_line_is_cut_mid_line() {
        let text = "x".repeat(100_000);
        let c = cut(&text, 1000).unwrap();
        assert_eq!(c.dropped_lines, 0);
        assert_eq!(c.head.len() + c.tail.len() + c.dropped_chars, 100_000);
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let text = "é".repeat(5000);
        let c = cut(&text, 1000).unwrap();
        assert_eq!(c.head.chars().count() + c.tail.chars().count() + c.dropped_chars, 5000);
    }

    #[track_caller]
    fn check_human(millis: u64, expect: &str) {
        assert_eq!(human(Duration::from_millis(millis)), expect);
    }

    #[test]
    fn durations_read_naturally() {
        check_human(150, "150ms");
        check_human(2000, "2s");
        check_human(1500, "1.5s");
    }

    #[test]
    fn spill_names_are_safe() {
        let dir = Path::new("/s");
        assert_eq!(spill_path(dir, "call_1"), Path::new("/s/outputs/call_1.txt"));
        assert_eq!(spill_path(dir, "../x"), Path::new("/s/outputs/___x.txt"));
        assert_eq!(spill_path(dir, ""), Path::new("/s/outputs/call.txt"));
    }
}
